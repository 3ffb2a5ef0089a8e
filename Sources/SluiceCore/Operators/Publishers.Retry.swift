extension Publishers {
  /// Resubscribes to the upstream when it fails, up to a number of times, as Combine's
  /// `retry(_:)`.
  ///
  /// ![Marble diagram: input.retry(1)](retry)
  ///
  /// **Demand**: what the downstream requested and has not received carries over to each new
  /// subscription; demand the downstream returns from `receive(_:)` is sent upstream as a
  /// `request` (as in Combine, `.none` is returned). **Ordering**: values of each attempt in
  /// order; the last attempt's completion. **Cancellation**: cancels the current attempt; no
  /// more attempts start. Resubscribing is a loop, not a recursion: a synchronously failing
  /// upstream retried 100,000 times uses constant stack. A negative count, like `nil`, retries
  /// without limit. **Violations** (trap): a value before the first upstream subscription or
  /// beyond the outstanding demand.
  public struct Retry<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// How many times to resubscribe; `nil` (or a negative count) for no limit.
    public let retries: Int?

    /// Creates the publisher over `upstream`, with its `retries`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, retries: Int?) {
      self.upstream = upstream
      self.retries = retries
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      RetrySubscription(upstream: upstream, retries: retries, downstream: subscriber).start()
    }
  }
}

@usableFromInline
final class RetrySubscription<Upstream: Publisher, Downstream: Subscriber>: Subscriber,
  Subscription, CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
where Upstream.Output == Downstream.Input, Upstream.Failure == Downstream.Failure {
  // Safety: mutable state is in `state`'s lock (`retriesLeft` too), and `held` is touched only
  // inside `state.withLock`; the downstream and upstreams are called after unlocking.
  @usableFromInline typealias Input = Upstream.Output
  @usableFromInline typealias Failure = Upstream.Failure

  @usableFromInline let upstream: Upstream
  /// The downstream until the subscription ends (guarded by `state`'s lock).
  @usableFromInline @exclusivity(unchecked) var held: Downstream?
  @usableFromInline let state: Lock<(relay: RelayState, retriesLeft: Int?)>

  @inlinable init(upstream: Upstream, retries: Int?, downstream: Downstream) {
    self.upstream = upstream
    held = downstream
    state = Lock((RelayState(), retries.flatMap { $0 < 0 ? nil : $0 }))
  }

  @inlinable func start() { subscribeLoop() }

  @inlinable func subscribeLoop() {
    while state.withLock({ $0.relay.beginSubscribing() }) {
      upstream.receive(subscriber: self)
      if !state.withLock({ $0.relay.endSubscribing() }) { return }
    }
  }

  @inlinable func receive(subscription: any Subscription) {
    switch state.withLock({ $0.relay.attached(subscription) }) {
    case .handDownstream: state.withLock { _ in held }?.receive(subscription: self)
    case .request(let demand): if demand > 0 { subscription.request(demand) }
    case .cancel: subscription.cancel()
    }
  }

  @inlinable func receive(_ input: Input) -> Subscribers.Demand {
    let (delivery, downstream) = state.withLock { state in
      let delivery = state.relay.delivering(betweenUpstreams: true)
      return (delivery, delivery == .deliver ? held : nil)
    }
    guard delivery.admits(operator: description), let downstream else { return .none }
    let more = downstream.receive(input)
    if more > 0 { state.withLock { $0.relay.delivered(more: more) }?.request(more) }
    return .none
  }

  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    let action = state.withLock { state -> RelayState.CompletionAction in
      if case .terminal = state.relay.phase { return .none }
      let retry: Bool
      if case .failure = completion, state.retriesLeft.map({ $0 > 0 }) ?? true {
        state.retriesLeft = state.retriesLeft.map { $0 - 1 }
        retry = true
      } else {
        retry = false
      }
      // As in Combine, a completion with no upstream attached (before the first subscription,
      // or from the next upstream before its subscription) counts as that upstream's.
      return state.relay.completed(moveOn: retry, acceptingIdle: true)
    }
    switch action {
    case .resubscribe: subscribeLoop()
    case .end: takeDownstream()?.receive(completion: completion)
    case .none: break
    }
  }

  @inlinable func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    state.withLock { $0.relay.requested(demand) }?.request(demand)
  }

  @inlinable func cancel() {
    let (upstream, downstream) = state.withLock { state in
      defer { held = nil }
      return (state.relay.cancelled(), held)
    }
    upstream?.cancel()
    withExtendedLifetime(downstream) {}
  }

  /// The downstream, forgotten: for the completion.
  @inlinable func takeDownstream() -> Downstream? {
    state.withLock { _ in
      defer { held = nil }
      return held
    }
  }

  @usableFromInline var description: String { "Retry" }
  @usableFromInline var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @usableFromInline var playgroundDescription: Any { description }
}

extension Publisher {
  /// Resubscribes up to `retries` times when this publisher fails; the last failure passes on.
  ///
  /// ![Marble diagram: input.retry(1)](retry)
  ///
  /// ```swift
  /// flakyRequest.retry(3)
  /// ```
  @inlinable
  public func retry(_ retries: Int) -> Publishers.Retry<Self> {
    Publishers.Retry(upstream: self, retries: retries)
  }
}
