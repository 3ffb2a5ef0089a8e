/// The lifecycle of a subscriber at the end of a pipeline (Sink, Assign, a subject's subscriber),
/// as a pure state machine. `Payload` is what the subscriber needs to do its job (closures, an
/// object and key path, a subject); it is released as soon as the subscriber is done.
///
/// States:
/// - `awaitingSubscription(payload)`: created, no subscription yet.
/// - `subscribed(subscription, payload)`: the one subscription it accepted.
/// - `terminal`: completed or cancelled; absorbs every later event.
///
/// Transitions (event → new state, action for the caller to perform after unlocking):
/// | event | awaiting | subscribed | terminal |
/// |---|---|---|---|
/// | `receivedSubscription(s)` | subscribed, request from `s` | same, cancel `s` | same, cancel `s` |
/// | `receivedValue` | same, ignore | same, deliver with payload | same, ignore |
/// | `receivedCompletion` | terminal, complete with payload | terminal, complete | same, ignore |
/// | `cancelled` | terminal | terminal, cancel upstream | same, nothing |
@usableFromInline
struct SubscriberLifecycle<Payload> {
  @usableFromInline enum State {
    case awaitingSubscription(Payload)
    case subscribed(any Subscription, Payload)
    case terminal
  }

  @usableFromInline var state: State

  @inlinable init(_ payload: Payload) {
    state = .awaitingSubscription(payload)
  }

  /// `true` when `subscription` was accepted (request from it); `false` when it must be
  /// cancelled because the subscriber already has one or is done, as Combine does.
  @inlinable mutating func receivedSubscription(_ subscription: any Subscription) -> Bool {
    guard case .awaitingSubscription(let payload) = state else { return false }
    state = .subscribed(subscription, payload)
    return true
  }

  /// The payload to handle a value with, or `nil` when a value is not expected now.
  @inlinable func receivedValue() -> Payload? {
    guard case .subscribed(_, let payload) = state else { return nil }
    return payload
  }

  /// The payload to handle the completion with (released by the caller afterwards), or `nil`
  /// when already terminal.
  @inlinable mutating func receivedCompletion() -> Payload? {
    switch state {
    case .awaitingSubscription(let payload), .subscribed(_, let payload):
      state = .terminal
      return payload
    case .terminal:
      return nil
    }
  }

  /// What to release after unlocking: the upstream to cancel (if any) and the payload.
  /// Idempotent.
  @inlinable mutating func cancelled() -> (upstream: (any Subscription)?, payload: Payload?) {
    switch state {
    case .awaitingSubscription(let payload):
      state = .terminal
      return (nil, payload)
    case .subscribed(let subscription, let payload):
      state = .terminal
      return (subscription, payload)
    case .terminal:
      return (nil, nil)
    }
  }

  /// The payload until the subscriber is terminal.
  @inlinable var payload: Payload? {
    switch state {
    case .awaitingSubscription(let payload), .subscribed(_, let payload): payload
    case .terminal: nil
    }
  }

  /// The subscription while subscribed.
  @inlinable var subscription: (any Subscription)? {
    if case .subscribed(let subscription, _) = state { return subscription }
    return nil
  }
}

/// A thread-safe wrapper of ``SubscriberLifecycle`` for terminal subscribers: it performs the
/// state machine's actions (request, cancel, release) after unlocking.
@usableFromInline
final class LifecycleBox<Payload>: @unchecked Sendable {
  // Safety: all mutable state is inside `lifecycle`'s lock; actions run after unlocking.
  @usableFromInline let lifecycle: Lock<SubscriberLifecycle<Payload>>

  @inlinable init(_ payload: Payload) {
    lifecycle = Lock(SubscriberLifecycle(payload))
  }

  /// Accepts the first subscription and requests `demand` from it; cancels any later one.
  ///
  /// - Returns: whether `subscription` was accepted.
  @inlinable @discardableResult
  func receive(subscription: any Subscription, requesting demand: Subscribers.Demand) -> Bool {
    if lifecycle.withLock({ $0.receivedSubscription(subscription) }) {
      if demand > 0 { subscription.request(demand) }
      return true
    }
    subscription.cancel()
    return false
  }

  /// The payload to handle a value with, while subscribed.
  @inlinable func payloadForValue() -> Payload? {
    lifecycle.withLock { $0.receivedValue() }
  }

  /// The payload to handle the completion with; the box forgets it.
  @inlinable func payloadForCompletion() -> Payload? {
    lifecycle.withLock { $0.receivedCompletion() }
  }

  /// Cancels the upstream and releases the payload, after unlocking. Idempotent.
  @inlinable func cancel() {
    let (upstream, payload) = lifecycle.withLock { $0.cancelled() }
    upstream?.cancel()
    withExtendedLifetime(payload) {}
  }

  /// The payload, until completion or cancellation.
  @inlinable var payload: Payload? {
    lifecycle.withLock { $0.payload }
  }

  /// The current subscription, if subscribed.
  @inlinable var subscription: (any Subscription)? {
    lifecycle.withLock { $0.subscription }
  }
}
