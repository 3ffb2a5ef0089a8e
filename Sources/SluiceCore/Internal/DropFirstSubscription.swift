/// The state of `dropFirst(_:)`'s subscription, as a pure state machine.
///
/// Combine hands this subscription to the downstream as soon as the operator is subscribed,
/// before the upstream's subscription arrives, so requests can come first: they are summed and
/// sent, plus the count to drop, when the upstream subscribes.
///
/// States: `awaitingSubscription(pending)` → `subscribed(upstream)` → `terminal`.
///
/// | event | awaiting | subscribed | terminal |
/// |---|---|---|---|
/// | `receivedSubscription(s)` | subscribed; request pending + count | cancel `s` | cancel `s` |
/// | `requested(n)` | pending += n | request n upstream | ignore |
/// | `completed` | terminal; deliver | terminal; deliver | ignore |
/// | `cancelled` | terminal (the cancel is remembered) | terminal; cancel upstream | ignore |
@usableFromInline
struct DropFirstState {
  @usableFromInline enum Phase {
    case awaitingSubscription(pending: Subscribers.Demand)
    case subscribed(any Subscription)
    case terminal
  }
  @usableFromInline var phase = Phase.awaitingSubscription(pending: .none)

  @inlinable init() {}

  @usableFromInline enum SubscriptionAction {
    case request(Subscribers.Demand)
    case cancel
  }

  @inlinable mutating func receivedSubscription(
    _ subscription: any Subscription, count: Int
  ) -> SubscriptionAction {
    guard case .awaitingSubscription(let pending) = phase else { return .cancel }
    phase = .subscribed(subscription)
    return .request(pending + count)
  }

  @inlinable mutating func requested(_ demand: Subscribers.Demand) -> (any Subscription)? {
    switch phase {
    case .awaitingSubscription(let pending):
      phase = .awaitingSubscription(pending: pending + demand)
      return nil
    case .subscribed(let upstream): return upstream
    case .terminal: return nil
    }
  }

  @inlinable var isLive: Bool {
    if case .terminal = phase { return false }
    return true
  }

  /// Terminal; the upstream to cancel, if subscribed.
  @inlinable mutating func ended() -> (any Subscription)? {
    defer { phase = .terminal }
    if case .subscribed(let upstream) = phase { return upstream }
    return nil
  }
}

/// The subscriber and subscription of `dropFirst(_:)`.
///
/// **Demand**: the downstream's requests go upstream; the first request made once the upstream
/// has subscribed also asks for the `count` values to drop. **Ordering**: the upstream's.
/// **Cancellation**: idempotent and thread-safe; cancels the upstream (or, before it subscribes,
/// the subscription it will send) and releases the downstream. Nothing is delivered after a
/// completion or `cancel()` (Combine keeps forwarding: a deliberate difference).
@usableFromInline
final class DropFirstSubscription<Downstream: Subscriber>: Subscriber, Subscription,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
{
  // Safety: `state` and `held` are touched only inside `state`'s lock; `remaining` only by
  // upstream values, which the publisher contract makes serial. The downstream is called after
  // unlocking.
  @usableFromInline typealias Input = Downstream.Input
  @usableFromInline typealias Failure = Downstream.Failure

  @usableFromInline let state = Lock(DropFirstState())
  @usableFromInline @exclusivity(unchecked) var held: Downstream?
  @usableFromInline let count: Int
  @usableFromInline @exclusivity(unchecked) var remaining: Int

  @inlinable init(downstream: Downstream, count: Int) {
    held = downstream
    self.count = count
    remaining = count
  }

  /// Hands this subscription to the downstream, as Combine does before subscribing upstream.
  @inlinable func start() {
    held?.receive(subscription: self)
  }

  @inlinable func receive(subscription: any Subscription) {
    switch state.withLock({ $0.receivedSubscription(subscription, count: count) }) {
    case .request(let demand): if demand > 0 { subscription.request(demand) }
    case .cancel: subscription.cancel()
    }
  }

  @inlinable func receive(_ input: Input) -> Subscribers.Demand {
    guard let downstream = state.withLock({ $0.isLive ? held : nil }) else { return .none }
    if remaining > 0 {
      remaining -= 1
      return .none
    }
    return downstream.receive(input)
  }

  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    let downstream = state.withLock { state -> Downstream? in
      guard state.isLive else { return nil }
      _ = state.ended()
      defer { held = nil }
      return held
    }
    downstream?.receive(completion: completion)
  }

  @inlinable func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    state.withLock { $0.requested(demand) }?.request(demand)
  }

  @inlinable func cancel() {
    let (upstream, downstream) = state.withLock { state in
      defer { held = nil }
      return (state.ended(), held)
    }
    upstream?.cancel()
    withExtendedLifetime(downstream) {}
  }

  @usableFromInline var description: String { "Drop" }
  /// No children, as in Combine.
  @usableFromInline var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @usableFromInline var playgroundDescription: Any { description }
}
