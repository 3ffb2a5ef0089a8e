extension Publishers {
  /// A publisher that republishes its upstream's values until a second publisher sends a
  /// value, then finishes — Combine's `PrefixUntilOutput`.
  ///
  /// ![Marble diagram: prefix(untilOutputFrom: trigger)](prefix-untilOutputFrom)
  ///
  /// **Demand**: the downstream's requests go to the upstream; the trigger is asked for one
  /// value. **Ordering**: the upstream's values in order, one signal at a time (the trigger may
  /// fire on another thread). **Completion**: `.finished` when the trigger sends a value (the
  /// upstream is cancelled), else the upstream's completion; the trigger completing without a
  /// value changes nothing. **Cancellation** cancels the upstream and the trigger; the trigger
  /// is also cancelled when the upstream completes.
  public struct PrefixUntilOutput<Upstream: Publisher, Other: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher whose values are republished.
    public let upstream: Upstream
    /// The trigger: its first value finishes the output.
    public let other: Other

    /// Creates a publisher that republishes `upstream` until `other` sends a value.
    public init(upstream: Upstream, other: Other) {
      self.upstream = upstream
      self.other = other
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let inner = PrefixUntilOutputSubscription<Other.Failure, S>(downstream: subscriber)
      other.receive(subscriber: TriggerSubscriber<Other.Output, _>(parent: inner))
      upstream.receive(subscriber: inner)
    }
  }
}

extension Publisher {
  /// Republishes this publisher's values until `publisher` sends one, then finishes; see
  /// ``Publishers/PrefixUntilOutput``.
  ///
  /// ![Marble diagram: prefix(untilOutputFrom: trigger)](prefix-untilOutputFrom)
  public func prefix<P: Publisher>(untilOutputFrom publisher: P)
    -> Publishers.PrefixUntilOutput<Self, P>
  {
    Publishers.PrefixUntilOutput(upstream: self, other: publisher)
  }
}

/// States: `awaitingSubscription` → `live` → `terminal` (a trigger value before the upstream
/// subscribes is kept as `finishOnSubscription`).
/// | event | awaiting subscription | live | terminal |
/// |---|---|---|---|
/// | upstream subscribes | live; hand self downstream (triggered already: cancel it, then finish) | cancel it | cancel it |
/// | upstream value | — | deliver it | drop |
/// | upstream completion | ignore | terminal; cancel the trigger; deliver it | drop |
/// | trigger value (before the trigger's subscription: ignored) | remember it | terminal; cancel the upstream and the trigger; finish | — |
/// | trigger completion | forget the trigger | same | ignore |
/// | `request(n)` | — | request n | ignore |
/// | `cancel()` | terminal; cancel both | same | nothing |
@usableFromInline
final class PrefixUntilOutputSubscription<TriggerFailure: Error, Downstream: Subscriber>:
  Subscriber, Subscription, TriggeredSubscription, CustomReflectable,
  CustomPlaygroundDisplayConvertible, @unchecked Sendable
{
  // Safety: all mutable state is in `state`'s lock; the downstream is called through the serial
  // delivery, upstreams after unlocking.
  @usableFromInline
  typealias Input = Downstream.Input
  @usableFromInline
  typealias Failure = Downstream.Failure

  @usableFromInline
  struct State {
    @usableFromInline
    var upstream: (any Subscription)?
    @usableFromInline
    var subscribed = false
    @usableFromInline
    var trigger = TriggerState()
    @usableFromInline
    var terminal = false

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
  let delivery: SerialDelivery<Downstream>

  @inlinable
  init(downstream: Downstream) {
    delivery = SerialDelivery(downstream) { _ in }
  }

  @usableFromInline
  enum AttachAction { case handDown, handDownAndFinish, cancel }

  @inlinable
  func receive(subscription: any Subscription) {
    let action = state.withLock { state -> AttachAction in
      guard !state.subscribed else { return .cancel }
      state.subscribed = true
      if state.trigger.fired {
        state.terminal = true
        return .handDownAndFinish
      }
      if state.terminal { return .cancel }
      state.upstream = subscription
      return .handDown
    }
    switch action {
    case .cancel: subscription.cancel()
    case .handDown: delivery.downstream?.receive(subscription: self)
    case .handDownAndFinish:
      subscription.cancel()
      delivery.downstream?.receive(subscription: self)
      delivery.send(.completion(.finished))
    }
  }

  @inlinable
  func receive(_ input: Input) -> Subscribers.Demand {
    guard state.withLock({ !$0.terminal && $0.subscribed }) else { return .none }
    return delivery.send(.value(input))
  }

  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    let cancelling = state.withLock { state -> [any Subscription]? in
      // Before the upstream's subscription (a contract break): the downstream has none.
      guard !state.terminal, state.subscribed else { return nil }
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
    let fired = state.withLock { state -> (finishes: Bool, cancelling: [any Subscription])? in
      guard !state.terminal, case .some(let trigger) = state.trigger.fire() else { return nil }
      // Before the upstream subscribed, the finish follows the subscription handed down.
      guard state.subscribed else { return (false, [trigger].compactMap { $0 }) }
      return (true, [trigger].compactMap { $0 } + state.end())
    }
    guard let fired else { return }
    for subscription in fired.cancelling { subscription.cancel() }
    if fired.finishes { delivery.send(.completion(.finished)) }
  }

  @inlinable
  func triggerReceive(completion: Subscribers.Completion<TriggerFailure>) {
    state.withLock { state in
      if !state.terminal { _ = state.trigger.end() }
    }
  }

  @inlinable
  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    state.withLock { $0.terminal ? nil : $0.upstream }?.request(demand)
  }

  @inlinable
  func cancel() {
    let cancelling = state.withLock { $0.terminal ? [] : $0.end() }
    for subscription in cancelling { subscription.cancel() }
    delivery.end()
  }

  @inlinable
  var description: String { "PrefixUntilOutput" }
  @inlinable
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @inlinable
  var playgroundDescription: Any { description }
}
