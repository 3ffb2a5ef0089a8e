/// The state of a publisher → async-consumer bridge, as a pure state machine.
///
/// States:
/// - `awaitingSubscription`: subscribed to the publisher, no subscription received yet;
/// - `subscribed(s)`: receiving values;
/// - `finished(c)`: the publisher completed; buffered values are still handed out, then `c`;
/// - `terminal`: the consumer has seen the end, or the bridge was cancelled.
///
/// Transitions (event → change, action performed by ``ValuesBridge`` after unlocking):
/// | event | awaiting / subscribed | finished | terminal |
/// |---|---|---|---|
/// | `receivedSubscription(s)` | subscribed; request the policy's initial demand (demandOne: what waiters asked for meanwhile, summed) | cancel `s` | cancel `s` |
/// | `receivedValue(v)` | to the oldest waiting consumer, else into the buffer by policy (an evicted oldest value is released after unlocking) | ignore | ignore |
/// | `receivedCompletion(c)` | waiters: the first gets `c`, the others the end; terminal. None: finished | ignore | ignore |
/// | `consumed` (fast path) | buffered value (maybe top up demand) | buffered value, else end, terminal | end |
/// | `waiting(k)` | queue `k` behind earlier waiters (demandOne: request 1, or add 1 to the pending request) | as `consumed`, resuming `k` | resume `k` with end |
/// | `cancelled` | terminal; cancel upstream; end every waiting consumer | terminal | nothing |
///
/// Several tasks may wait on one iterator at once (as Combine allows, through a shared
/// reference): they queue in FIFO order and each is resumed exactly once.
@usableFromInline
struct ValuesState<Output, Failure: Error> {
  /// What a waiting consumer is resumed with.
  @usableFromInline enum Next {
    case value(Output)
    case end
    case failure(Failure)
  }

  @usableFromInline typealias Waiter = UnsafeContinuation<UncheckedSendable<Next>, Never>

  @usableFromInline enum Phase {
    case awaitingSubscription
    case subscribed(any Subscription)
    case finished(Subscribers.Completion<Failure>)
    case terminal
  }

  @usableFromInline var phase = Phase.awaitingSubscription
  @usableFromInline let policy: AsyncBufferingPolicy.Kind
  @usableFromInline var buffer = RingBuffer<Output>()
  /// Consumers waiting for a value, oldest first.
  @usableFromInline var waiters = RingBuffer<Waiter>()
  /// demandOne: what waiters asked for before the subscription arrived.
  @usableFromInline var pendingDemand = Subscribers.Demand.none
  /// `prefetch` only: values requested and not yet received.
  @usableFromInline var outstanding = 0

  @inlinable init(policy: AsyncBufferingPolicy) {
    self.policy = policy.kind
  }

  @usableFromInline var subscription: (any Subscription)? {
    if case .subscribed(let subscription) = phase { return subscription }
    return nil
  }

  // MARK: Upstream events

  @usableFromInline enum SubscriptionAction {
    case request(any Subscription, Subscribers.Demand)
    case cancel(any Subscription)
    case none
  }

  @inlinable mutating func receivedSubscription(_ subscription: any Subscription)
    -> SubscriptionAction
  {
    guard case .awaitingSubscription = phase else { return .cancel(subscription) }
    phase = .subscribed(subscription)
    switch policy {
    case .demandOne:
      defer { pendingDemand = .none }
      return pendingDemand == .none ? .none : .request(subscription, pendingDemand)
    case .prefetch(let count):
      outstanding = count
      return .request(subscription, .max(count))
    case .unbounded, .newest, .oldest:
      return .request(subscription, .unlimited)
    }
  }

  @usableFromInline enum ValueAction {
    /// Resume the consumer; return `demand` from `receive(_:)`.
    case resume(Waiter, Output, demand: Subscribers.Demand)
    /// The oldest buffered value made room (`bufferingNewest`): release it after unlocking (its
    /// `deinit` may call back into the bridge, cancel it).
    case evicted(Output)
    case none
  }

  @inlinable mutating func receivedValue(_ value: Output) -> ValueAction {
    switch phase {
    case .awaitingSubscription, .subscribed: break
    case .finished, .terminal: return .none
    }
    if outstanding > 0 { outstanding -= 1 }
    if let waiter = waiters.popFirst() {
      return .resume(waiter, value, demand: topUp())
    }
    switch policy {
    case .demandOne, .prefetch, .unbounded:
      buffer.append(value)
    case .newest(let limit):
      guard limit > 0 else { break }
      let evicted = buffer.count == limit ? buffer.popFirst() : nil
      buffer.append(value)
      if let evicted { return .evicted(evicted) }
    case .oldest(let limit):
      if buffer.count < limit { buffer.append(value) }
    }
    return .none
  }

  /// The waiting consumers to end, the first with `completion`, the others with the end; none
  /// if nobody is waiting (the completion is then handed out after the buffered values).
  @inlinable mutating func receivedCompletion(_ completion: Subscribers.Completion<Failure>)
    -> (first: Waiter, next: Next, others: RingBuffer<Waiter>)?
  {
    switch phase {
    case .awaitingSubscription, .subscribed: break
    case .finished, .terminal: return nil
    }
    guard let first = waiters.popFirst() else {
      phase = .finished(completion)
      return nil
    }
    defer { waiters = RingBuffer() }
    phase = .terminal
    return (first, Self.next(for: completion), waiters)
  }

  // MARK: Consumer events

  @usableFromInline enum ConsumeAction {
    case value(Output, topUp: (any Subscription, Subscribers.Demand)?)
    case end(Subscribers.Completion<Failure>?)
    case mustWait
  }

  /// The consumer's fast path: a buffered value or the end, without suspending.
  @inlinable mutating func consumed() -> ConsumeAction {
    if let value = buffer.popFirst() {
      let demand = topUp()
      if demand > 0, let subscription {
        return .value(value, topUp: (subscription, demand))
      }
      return .value(value, topUp: nil)
    }
    switch phase {
    case .finished(let completion):
      phase = .terminal
      return .end(completion)
    case .terminal:
      return .end(nil)
    case .awaitingSubscription, .subscribed:
      return .mustWait
    }
  }

  @usableFromInline enum WaitAction {
    case resume(Waiter, Next, topUp: (any Subscription, Subscribers.Demand)?)
    case request(any Subscription, Subscribers.Demand)
    case parked
  }

  /// The consumer's slow path: park `waiter` unless something arrived meanwhile.
  @inlinable mutating func waiting(_ waiter: Waiter) -> WaitAction {
    switch consumed() {
    case .value(let value, let topUp):
      return .resume(waiter, .value(value), topUp: topUp)
    case .end(let completion):
      return .resume(waiter, Self.next(for: completion), topUp: nil)
    case .mustWait:
      waiters.append(waiter)
      guard case .demandOne = policy else { return .parked }
      guard let subscription else {
        pendingDemand += 1
        return .parked
      }
      return .request(subscription, .max(1))
    }
  }

  /// Terminal. What to release after unlocking: the upstream to cancel, the consumers to end,
  /// and the buffered values and completion (whose failure may hold objects with a `deinit`).
  /// Idempotent.
  @inlinable mutating func cancelled()
    -> (
      upstream: (any Subscription)?, waiters: RingBuffer<Waiter>, buffer: RingBuffer<Output>,
      phase: Phase
    )
  {
    let upstream = subscription
    let released = (upstream, waiters, buffer, phase)
    phase = .terminal
    waiters = RingBuffer()
    buffer = RingBuffer()
    return released
  }

  @inlinable static func next(for completion: Subscribers.Completion<Failure>?) -> Next {
    switch completion {
    case .failure(let error): .failure(error)
    case .finished, nil: .end
    }
  }

  /// `prefetch(n)`: once outstanding demand plus buffered values fall to half of `n`, the demand
  /// that brings them back to `n`; otherwise none. Batching keeps requests rare while never
  /// holding more than `n`.
  @inlinable mutating func topUp() -> Subscribers.Demand {
    guard case .prefetch(let limit) = policy else { return .none }
    let held = outstanding + buffer.count
    guard held <= limit / 2 else { return .none }
    let more = limit - held
    outstanding += more
    return .max(more)
  }
}
