extension Publishers {
  /// Publishes the first value and finishes, cancelling the upstream, as Combine's `first()`.
  ///
  /// ![Marble diagram: first()](first)
  ///
  /// **Demand**: `.unlimited` upstream; the value waits for the downstream's demand.
  /// **Ordering**: at most one value, then `.finished`. **Cancellation**: cancels the upstream;
  /// so does the first value.
  public struct First<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream

    /// Creates the publisher over `upstream`.
    @inlinable
    public init(upstream: Upstream) { self.upstream = upstream }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.picking("First", .firstMatch, failure: same) { _ in .success(true) })
      )
    }
  }

  /// Publishes the first value that satisfies a predicate and finishes, cancelling the upstream,
  /// as Combine's `first(where:)`.
  ///
  /// ![Marble diagram: first { $0 > 5 }](first-where)
  ///
  /// **Demand**: `.unlimited` upstream. **Ordering**: at most one value, then `.finished`.
  /// **Cancellation**: cancels the upstream; so does a match.
  public struct FirstWhere<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream

    /// The condition a value is tested with.
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
          through: ClosureStep.picking("TryFirst", .firstMatch, failure: same) { [predicate] in
            .success(predicate($0))
          }))
    }
  }

  /// `first(where:)` with a predicate that can throw, as Combine's `tryFirst(where:)`.
  ///
  /// ![Marble diagram: tryFirst { $0 == 0 ? throw : $0 > 5 }](tryFirst)
  ///
  /// **Demand**: `.unlimited` upstream. **Ordering**: at most one value, then `.finished`.
  /// **Cancellation**: cancels the upstream; so do a match and an error.
  public struct TryFirstWhere<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = any Error

    /// The publisher this publisher receives values from.
    public let upstream: Upstream

    /// The condition a value is tested with.
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
          through: ClosureStep.picking("TryFirstWhere", .firstMatch, failure: anyError) {
            [predicate] value in attempt { try predicate(value) }
          }))
    }
  }

  /// Publishes the last value when the upstream finishes, as Combine's `last()`.
  ///
  /// ![Marble diagram: last()](last)
  ///
  /// **Demand**: `.unlimited` upstream; the value waits for the downstream's demand.
  /// **Ordering**: at most one value, then `.finished`. **Cancellation**: cancels the upstream.
  public struct Last<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream

    /// Creates the publisher over `upstream`.
    @inlinable
    public init(upstream: Upstream) { self.upstream = upstream }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.picking("Last", .lastMatch, failure: same) { _ in .success(true) }))
    }
  }

  /// Publishes the last value that satisfies a predicate when the upstream finishes, as
  /// Combine's `last(where:)`.
  ///
  /// ![Marble diagram: last { $0 > 5 }](last-where)
  ///
  /// **Demand**: `.unlimited` upstream. **Ordering**: at most one value, then `.finished`.
  /// **Cancellation**: cancels the upstream.
  public struct LastWhere<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream

    /// The condition a value is tested with.
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
          through: ClosureStep.picking("LastWhere", .lastMatch, failure: same) { [predicate] in
            .success(predicate($0))
          }))
    }
  }

  /// `last(where:)` with a predicate that can throw, as Combine's `tryLast(where:)`.
  ///
  /// ![Marble diagram: tryLast { $0 == 0 ? throw : $0 > 5 }](tryLast)
  ///
  /// **Demand**: `.unlimited` upstream. **Ordering**: at most one value, then `.finished`.
  /// **Cancellation**: cancels the upstream; so does an error.
  public struct TryLastWhere<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = any Error

    /// The publisher this publisher receives values from.
    public let upstream: Upstream

    /// The condition a value is tested with.
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
          through: ClosureStep.picking("TryLastWhere", .lastMatch, failure: anyError) {
            [predicate] value in attempt { try predicate(value) }
          }))
    }
  }
}

/// Which matching value `first` and `last` publish.
@usableFromInline
enum Pick {
  /// The first, as soon as it arrives (cancelling the upstream).
  case firstMatch
  /// The last, when the upstream finishes.
  case lastMatch
}

extension ClosureStep where State == Output?, Input == Output {
  /// The step of first and last: publishes the first or last value for which `matches` is
  /// `true` (or fails with its error).
  @inlinable
  static func picking(
    _ name: StaticString, _ pick: Pick, failure: @escaping (UpstreamFailure) -> Failure,
    matches: @escaping (Input) -> Result<Bool, Failure>
  ) -> ClosureStep {
    ClosureStep.reducing(
      name, initial: nil, failure: failure,
      next: { found, value in
        matches(value).map { match in
          if match { found = value }
          return match && pick == .firstMatch
        }
      },
      result: { $0 })
  }
}

extension Publisher {
  /// Publishes the first value, then finishes (cancelling the upstream).
  ///
  /// ![Marble diagram: first()](first)
  ///
  /// ```swift
  /// [7, 8].publisher.first()   // 7
  /// ```
  @inlinable
  public func first() -> Publishers.First<Self> { Publishers.First(upstream: self) }

  /// Publishes the first value that satisfies `predicate`, then finishes.
  ///
  /// ![Marble diagram: first { $0 > 5 }](first-where)
  @inlinable
  public func first(
    where predicate: @escaping (Output) -> Bool
  ) -> Publishers.FirstWhere<Self> {
    Publishers.FirstWhere(upstream: self, predicate: predicate)
  }

  /// `first(where:)` with a predicate that can throw.
  ///
  /// ![Marble diagram: tryFirst { $0 == 0 ? throw : $0 > 5 }](tryFirst)
  @inlinable
  public func tryFirst(
    where predicate: @escaping (Output) throws -> Bool
  ) -> Publishers.TryFirstWhere<Self> {
    Publishers.TryFirstWhere(upstream: self, predicate: predicate)
  }

  /// Publishes the last value when this publisher finishes.
  ///
  /// ![Marble diagram: last()](last)
  ///
  /// ```swift
  /// [7, 8].publisher.last()   // 8
  /// ```
  @inlinable
  public func last() -> Publishers.Last<Self> { Publishers.Last(upstream: self) }

  /// Publishes the last value that satisfies `predicate` when this publisher finishes.
  ///
  /// ![Marble diagram: last { $0 > 5 }](last-where)
  @inlinable
  public func last(where predicate: @escaping (Output) -> Bool) -> Publishers.LastWhere<Self> {
    Publishers.LastWhere(upstream: self, predicate: predicate)
  }

  /// `last(where:)` with a predicate that can throw.
  ///
  /// ![Marble diagram: tryLast { $0 == 0 ? throw : $0 > 5 }](tryLast)
  @inlinable
  public func tryLast(
    where predicate: @escaping (Output) throws -> Bool
  ) -> Publishers.TryLastWhere<Self> {
    Publishers.TryLastWhere(upstream: self, predicate: predicate)
  }
}
