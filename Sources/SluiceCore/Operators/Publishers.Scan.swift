extension Publishers {
  /// Publishes each new partial result of folding the upstream's values, as Combine's `scan`.
  ///
  /// ![Marble diagram: scan(0, +)](scan)
  ///
  /// **Demand**: the downstream's requests go straight upstream (no subscription of its own, as
  /// in Combine; one result per value). **Ordering**: the upstream's. **Cancellation**: goes
  /// straight upstream.
  public struct Scan<Upstream: Publisher, Output>: Publisher {
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The result the accumulation starts from.
    public let initialResult: Output
    /// The closure that combines the result so far with each value.
    public let nextPartialResult: (Output, Upstream.Output) -> Output

    /// Creates the publisher over `upstream`, with its `initialResult`, `nextPartialResult`, as the
    /// operator method does.
    @inlinable
    public init(
      upstream: Upstream, initialResult: Output,
      nextPartialResult: @escaping (Output, Upstream.Output) -> Output
    ) {
      self.upstream = upstream
      self.initialResult = initialResult
      self.nextPartialResult = nextPartialResult
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: ScanForwarding(
          downstream: subscriber, initial: initialResult, next: nextPartialResult))
    }
  }

  /// `scan` with a closure that can throw, as Combine's `tryScan`: an error cancels the
  /// upstream and fails the downstream.
  ///
  /// ![Marble diagram: tryScan(0) { sum, n in n == 0 ? throw : sum + n }](tryScan)
  ///
  /// **Demand**: passed upstream unchanged. **Ordering**: the upstream's. **Cancellation**:
  /// cancels the upstream; so does an error.
  public struct TryScan<Upstream: Publisher, Output>: Publisher {
    public typealias Failure = any Error

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The result the accumulation starts from.
    public let initialResult: Output
    /// The closure that combines the result so far with each value.
    public let nextPartialResult: (Output, Upstream.Output) throws -> Output

    /// Creates the publisher over `upstream`, with its `initialResult`, `nextPartialResult`, as the
    /// operator method does.
    @inlinable
    public init(
      upstream: Upstream, initialResult: Output,
      nextPartialResult: @escaping (Output, Upstream.Output) throws -> Output
    ) {
      self.upstream = upstream
      self.initialResult = initialResult
      self.nextPartialResult = nextPartialResult
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.passing(
            "TryScan", state: initialResult, failure: anyError
          ) { [nextPartialResult] (result: inout Output, value: Upstream.Output) in
            switch attempt({ try nextPartialResult(result, value) }) {
            case .success(let next):
              result = next
              return .emit(next)
            case .failure(let error):
              return .fail(error)
            }
          }.early(.valuesProcessed).mirror { result, reflection in
            [
              ("downstream", reflection.downstream), ("status", reflection.status),
              ("result", result),
            ]
          }))
    }
  }
}

extension Publisher {
  /// Publishes each partial result of folding the values into `initialResult`.
  ///
  /// ![Marble diagram: scan(0, +)](scan)
  ///
  /// ```swift
  /// [1, 2, 3].publisher.scan(0, +)   // 1, 3, 6
  /// ```
  @inlinable
  public func scan<T>(
    _ initialResult: T, _ nextPartialResult: @escaping (T, Output) -> T
  ) -> Publishers.Scan<Self, T> {
    Publishers.Scan(
      upstream: self, initialResult: initialResult, nextPartialResult: nextPartialResult)
  }

  /// `scan` with a closure that can throw; an error cancels the upstream and fails the
  /// downstream.
  ///
  /// ![Marble diagram: tryScan(0) { sum, n in n == 0 ? throw : sum + n }](tryScan)
  @inlinable
  public func tryScan<T>(
    _ initialResult: T, _ nextPartialResult: @escaping (T, Output) throws -> T
  ) -> Publishers.TryScan<Self, T> {
    Publishers.TryScan(
      upstream: self, initialResult: initialResult, nextPartialResult: nextPartialResult)
  }
}
