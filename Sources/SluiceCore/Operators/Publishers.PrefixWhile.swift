extension Publishers {
  /// Republishes values while a predicate holds, then finishes, as Combine's
  /// `prefix(while:)`.
  ///
  /// ![Marble diagram: prefix { $0 < 5 }](prefix-while)
  ///
  /// **Demand**: passed upstream unchanged. **Ordering**: the upstream's. **Cancellation**:
  /// cancels the upstream; so does the first value that fails the predicate (not published),
  /// before `.finished` is sent.
  public struct PrefixWhile<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The condition values are republished while they meet it.
    public let predicate: (Upstream.Output) -> Bool

    /// Creates the publisher over `upstream`, with its `predicate`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, predicate: @escaping (Upstream.Output) -> Bool) {
      self.upstream = upstream
      self.predicate = predicate
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.passing("PrefixWhile", state: (), failure: same) {
            [predicate] (_: inout Void, value: Output) in
            predicate(value) ? .emit(value) : .finish(final: nil)
          }.early(.trapped).mirroringDownstream()))
    }
  }

  /// `prefix(while:)` with a predicate that can throw, as Combine's `tryPrefix(while:)`: an
  /// error cancels the upstream and fails the downstream.
  ///
  /// ![Marble diagram: tryPrefix { $0 == 0 ? throw : $0 < 5 }](tryPrefix)
  ///
  /// **Demand**: passed upstream unchanged. **Ordering**: the upstream's. **Cancellation**:
  /// cancels the upstream; so do the end of the prefix and an error.
  public struct TryPrefixWhile<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = any Error

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The condition values are republished while they meet it.
    public let predicate: (Upstream.Output) throws -> Bool

    /// Creates the publisher over `upstream`, with its `predicate`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, predicate: @escaping (Upstream.Output) throws -> Bool) {
      self.upstream = upstream
      self.predicate = predicate
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.passing("TryPrefixWhile", state: (), failure: anyError) {
            [predicate] (_: inout Void, value: Output) in
            switch attempt({ try predicate(value) }) {
            case .success(true): .emit(value)
            case .success(false): .finish(final: nil)
            case .failure(let error): .fail(error)
            }
          }.early(.trapped).mirroringDownstream()))
    }
  }

  /// Drops values while a predicate holds, then republishes everything, as Combine's
  /// `drop(while:)`.
  ///
  /// ![Marble diagram: drop { $0 < 5 }](drop-while)
  ///
  /// **Demand**: passed upstream; each dropped value asks upstream for one more.
  /// **Ordering**: the upstream's. **Cancellation**: cancels the upstream.
  public struct DropWhile<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The condition values are dropped while they meet it.
    public let predicate: (Upstream.Output) -> Bool

    /// Creates the publisher over `upstream`, with its `predicate`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, predicate: @escaping (Upstream.Output) -> Bool) {
      self.upstream = upstream
      self.predicate = predicate
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.passing("DropWhile", state: true, failure: same) {
            [predicate] (dropping: inout Bool, value: Output) in
            if dropping, predicate(value) { return .drop(requesting: .max(1)) }
            dropping = false
            return .emit(value)
          }))
    }
  }

  /// `drop(while:)` with a predicate that can throw, as Combine's `tryDrop(while:)`: an error
  /// cancels the upstream and fails the downstream.
  ///
  /// ![Marble diagram: tryDrop { $0 == 0 ? throw : $0 < 5 }](tryDrop)
  ///
  /// **Demand**: passed upstream; each dropped value asks upstream for one more.
  /// **Ordering**: the upstream's. **Cancellation**: cancels the upstream; so does an error.
  public struct TryDropWhile<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = any Error

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The condition values are dropped while they meet it.
    public let predicate: (Upstream.Output) throws -> Bool

    /// Creates the publisher over `upstream`, with its `predicate`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, predicate: @escaping (Upstream.Output) throws -> Bool) {
      self.upstream = upstream
      self.predicate = predicate
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.passing("TryDropWhile", state: true, failure: anyError) {
            [predicate] (dropping: inout Bool, value: Output) in
            if dropping {
              switch attempt({ try predicate(value) }) {
              case .success(true): return .drop(requesting: .max(1))
              case .success(false): dropping = false
              case .failure(let error): return .fail(error)
              }
            }
            return .emit(value)
          }))
    }
  }
}

extension Publisher {
  /// Republishes values while `predicate` returns `true`, then finishes (cancelling upstream).
  ///
  /// ![Marble diagram: prefix { $0 < 5 }](prefix-while)
  ///
  /// ```swift
  /// [1, 2, 5, 1].publisher.prefix { $0 < 3 }   // 1, 2
  /// ```
  @inlinable
  public func prefix(
    while predicate: @escaping (Output) -> Bool
  ) -> Publishers.PrefixWhile<Self> {
    Publishers.PrefixWhile(upstream: self, predicate: predicate)
  }

  /// `prefix(while:)` with a predicate that can throw.
  ///
  /// ![Marble diagram: tryPrefix { $0 == 0 ? throw : $0 < 5 }](tryPrefix)
  @inlinable
  public func tryPrefix(
    while predicate: @escaping (Output) throws -> Bool
  ) -> Publishers.TryPrefixWhile<Self> {
    Publishers.TryPrefixWhile(upstream: self, predicate: predicate)
  }

  /// Drops values while `predicate` returns `true`, then republishes everything.
  ///
  /// ![Marble diagram: drop { $0 < 5 }](drop-while)
  ///
  /// ```swift
  /// [1, 2, 5, 1].publisher.drop { $0 < 3 }   // 5, 1
  /// ```
  @inlinable
  public func drop(while predicate: @escaping (Output) -> Bool) -> Publishers.DropWhile<Self> {
    Publishers.DropWhile(upstream: self, predicate: predicate)
  }

  /// `drop(while:)` with a predicate that can throw.
  ///
  /// ![Marble diagram: tryDrop { $0 == 0 ? throw : $0 < 5 }](tryDrop)
  @inlinable
  public func tryDrop(
    while predicate: @escaping (Output) throws -> Bool
  ) -> Publishers.TryDropWhile<Self> {
    Publishers.TryDropWhile(upstream: self, predicate: predicate)
  }
}
