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
///
/// Values pass without a lock: a ``DeliveryGate``, open from the start (Combine delivers values
/// that arrive before the subscription), admits them until the end and decides who releases the
/// downstream. The lock guards only the demand state machine.
@usableFromInline
final class DropFirstSubscription<Downstream: Subscriber>: Subscriber, Subscription,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
{
  // Safety: `state` is lock-protected. `held` is read by deliveries inside the gate and written
  // only by whoever the gate lets release it (after it closed, with nothing in flight);
  // `remaining` is touched only by upstream values, which the publisher contract makes serial.
  // The downstream and the upstream are called after unlocking.
  @usableFromInline typealias Input = Downstream.Input
  @usableFromInline typealias Failure = Downstream.Failure

  @usableFromInline let state = Lock(DropFirstState())
  @usableFromInline let gate = DeliveryGate(open: true)
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
    _ = gate.pass({ held?.receive(subscription: self) }, releasing: { held = nil })
  }

  @inlinable func receive(subscription: any Subscription) {
    switch state.withLock({ $0.receivedSubscription(subscription, count: count) }) {
    case .request(let demand): if demand > 0 { subscription.request(demand) }
    case .cancel: subscription.cancel()
    }
  }

  @inlinable func receive(_ input: Input) -> Subscribers.Demand {
    gate.pass(
      {
        guard remaining == 0 else {
          remaining -= 1
          return .none
        }
        return held.unsafelyUnwrapped.receive(input)
      }, releasing: { held = nil }) ?? .none
  }

  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    // Upstream signals are serial, so no value is in flight from upstream here.
    guard let downstream = end().downstream else { return }
    downstream.receive(completion: completion)
  }

  @inlinable func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    state.withLock { $0.requested(demand) }?.request(demand)
  }

  @inlinable func cancel() {
    let (upstream, downstream) = end()
    upstream.cancelIfPresent()
    withExtendedLifetime(downstream) {}
  }

  /// Ends the subscription once: the upstream to cancel, and the downstream when this call is
  /// the one the gate lets release it (`nil` if already ended or a delivery still has it).
  @inlinable func end() -> (upstream: (any Subscription)?, downstream: Downstream?) {
    let (live, upstream, release) = state.withLock { state in
      (state.isLive, state.ended(), gate.close())
    }
    guard live, release else { return (upstream, nil) }
    defer { held = nil }
    return (upstream, held)
  }

  @usableFromInline var description: String { "Drop" }
  /// No children, as in Combine.
  @usableFromInline var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @usableFromInline var playgroundDescription: Any { description }
}
