extension Publishers {
  /// Folds every value into an accumulator and publishes the result when the upstream
  /// finishes, as Combine's `reduce`.
  ///
  /// ![Marble diagram: reduce(0, +)](reduce)
  ///
  /// **Demand**: `.unlimited` upstream; the result waits for the downstream's demand.
  /// **Ordering**: one value, then `.finished`. **Cancellation**: cancels the upstream and drops
  /// the accumulator. A failure passes on.
  public struct Reduce<Upstream: Publisher, Output>: Publisher {
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The result the accumulation starts from.
    public let initial: Output
    /// The closure that combines the result so far with each value.
    public let nextPartialResult: (Output, Upstream.Output) -> Output

    /// Creates the publisher over `upstream`, with its `initial`, `nextPartialResult`, as the
    /// operator method does.
    @inlinable
    public init(
      upstream: Upstream, initial: Output,
      nextPartialResult: @escaping (Output, Upstream.Output) -> Output
    ) {
      self.upstream = upstream
      self.initial = initial
      self.nextPartialResult = nextPartialResult
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.reducing(
            "Reduce", initial: initial, failure: same,
            next: { [nextPartialResult] (result: inout Output, value: Upstream.Output) in
              result = nextPartialResult(result, value)
              return .success(false)
            },
            result: { $0 })))
    }
  }

  /// `reduce` with a closure that can throw, as Combine's `tryReduce`: an error cancels the
  /// upstream and fails the downstream.
  ///
  /// ![Marble diagram: tryReduce(0) { sum, n in n == 0 ? throw : sum + n }](tryReduce)
  ///
  /// **Demand**: `.unlimited` upstream. **Ordering**: one value, then `.finished`.
  /// **Cancellation**: cancels the upstream; so does an error.
  public struct TryReduce<Upstream: Publisher, Output>: Publisher {
    public typealias Failure = any Error

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The result the accumulation starts from.
    public let initial: Output
    /// The closure that combines the result so far with each value.
    public let nextPartialResult: (Output, Upstream.Output) throws -> Output

    /// Creates the publisher over `upstream`, with its `initial`, `nextPartialResult`, as the
    /// operator method does.
    @inlinable
    public init(
      upstream: Upstream, initial: Output,
      nextPartialResult: @escaping (Output, Upstream.Output) throws -> Output
    ) {
      self.upstream = upstream
      self.initial = initial
      self.nextPartialResult = nextPartialResult
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.reducing(
            "TryReduce", initial: initial, failure: anyError,
            next: { [nextPartialResult] (result: inout Output, value: Upstream.Output) in
              attempt { try nextPartialResult(result, value) }.map { next in
                result = next
                return false
              }
            },
            result: { $0 })))
    }
  }

  /// Publishes how many values the upstream published, when it finishes, as Combine's
  /// `count()`.
  ///
  /// ![Marble diagram: count()](count)
  ///
  /// **Demand**: `.unlimited` upstream; the count waits for the downstream's demand.
  /// **Ordering**: one value, then `.finished`. **Cancellation**: cancels the upstream.
  public struct Count<Upstream: Publisher>: Publisher {
    public typealias Output = Int
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
          through: ClosureStep.reducing(
            "Count", initial: 0, failure: same,
            next: { (count: inout Int, _: Upstream.Output) in
              count += 1
              return .success(false)
            },
            result: { $0 })))
    }
  }
}

extension Publisher {
  /// Folds every value into `initialResult` and publishes the result when this publisher
  /// finishes.
  ///
  /// ![Marble diagram: reduce(0, +)](reduce)
  ///
  /// ```swift
  /// (1...4).publisher.reduce(0, +)   // 10
  /// ```
  @inlinable
  public func reduce<T>(
    _ initialResult: T, _ nextPartialResult: @escaping (T, Output) -> T
  ) -> Publishers.Reduce<Self, T> {
    Publishers.Reduce(upstream: self, initial: initialResult, nextPartialResult: nextPartialResult)
  }

  /// `reduce` with a closure that can throw; an error cancels the upstream and fails the
  /// downstream.
  ///
  /// ![Marble diagram: tryReduce(0) { sum, n in n == 0 ? throw : sum + n }](tryReduce)
  @inlinable
  public func tryReduce<T>(
    _ initialResult: T, _ nextPartialResult: @escaping (T, Output) throws -> T
  ) -> Publishers.TryReduce<Self, T> {
    Publishers.TryReduce(
      upstream: self, initial: initialResult, nextPartialResult: nextPartialResult)
  }

  /// Publishes how many values this publisher published, when it finishes.
  ///
  /// ![Marble diagram: count()](count)
  @inlinable
  public func count() -> Publishers.Count<Self> {
    Publishers.Count(upstream: self)
  }
}
