extension Publishers {
  /// Collects every value into one array, published when the upstream finishes, as Combine's
  /// `collect()`.
  ///
  /// ![Marble diagram: collect()](collect)
  ///
  /// **Demand**: `.unlimited` upstream; the array waits for the downstream's demand.
  /// **Ordering**: the upstream's, in the array. **Cancellation**: cancels the upstream and drops
  /// what was collected. A failure passes on and drops the collected values.
  public struct Collect<Upstream: Publisher>: Publisher {
    public typealias Output = [Upstream.Output]
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
            "Collect", initial: [Upstream.Output](), failure: same,
            next: { (values: inout [Upstream.Output], value: Upstream.Output) in
              values.append(value)
              return .success(false)
            },
            result: { $0 }
          ).mirror { values, _ in [("count", values.count)] }))
    }
  }

  /// Collects values into arrays of `count`, as Combine's `collect(_:)`; the last array may be
  /// shorter.
  ///
  /// ![Marble diagram: collect(2)](collect-count)
  ///
  /// **Demand**: each array the downstream asks for asks upstream for `count` values.
  /// **Ordering**: the upstream's. **Cancellation**: cancels the upstream. A failure passes on
  /// and drops a partial array.
  public struct CollectByCount<Upstream: Publisher>: Publisher {
    public typealias Output = [Upstream.Output]
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The most values collected into one array.
    public let count: Int

    /// Traps unless `count` is at least 1.
    @inlinable
    public init(upstream: Upstream, count: Int) {
      if count < 1 { Violation.nonPositiveCount(count, operator: "collect(_:)") }
      self.upstream = upstream
      self.count = count
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let count = self.count
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep(
            "CollectByCount", demand: .scaled(by: count), countsDeliveries: true,
            state: [Upstream.Output](),
            onValue: { (batch: inout [Upstream.Output], value: Upstream.Output) in
              batch.append(value)
              guard batch.count == count else { return .drop(requesting: .none) }
              defer { batch = [] }
              return .emit(batch)
            },
            onCompletion: { batch, completion in
              if case .finished = completion, !batch.isEmpty {
                return .complete(final: batch, .finished)
              }
              return .complete(final: nil, completion)
            }
          ).early(.processed).mirror { batch, reflection in
            [
              ("downstream", reflection.downstream),
              ("upstreamSubscription", reflection.upstream), ("buffer", batch), ("count", count),
            ]
          }))
    }
  }

  /// Ignores every value and passes the completion on, as Combine's `ignoreOutput()`.
  ///
  /// ![Marble diagram: ignoreOutput()](ignoreOutput)
  ///
  /// **Demand**: `.unlimited` upstream, requested on the upstream's subscription right after
  /// handing it to the downstream (no subscription of its own, as in Combine). **Ordering**:
  /// only the completion. **Cancellation**: goes straight upstream.
  public struct IgnoreOutput<Upstream: Publisher>: Publisher {
    public typealias Output = Never
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream

    /// Creates the publisher over `upstream`.
    @inlinable
    public init(upstream: Upstream) { self.upstream = upstream }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(subscriber: IgnoringForwarding<Upstream.Output, S>(downstream: subscriber))
    }
  }
}

extension Publisher {
  /// Collects every value into one array, published when this publisher finishes.
  ///
  /// ![Marble diagram: collect()](collect)
  ///
  /// ```swift
  /// (1...3).publisher.collect()   // [1, 2, 3]
  /// ```
  @inlinable
  public func collect() -> Publishers.Collect<Self> {
    Publishers.Collect(upstream: self)
  }

  /// Collects values into arrays of `count`; the last may be shorter.
  ///
  /// ![Marble diagram: collect(2)](collect-count)
  ///
  /// ```swift
  /// (1...5).publisher.collect(2)   // [1, 2], [3, 4], [5]
  /// ```
  @inlinable
  public func collect(_ count: Int) -> Publishers.CollectByCount<Self> {
    Publishers.CollectByCount(upstream: self, count: count)
  }

  /// Ignores every value; only the completion comes through.
  ///
  /// ![Marble diagram: ignoreOutput()](ignoreOutput)
  @inlinable
  public func ignoreOutput() -> Publishers.IgnoreOutput<Self> {
    Publishers.IgnoreOutput(upstream: self)
  }
}
