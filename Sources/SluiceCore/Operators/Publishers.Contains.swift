extension Publishers {
  /// Publishes `true` as soon as the upstream publishes `output` (then cancels it), or `false`
  /// when it finishes without, as Combine's `contains(_:)`.
  ///
  /// ![Marble diagram: contains("b")](contains)
  ///
  /// **Demand**: `.unlimited` upstream; the answer waits for the downstream's demand.
  /// **Ordering**: one value, then `.finished`. **Cancellation**: cancels the upstream.
  public struct Contains<Upstream: Publisher>: Publisher where Upstream.Output: Equatable {
    public typealias Output = Bool
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The value looked for.
    public let output: Upstream.Output

    /// Creates the publisher over `upstream`, with its `output`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, output: Upstream.Output) {
      self.upstream = upstream
      self.output = output
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let output = self.output
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.searching("Contains", failure: same) {
            .success($0 == output)
          }))
    }
  }

  /// `contains` by a predicate, as Combine's `contains(where:)`.
  ///
  /// ![Marble diagram: contains { $0 > 5 }](contains-where)
  ///
  /// **Demand**: `.unlimited` upstream. **Ordering**: one value, then `.finished`.
  /// **Cancellation**: cancels the upstream; so does a match.
  public struct ContainsWhere<Upstream: Publisher>: Publisher {
    public typealias Output = Bool
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
          through: ClosureStep.searching("ContainsWhere", failure: same) { [predicate] in
            .success(predicate($0))
          }))
    }
  }

  /// `contains(where:)` with a predicate that can throw, as Combine's `tryContains(where:)`.
  ///
  /// ![Marble diagram: tryContains { $0 == 0 ? throw : $0 > 5 }](tryContains)
  ///
  /// **Demand**: `.unlimited` upstream. **Ordering**: one value, then `.finished`.
  /// **Cancellation**: cancels the upstream; so do a match and an error.
  public struct TryContainsWhere<Upstream: Publisher>: Publisher {
    public typealias Output = Bool
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
          through: ClosureStep.searching("TryContainsWhere", failure: anyError) {
            [predicate] value in attempt { try predicate(value) }
          }))
    }
  }

  /// Publishes `false` as soon as a value fails the predicate (then cancels the upstream), or
  /// `true` when the upstream finishes, as Combine's `allSatisfy`.
  ///
  /// ![Marble diagram: allSatisfy { $0 < 5 }](allSatisfy)
  ///
  /// **Demand**: `.unlimited` upstream. **Ordering**: one value, then `.finished`.
  /// **Cancellation**: cancels the upstream; so does a value failing the predicate.
  public struct AllSatisfy<Upstream: Publisher>: Publisher {
    public typealias Output = Bool
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The condition every value must meet.
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
          through: ClosureStep.searching("AllSatisfy", answerWhenFound: false, failure: same) {
            [predicate] in .success(!predicate($0))
          }))
    }
  }

  /// `allSatisfy` with a predicate that can throw, as Combine's `tryAllSatisfy`.
  ///
  /// ![Marble diagram: tryAllSatisfy { $0 == 0 ? throw : $0 < 5 }](tryAllSatisfy)
  ///
  /// **Demand**: `.unlimited` upstream. **Ordering**: one value, then `.finished`.
  /// **Cancellation**: cancels the upstream; so do a failing value and an error.
  public struct TryAllSatisfy<Upstream: Publisher>: Publisher {
    public typealias Output = Bool
    public typealias Failure = any Error

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The condition every value must meet.
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
          through: ClosureStep.searching("TryAllSatisfy", answerWhenFound: false, failure: anyError)
          {
            [predicate] value in attempt { try !predicate(value) }
          }))
    }
  }
}

extension ClosureStep where State == Bool, Output == Bool {
  /// The step of contains and allSatisfy: publishes `answerWhenFound` at the first value for
  /// which `found` is `true` (cancelling the upstream), or its negation when the upstream
  /// finishes first.
  @inlinable
  static func searching(
    _ name: StaticString, answerWhenFound: Bool = true,
    failure: @escaping (UpstreamFailure) -> Failure,
    found: @escaping (Input) -> Result<Bool, Failure>
  ) -> ClosureStep {
    ClosureStep.reducing(
      name, initial: false, failure: failure,
      next: { isFound, value in
        found(value).map { match in
          isFound = match
          return match
        }
      },
      result: { isFound in isFound == answerWhenFound })
  }
}

extension Publisher where Output: Equatable {
  /// Publishes whether this publisher publishes `output`, as soon as it is known.
  ///
  /// ![Marble diagram: contains("b")](contains)
  ///
  /// ```swift
  /// [1, 2, 3].publisher.contains(2)   // true
  /// ```
  @inlinable
  public func contains(_ output: Output) -> Publishers.Contains<Self> {
    Publishers.Contains(upstream: self, output: output)
  }
}

extension Publisher {
  /// Publishes whether any value satisfies `predicate`, as soon as it is known.
  ///
  /// ![Marble diagram: contains { $0 > 5 }](contains-where)
  @inlinable
  public func contains(
    where predicate: @escaping (Output) -> Bool
  ) -> Publishers.ContainsWhere<Self> {
    Publishers.ContainsWhere(upstream: self, predicate: predicate)
  }

  /// `contains(where:)` with a predicate that can throw.
  ///
  /// ![Marble diagram: tryContains { $0 == 0 ? throw : $0 > 5 }](tryContains)
  @inlinable
  public func tryContains(
    where predicate: @escaping (Output) throws -> Bool
  ) -> Publishers.TryContainsWhere<Self> {
    Publishers.TryContainsWhere(upstream: self, predicate: predicate)
  }

  /// Publishes whether every value satisfies `predicate`, as soon as it is known.
  ///
  /// ![Marble diagram: allSatisfy { $0 < 5 }](allSatisfy)
  ///
  /// ```swift
  /// [2, 4, 5].publisher.allSatisfy { $0.isMultiple(of: 2) }   // false
  /// ```
  @inlinable
  public func allSatisfy(
    _ predicate: @escaping (Output) -> Bool
  ) -> Publishers.AllSatisfy<Self> {
    Publishers.AllSatisfy(upstream: self, predicate: predicate)
  }

  /// `allSatisfy` with a predicate that can throw.
  ///
  /// ![Marble diagram: tryAllSatisfy { $0 == 0 ? throw : $0 < 5 }](tryAllSatisfy)
  @inlinable
  public func tryAllSatisfy(
    _ predicate: @escaping (Output) throws -> Bool
  ) -> Publishers.TryAllSatisfy<Self> {
    Publishers.TryAllSatisfy(upstream: self, predicate: predicate)
  }
}
