extension Publishers {
  /// Publishes only values that differ from the previously published one, as Combine's
  /// `removeDuplicates`.
  ///
  /// ![Marble diagram: removeDuplicates()](removeDuplicates)
  ///
  /// **Demand**: passed upstream; each duplicate asks upstream for one more. **Ordering**: the
  /// upstream's. **Cancellation**: cancels the upstream.
  public struct RemoveDuplicates<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The closure that says whether a value equals the one before it.
    public let predicate: (Output, Output) -> Bool

    /// Creates the publisher over `upstream`, with its `predicate`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, predicate: @escaping (Output, Output) -> Bool) {
      self.upstream = upstream
      self.predicate = predicate
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.passing(
            "RemoveDuplicates", state: Output?.none, failure: same
          ) { [predicate] (previous: inout Output?, value: Output) in
            if let last = previous, predicate(last, value) { return .drop(requesting: .max(1)) }
            previous = value
            return .emit(value)
          }.early(.trapped).mirror { last, reflection in
            [("downstream", reflection.downstream), ("last", last as Any)]
          }))
    }
  }

  /// `removeDuplicates(by:)` with a predicate that can throw, as Combine's
  /// `tryRemoveDuplicates(by:)`: an error cancels the upstream and fails the downstream.
  ///
  /// ![Marble diagram: tryRemoveDuplicates { $1 == 0 ? throw : $0 == $1 }](tryRemoveDuplicates)
  ///
  /// **Demand**: passed upstream; each duplicate asks upstream for one more. **Ordering**: the
  /// upstream's. **Cancellation**: cancels the upstream; so does an error.
  public struct TryRemoveDuplicates<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = any Error

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The closure that says whether a value equals the one before it.
    public let predicate: (Output, Output) throws -> Bool

    /// Creates the publisher over `upstream`, with its `predicate`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, predicate: @escaping (Output, Output) throws -> Bool) {
      self.upstream = upstream
      self.predicate = predicate
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.passing(
            "TryRemoveDuplicates", state: Output?.none, failure: anyError
          ) { [predicate] (previous: inout Output?, value: Output) in
            if let last = previous {
              switch attempt({ try predicate(last, value) }) {
              case .success(true): return .drop(requesting: .max(1))
              case .success(false): break
              case .failure(let error): return .fail(error)
              }
            }
            previous = value
            return .emit(value)
          }.early(.trapped).mirror { last, reflection in
            [("downstream", reflection.downstream), ("last", last as Any)]
          }))
    }
  }
}

extension Publisher where Output: Equatable {
  /// Publishes only values that differ from the previously published one.
  ///
  /// ![Marble diagram: removeDuplicates()](removeDuplicates)
  ///
  /// ```swift
  /// [1, 1, 2, 2, 1].publisher.removeDuplicates()   // 1, 2, 1
  /// ```
  @inlinable
  public func removeDuplicates() -> Publishers.RemoveDuplicates<Self> {
    Publishers.RemoveDuplicates(upstream: self, predicate: ==)
  }
}

extension Publisher {
  /// Publishes only values for which `predicate(previous, value)` is `false`, `previous` being
  /// the last published value.
  ///
  /// ![Marble diagram: removeDuplicates { abs($0 - $1) < 2 }](removeDuplicates-by)
  @inlinable
  public func removeDuplicates(
    by predicate: @escaping (Output, Output) -> Bool
  ) -> Publishers.RemoveDuplicates<Self> {
    Publishers.RemoveDuplicates(upstream: self, predicate: predicate)
  }

  /// `removeDuplicates(by:)` with a predicate that can throw; an error cancels the upstream and
  /// fails the downstream.
  ///
  /// ![Marble diagram: tryRemoveDuplicates { $1 == 0 ? throw : $0 == $1 }](tryRemoveDuplicates)
  @inlinable
  public func tryRemoveDuplicates(
    by predicate: @escaping (Output, Output) throws -> Bool
  ) -> Publishers.TryRemoveDuplicates<Self> {
    Publishers.TryRemoveDuplicates(upstream: self, predicate: predicate)
  }
}
