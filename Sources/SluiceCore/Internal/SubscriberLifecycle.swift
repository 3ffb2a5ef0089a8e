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
/// | `receivedImmediateDelivery` | subscribed (no upstream), deliver | same, refuse | same, refuse |
/// | `receivedValue` | same, ignore (or deliver, when asked to) | same, deliver with payload | same, ignore |
/// | `receivedCompletion` | terminal, complete with payload | terminal, complete | same, ignore |
/// | `cancelled` | terminal | terminal, cancel upstream | same, nothing |
@usableFromInline
struct SubscriberLifecycle<Payload> {
  // Stored as separate fields rather than one enum with payloads, so that reading the payload
  // for a value copies (retains) only the payload, not the subscription with it.
  @usableFromInline enum Phase { case awaitingSubscription, subscribed, terminal }

  @usableFromInline var phase = Phase.awaitingSubscription
  /// Set while `subscribed`.
  @usableFromInline var upstream: (any Subscription)?
  /// Set until `terminal`.
  @usableFromInline var heldPayload: Payload?

  @inlinable init(_ payload: consuming Payload) {
    heldPayload = payload
  }

  /// `true` when `subscription` was accepted (request from it); `false` when it must be
  /// cancelled because the subscriber already has one or is done, as Combine does.
  @inlinable mutating func receivedSubscription(_ subscription: any Subscription) -> Bool {
    guard phase == .awaitingSubscription else { return false }
    phase = .subscribed
    upstream = subscription
    return true
  }

  /// Like ``receivedSubscription(_:)`` for a publisher that delivers at once and has no
  /// subscription object to give (a single value to a sink): `true` if the subscriber was
  /// awaiting its subscription, and is now subscribed with no upstream to cancel.
  @inlinable mutating func receivedImmediateDelivery() -> Bool {
    guard phase == .awaitingSubscription else { return false }
    phase = .subscribed
    return true
  }

  /// The payload to handle a value with, or `nil` when a value is not expected now
  /// (`beforeSubscription`: a value before the subscription is handled too, as some of
  /// Combine's subscribers do).
  @inlinable func receivedValue(beforeSubscription: Bool = false) -> Payload? {
    switch phase {
    case .subscribed: heldPayload
    case .awaitingSubscription: beforeSubscription ? heldPayload : nil
    case .terminal: nil
    }
  }

  /// The payload to handle the completion with (released by the caller afterwards), or `nil`
  /// when already terminal. The upstream is forgotten without being cancelled (it completed).
  @inlinable mutating func receivedCompletion(beforeSubscription: Bool = true) -> (
    payload: Payload?, upstream: (any Subscription)?
  ) {
    guard phase != .terminal else { return (nil, nil) }
    if !beforeSubscription && phase == .awaitingSubscription { return (nil, nil) }
    phase = .terminal
    return (heldPayload.take(), upstream.take())
  }

  /// What to release after unlocking: the upstream to cancel (if any) and the payload.
  /// Idempotent.
  @inlinable mutating func cancelled() -> (upstream: (any Subscription)?, payload: Payload?) {
    guard phase != .terminal else { return (nil, nil) }
    phase = .terminal
    return (upstream.take(), heldPayload.take())
  }

  /// The payload until the subscriber is terminal.
  @inlinable var payload: Payload? { heldPayload }

  /// The subscription while subscribed.
  @inlinable var subscription: (any Subscription)? { upstream }
}

/// A thread-safe wrapper of ``SubscriberLifecycle`` for terminal subscribers: it performs the
/// state machine's actions (request, cancel, release) after unlocking.
///
/// A non-copyable struct, stored inline in the subscriber: no allocation of its own.
@usableFromInline
struct LifecycleBox<Payload>: ~Copyable {
  // All mutable state is inside `lifecycle`'s lock; actions run after unlocking.
  @usableFromInline let lifecycle: Lock<SubscriberLifecycle<Payload>>

  @inlinable init(_ payload: consuming Payload) {
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

  /// Accepts a delivery without a subscription object (see
  /// ``SubscriberLifecycle/receivedImmediateDelivery()``): whether the subscriber was awaiting
  /// its subscription.
  @inlinable func acceptImmediateDelivery() -> Bool {
    lifecycle.withLock { $0.receivedImmediateDelivery() }
  }

  /// The payload to handle a value with, while subscribed (and before, when
  /// `beforeSubscription`).
  @inlinable func payloadForValue(beforeSubscription: Bool = false) -> Payload? {
    lifecycle.withLock { $0.receivedValue(beforeSubscription: beforeSubscription) }
  }

  /// What `project` reads from the payload in place, while subscribed: for a payload that is
  /// costly to copy (one holding a weak reference, whose copy and destruction are runtime
  /// calls), when a value needs only part of it. `project` gets the optional itself (`nil`
  /// once released) and should read stored properties through optional chaining: a test such
  /// as `payload != nil`, or a computed property of the payload, copies it.
  @inlinable func projectPayloadForValue<Result>(
    _ project: (inout Payload?) -> Result?
  ) -> Result? {
    lifecycle.withLock { state in
      guard state.phase == .subscribed else { return nil }
      return project(&state.heldPayload)
    }
  }

  /// The payload to handle the completion with; the box forgets it. `beforeSubscription`
  /// false: a completion before the subscription is ignored (and the box stays as it was).
  @inlinable func payloadForCompletion(beforeSubscription: Bool = true) -> Payload? {
    let (payload, upstream) = lifecycle.withLock {
      $0.receivedCompletion(beforeSubscription: beforeSubscription)
    }
    withExtendedLifetime(upstream) {}  // released after unlocking
    return payload
  }

  /// Cancels the upstream and releases the payload, after unlocking. Idempotent.
  @inlinable func cancel() { cancel(whenLive: {}) }

  /// Cancels as ``cancel()`` does, running `hook` first (after unlocking, before the upstream
  /// is cancelled) if this call is the one that ended the lifecycle.
  @inlinable func cancel(whenLive hook: () -> Void) {
    let (upstream, payload) = lifecycle.withLock { $0.cancelled() }
    if payload != nil { hook() }
    upstream.cancelIfPresent()
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
