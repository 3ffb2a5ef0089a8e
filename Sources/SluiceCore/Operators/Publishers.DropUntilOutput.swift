extension Publishers {
  /// A publisher that ignores its upstream's values until a second publisher sends a value,
  /// then republishes them — Combine's `DropUntilOutput`.
  ///
  /// ![Marble diagram: drop(untilOutputFrom: trigger)](drop-untilOutputFrom)
  ///
  /// **Demand**: the downstream's requests go to the upstream; a value dropped before the
  /// trigger uses up one unit of that demand, as in Combine. The trigger is asked for one value.
  /// **Ordering**: the upstream's values in order, one signal at a time (the trigger may
  /// complete on another thread). **Completion**: the upstream's; the trigger completing before
  /// it sent a value ends the output with that completion (and cancels the upstream).
  /// **Cancellation** cancels the upstream and the trigger; the trigger is also cancelled once
  /// it has sent its value or the upstream completed.
  public struct DropUntilOutput<Upstream: Publisher, Other: Publisher>: Publisher
  where Upstream.Failure == Other.Failure {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher whose values are dropped until `other` sends one.
    public let upstream: Upstream
    /// The trigger: its first value starts the output.
    public let other: Other

    /// Creates a publisher that drops `upstream`'s values until `other` sends one.
    public init(upstream: Upstream, other: Other) {
      self.upstream = upstream
      self.other = other
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let inner = DropUntilOutputSubscription<Upstream.Output, Failure, S>(downstream: subscriber)
      subscriber.receive(subscription: inner)
      other.receive(subscriber: TriggerSubscriber<Other.Output, _>(parent: inner))
      upstream.receive(subscriber: inner)
    }
  }
}

extension Publishers.DropUntilOutput: Equatable where Upstream: Equatable, Other: Equatable {}

extension Publisher {
  /// Ignores this publisher's values until `publisher` sends one; see
  /// ``Publishers/DropUntilOutput``.
  ///
  /// ![Marble diagram: drop(untilOutputFrom: trigger)](drop-untilOutputFrom)
  public func drop<P: Publisher>(untilOutputFrom publisher: P)
    -> Publishers.DropUntilOutput<Self, P>
  where Failure == P.Failure {
    Publishers.DropUntilOutput(upstream: self, other: publisher)
  }
}

/// States: `waiting` (values dropped) → `triggered` (values delivered) → `terminal`.
/// | event | waiting | triggered | terminal |
/// |---|---|---|---|
/// | upstream subscribes | keep it; request what is outstanding | same | cancel it |
/// | `request(n)` | outstanding +n; request n | same | ignore |
/// | upstream value | drop it; outstanding −1 | deliver it | drop |
/// | upstream completion | terminal; cancel the trigger (not the upstream); deliver it | same | drop |
/// | trigger value (before the trigger's subscription: ignored) | triggered; cancel the trigger | — | — |
/// | trigger completion | terminal; cancel the upstream (not the trigger); deliver it | ignore | ignore |
/// | `cancel()` | terminal; cancel both; release the downstream | same | nothing |
@usableFromInline
final class DropUntilOutputSubscription<Input, Failure: Error, Downstream: Subscriber>:
  Subscriber, Subscription, TriggeredSubscription, CustomReflectable,
  CustomPlaygroundDisplayConvertible, @unchecked Sendable
where Downstream.Input == Input, Downstream.Failure == Failure {
  // Safety: all mutable state is in `state`'s lock; the downstream is called through the serial
  // delivery, upstreams after unlocking.
  @usableFromInline
  typealias TriggerFailure = Failure

  @usableFromInline
  struct State {
    @usableFromInline
    var upstream: (any Subscription)?
    @usableFromInline
    var trigger = TriggerState()
    @usableFromInline
    var outstanding = Subscribers.Demand.none
    @usableFromInline
    var terminal = false

    /// Ends the operator: the subscriptions to cancel.
    @inlinable
    mutating func end() -> [any Subscription] {
      terminal = true
      defer { upstream = nil }
      return [upstream, trigger.end()].compactMap { $0 }
    }
  }

  @usableFromInline
  let state = Lock(State())
  @usableFromInline
  var delivery: SerialDelivery<Downstream>!

  @inlinable
  init(downstream: Downstream) {
    delivery = SerialDelivery(downstream) { [unowned self] more in
      state.withLock { $0.upstream }?.request(more)
    }
  }

  @inlinable
  func receive(subscription: any Subscription) {
    let outstanding = state.withLock { state -> Subscribers.Demand? in
      guard !state.terminal, state.upstream == nil else { return nil }
      state.upstream = subscription
      return state.outstanding
    }
    guard let outstanding else { return subscription.cancel() }
    if outstanding > 0 { subscription.request(outstanding) }
  }

  @inlinable
  func receive(_ input: Input) -> Subscribers.Demand {
    let delivers = state.withLock { state -> Bool in
      guard !state.terminal else { return false }
      if state.outstanding > 0, state.outstanding != .unlimited { state.outstanding -= 1 }
      return state.trigger.fired
    }
    guard delivers else { return .none }
    let more = delivery.send(.value(input))
    if more > 0 { state.withLock { $0.outstanding += more } }
    return more
  }

  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    let cancelling = state.withLock { state -> [any Subscription]? in
      guard !state.terminal else { return nil }
      state.upstream = nil  // it completed: not cancelled
      return state.end()
    }
    guard let cancelling else { return }
    for subscription in cancelling { subscription.cancel() }
    delivery.send(.completion(completion))
  }

  @inlinable
  func triggerReceive(subscription: any Subscription) {
    if state.withLock({ $0.terminal ? false : $0.trigger.attached(subscription) }) {
      subscription.request(.max(1))
    } else {
      subscription.cancel()
    }
  }

  @inlinable
  func triggerReceiveValue() {
    if case .some(let trigger) = state.withLock({ $0.terminal ? nil : $0.trigger.fire() }) {
      trigger?.cancel()
    }
  }

  @inlinable
  func triggerReceive(completion: Subscribers.Completion<Failure>) {
    let cancelling = state.withLock { state -> [any Subscription]? in
      guard !state.terminal, !state.trigger.fired else { return nil }
      state.trigger.completed()  // it completed: not cancelled
      return state.end()
    }
    guard let cancelling else { return }
    for subscription in cancelling { subscription.cancel() }
    delivery.send(.completion(completion))
  }

  @inlinable
  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    state.withLock { state -> (any Subscription)? in
      guard !state.terminal else { return nil }
      state.outstanding += demand
      return state.upstream
    }?.request(demand)
  }

  @inlinable
  func cancel() {
    let cancelling = state.withLock { $0.terminal ? [] : $0.end() }
    for subscription in cancelling { subscription.cancel() }
    delivery.end()
  }

  @inlinable
  var description: String { "DropUntilOutput" }
  @inlinable
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @inlinable
  var playgroundDescription: Any { description }
}
