/// The control state of a ``StepSubscription``: upstream subscription, downstream demand and
/// the final value waiting for it, as a pure state machine.
///
/// States: `awaitingSubscription` → `subscribed(upstream)` → (`awaitingDemand(final)`) →
/// `terminal`.
///
/// | event | awaiting | subscribed | awaitingDemand | terminal |
/// |---|---|---|---|---|
/// | `receivedSubscription(s)` | subscribed | cancel `s` | cancel `s` | cancel `s` |
/// | `requested(n)` | — | record n; request from upstream (per policy) | deliver final, terminal | ignore |
/// | `finished(final, c)` | as subscribed, with no upstream (`EarlySignals.processed`) | no demand and a final value (or a reducing step finishing): awaitingDemand; else deliver, terminal | ignore | ignore |
/// | `cancelled` | terminal | terminal, cancel upstream | terminal, drop final | remember it: no completion after a final value in flight |
///
/// `finished` comes from the upstream completing or from the step ending early (then the
/// upstream is also cancelled). Every transition returns what to do; the subscription does it
/// after unlocking, and releases the upstream reference there too.
@usableFromInline
struct StepControl<Output, Failure: Error> {
  @usableFromInline enum Phase {
    case awaitingSubscription
    case subscribed(any Subscription)
    case awaitingDemand(Output?, Subscribers.Completion<Failure>)
    case terminal
  }

  @usableFromInline var phase = Phase.awaitingSubscription
  /// Everything the downstream requested so far.
  @usableFromInline var requested = Subscribers.Demand.none
  /// `cancel()` was called (even after the final value was handed over): a completion that
  /// would follow a final value is then not sent.
  @usableFromInline var cancelRequested = false

  @inlinable init() {}

  @inlinable var isSubscribed: Bool {
    if case .subscribed = phase { return true }
    return false
  }

  @inlinable var isAwaitingSubscription: Bool {
    if case .awaitingSubscription = phase { return true }
    return false
  }

  @inlinable var isTerminal: Bool {
    if case .terminal = phase { return true }
    return false
  }

  /// The phase's name, for mirrors.
  var phaseName: StaticString {
    switch phase {
    case .awaitingSubscription: "awaitingSubscription"
    case .subscribed: "subscribed"
    case .awaitingDemand: "awaitingDemand"
    case .terminal: "terminal"
    }
  }

  /// The upstream subscription while subscribed.
  var upstream: (any Subscription)? {
    if case .subscribed(let upstream) = phase { return upstream }
    return nil
  }

  @inlinable mutating func receivedSubscription(_ subscription: any Subscription) -> Bool {
    guard case .awaitingSubscription = phase else { return false }
    phase = .subscribed(subscription)
    return true
  }

  @usableFromInline enum RequestAction {
    case request(any Subscription, Subscribers.Demand)
    case deliver(Output?, Subscribers.Completion<Failure>)
    case none
  }

  @inlinable mutating func requested(
    _ demand: Subscribers.Demand, policy: UpstreamDemand
  ) -> RequestAction {
    switch phase {
    case .subscribed(let upstream):
      requested += demand
      let upstreamDemand = policy.scale(demand)
      return upstreamDemand > 0 ? .request(upstream, upstreamDemand) : .none
    case .awaitingDemand(let final, let completion):
      phase = .terminal
      return .deliver(final, completion)
    case .awaitingSubscription, .terminal:
      return .none
    }
  }

  @usableFromInline enum FinishAction {
    case deliver(Output?, Subscribers.Completion<Failure>)
    case none
  }

  /// The upstream is done (`cancelling`: because the step ended early, so it must be cancelled).
  /// `emitted` and `returned` are what the subscription delivered and got back as demand, when
  /// the step counts deliveries. `waitsForDemand`: the end waits for demand even without a
  /// final value (a reducing step finishing, as Combine's do).
  @inlinable mutating func finished(
    final: Output?, _ completion: Subscribers.Completion<Failure>,
    emitted: Int, returned: Subscribers.Demand, waitsForDemand: Bool
  ) -> (live: Bool, upstream: (any Subscription)?, action: FinishAction) {
    let upstream: (any Subscription)?
    switch phase {
    case .subscribed(let subscription): upstream = subscription
    case .awaitingSubscription: upstream = nil
    case .awaitingDemand, .terminal: return (false, nil, .none)
    }
    guard final != nil || waitsForDemand, (requested + returned) - emitted == .none else {
      phase = .terminal
      return (true, upstream, .deliver(final, completion))
    }
    phase = .awaitingDemand(final, completion)
    return (true, upstream, .none)
  }

  /// Terminal; returns the upstream to cancel (when subscribed) and anything else to release.
  /// Idempotent.
  @inlinable mutating func cancelled() -> (upstream: (any Subscription)?, released: Phase) {
    cancelRequested = true
    let previous = phase
    phase = .terminal
    if case .subscribed(let upstream) = previous { return (upstream, previous) }
    return (nil, previous)
  }
}

/// Runs one ``OperatorStep`` between an upstream and a downstream: the shared engine of every
/// filtering and reducing operator.
///
/// **Demand**: as the step's ``UpstreamDemand`` says: forwarded (a dropped value asks upstream
/// for one more), scaled, or `.unlimited` up front with the downstream's demand kept for the
/// final value. A final value waits until the downstream has demand for it.
/// **Ordering**: values keep the upstream's order; the final value comes last, then the
/// completion, exactly once. **Cancellation**: `cancel()` is idempotent and thread-safe, cancels
/// the upstream, drops a pending final value and releases the downstream; nothing is delivered
/// after it returns (at most one value already in flight on another thread). When the step ends
/// early (`first()`, a `try` closure throwing) the upstream is cancelled before the downstream
/// hears of it.
///
/// Values pass without a lock: a ``DeliveryGate`` admits them while the subscription is live and
/// decides who releases the downstream once it is not. The lock guards the control state (demand,
/// the upstream subscription, a final value waiting for demand) and is taken only for
/// subscription, requests, completion and cancellation. The step and the delivery counters
/// belong to the upstream's signals, which are serial, so they need no lock either.
@usableFromInline
final class StepSubscription<Step: OperatorStep, Downstream: Subscriber>: Subscriber,
  Subscription, CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
where Downstream.Input == Step.Output, Downstream.Failure == Step.Failure {
  // Safety: `control` is lock-protected. `held` is written only by whoever the gate lets release
  // it (after the gate closed and no delivery is in flight) and read only by a delivery inside
  // the gate, or under the lock while the control state is live (the gate closes only under the
  // lock, so it is open then). `finalRecipient` is touched only under the lock. `step`, `emitted`
  // and `returned` are touched only by upstream signals, which the publisher contract makes
  // serial. `policy`, `name` and `countsDeliveries` are immutable.
  @usableFromInline typealias Input = Step.Input
  @usableFromInline typealias Failure = Step.UpstreamFailure
  @usableFromInline typealias Control = StepControl<Step.Output, Step.Failure>

  /// The downstream for values, until the gate says to release it.
  @usableFromInline @exclusivity(unchecked) var held: Downstream?
  /// The downstream kept for a final value waiting for demand (guarded by `control`'s lock).
  @usableFromInline @exclusivity(unchecked) var finalRecipient: Downstream?
  @usableFromInline let gate: DeliveryGate
  @usableFromInline let policy: UpstreamDemand
  @usableFromInline let earlySignals: EarlySignals
  @usableFromInline let name: StaticString
  @usableFromInline let countsDeliveries: Bool
  @usableFromInline let trapsUnrequestedValues: Bool
  @usableFromInline @exclusivity(unchecked) var step: Step
  @usableFromInline @exclusivity(unchecked) var emitted = 0
  @usableFromInline @exclusivity(unchecked) var returned = Subscribers.Demand.none
  @usableFromInline let control = Lock(Control())
  /// `request(_:)` and `cancel()` as compiled where this subscription was made (specialized);
  /// subscribers call them through `any Subscription`, whose generic witnesses forward here.
  @usableFromInline let specializedRequest: (StepSubscription, Subscribers.Demand) -> Void
  @usableFromInline let specializedCancel: (StepSubscription) -> Void

  /// Makes the subscription an operator hands to its upstream's `receive(subscriber:)`.
  ///
  /// Operators call `upstream.receive(subscriber:)`, never a shared generic helper such as
  /// `subscribe(_:)`: a generic function that reappears down a chain of operators with a larger
  /// subscriber type looks like an infinite specialization loop to the optimizer, which then
  /// leaves the whole chain unspecialized (about 20× slower per value).
  @inlinable convenience init(_ downstream: Downstream, through step: Step) {
    self.init(step: step, downstream: downstream)
  }

  @inlinable init(step: Step, downstream: Downstream) {
    self.step = step
    held = downstream
    earlySignals = step.earlySignals
    gate = DeliveryGate(open: step.earlySignals.admitsEarlyValues)
    policy = step.upstreamDemand
    name = step.name
    countsDeliveries = step.countsDeliveries
    trapsUnrequestedValues = step.countsDeliveries && step.trapsUnrequestedValues
    specializedRequest = { $0.requestSpecialized($1) }
    specializedCancel = { $0.cancelSpecialized() }
  }

  // MARK: Upstream signals

  @inlinable func receive(subscription: any Subscription) {
    let downstream = control.withLock { control -> Downstream? in
      guard control.receivedSubscription(subscription) else { return nil }
      gate.open()
      return held
    }
    guard let downstream else {
      subscription.cancel()
      return
    }
    downstream.receive(subscription: self)
    if policy == .unlimited { subscription.request(.unlimited) }
  }

  @inlinable func receive(_ input: Input) -> Subscribers.Demand {
    if let demand = gate.pass({ deliver(input) }, releasing: { held = nil }) { return demand }
    // Not admitted: before the subscription (or after the end). Only the former can trap.
    if earlySignals == .trapped, control.withLock({ $0.isAwaitingSubscription }) {
      Violation.signalBeforeSubscription("a value", operator: description)
    }
    return .none
  }

  /// Runs the step on one value and acts on its answer; only inside the gate, so `held` is set.
  @inlinable func deliver(_ input: Input) -> Subscribers.Demand {
    switch step.receive(input) {
    case .emit(let value):
      if trapsUnrequestedValues,
        (control.withLock { $0.requested } + returned) - emitted == .none
      {
        Violation.unrequestedValue(operator: description)
      }
      let more = held.unsafelyUnwrapped.receive(value)
      if countsDeliveries {
        emitted += 1
        returned += more
      }
      return policy.scale(more)
    case .drop(let more):
      return more
    case .emitAndFinish(let value):
      // Combine returns the downstream's demand for this last value too.
      let more = held.unsafelyUnwrapped.receive(value)
      finish(final: nil, .finished, cancellingUpstream: true)
      return policy.scale(more)
    case .finish(let final):
      finish(final: final, .finished, cancellingUpstream: true)
    case .fail(let error):
      finish(final: nil, .failure(error), cancellingUpstream: true)
    }
    return .none
  }

  @inlinable func receive(completion: Subscribers.Completion<Step.UpstreamFailure>) {
    let (live, early) = control.withLock { control in
      (
        control.isSubscribed || (control.isAwaitingSubscription && earlySignals == .processed),
        control.isAwaitingSubscription && earlySignals == .trapped
      )
    }
    if early { Violation.signalBeforeSubscription("a completion", operator: description) }
    guard live else { return }
    switch step.receive(completion: completion) {
    case .complete(let final, let completion):
      finish(final: final, completion, cancellingUpstream: false)
    }
  }

  @inlinable func finish(
    final: Step.Output?, _ completion: Subscribers.Completion<Step.Failure>,
    cancellingUpstream: Bool
  ) {
    let (upstream, action, recipient, release) = control.withLock {
      control -> ((any Subscription)?, Control.FinishAction, Downstream?, Bool) in
      let (live, upstream, action) = control.finished(
        final: final, completion, emitted: emitted, returned: returned,
        waitsForDemand: policy == .unlimited && completion.isFinished)
      guard live else { return (nil, action, nil, false) }
      // Live until now, so the gate is open and `held` is here: keep what the end needs.
      switch action {
      case .deliver: return (upstream, action, held, gate.close())
      case .none:
        finalRecipient = held
        return (upstream, action, nil, gate.close())
      }
    }
    if release { held = nil }
    if cancellingUpstream { upstream.cancelIfPresent() } else { withExtendedLifetime(upstream) {} }
    if case .deliver(let final, let completion) = action, let recipient {
      deliver(final, completion, to: recipient)
    }
  }

  @inlinable func deliver(
    _ final: Step.Output?, _ completion: Subscribers.Completion<Step.Failure>,
    to downstream: Downstream
  ) {
    if let final {
      _ = downstream.receive(final)
      // A cancel() during that delivery ends the subscription here: no completion after it.
      if control.withLock({ $0.cancelRequested }) { return }
    }
    downstream.receive(completion: completion)
  }

  // MARK: Downstream calls

  @inlinable func request(_ demand: Subscribers.Demand) { specializedRequest(self, demand) }

  @inlinable func requestSpecialized(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    let (action, recipient, early) = control.withLock { control in
      if earlySignals == .trapped, control.isAwaitingSubscription {
        return (Control.RequestAction.none, Downstream?.none, true)
      }
      let action = control.requested(demand, policy: policy)
      guard case .deliver = action else { return (action, Downstream?.none, false) }
      defer { finalRecipient = nil }
      return (action, finalRecipient, false)
    }
    if early { Violation.signalBeforeSubscription("a request", operator: description) }
    switch action {
    case .request(let upstream, let demand): upstream.request(demand)
    case .deliver(let final, let completion):
      if let recipient { deliver(final, completion, to: recipient) }
    case .none: break
    }
  }

  @inlinable func cancel() { specializedCancel(self) }

  @inlinable func cancelSpecialized() {
    let (upstream, released, recipient, release) = control.withLock { control in
      let (upstream, released) = control.cancelled()
      defer { finalRecipient = nil }
      return (upstream, released, finalRecipient, gate.close())
    }
    if release { held = nil }
    upstream.cancelIfPresent()
    withExtendedLifetime((released, recipient)) {}
  }

  @usableFromInline var description: String { "\(name)" }
  /// The step's children (Combine's for this operator); valid as soon as the operator has
  /// subscribed upstream. Reads the step's state without synchronisation: a debugging view.
  @usableFromInline var customMirror: Mirror {
    let live = gate.pass({ held }, releasing: { held = nil })
    let (phase, upstream, early, ended) = control.withLock { control in
      (
        control.phaseName, control.upstream, control.isAwaitingSubscription ? held : nil,
        control.isTerminal
      )
    }
    // Described after unlocking: an upstream's `description` is someone else's code.
    let status = upstream.map { "subscribed(\($0))" } ?? "\(phase)"
    let reflection = StepReflection(
      downstream: (live ?? early) as Any, status: status, upstream: upstream as Any,
      finished: ended)
    return Mirror(self, children: step.children(reflection))
  }
  @usableFromInline var playgroundDescription: Any { description }
}
