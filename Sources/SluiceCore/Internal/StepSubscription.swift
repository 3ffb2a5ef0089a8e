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
/// | `finished(final, c)` | — | final and no demand: awaitingDemand; else deliver, terminal | ignore | ignore |
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
    case awaitingDemand(Output, Subscribers.Completion<Failure>)
    case terminal
  }

  @usableFromInline var phase = Phase.awaitingSubscription
  /// Everything the downstream requested so far.
  @usableFromInline var requested = Subscribers.Demand.none
  /// `forwardPlusFirst` adds its count to the first request only.
  @usableFromInline var addedFirst = false
  /// `cancel()` was called (even after the final value was handed over): a completion that
  /// would follow a final value is then not sent.
  @usableFromInline var cancelRequested = false

  @inlinable init() {}

  @inlinable var isSubscribed: Bool {
    if case .subscribed = phase { return true }
    return false
  }

  @inlinable mutating func receivedSubscription(_ subscription: any Subscription) -> Bool {
    guard case .awaitingSubscription = phase else { return false }
    phase = .subscribed(subscription)
    return true
  }

  @usableFromInline enum RequestAction {
    case request(any Subscription, Subscribers.Demand)
    case deliver(Output, Subscribers.Completion<Failure>)
    case none
  }

  @inlinable mutating func requested(
    _ demand: Subscribers.Demand, policy: UpstreamDemand
  ) -> RequestAction {
    switch phase {
    case .subscribed(let upstream):
      requested += demand
      var upstreamDemand = policy.scale(demand)
      if case .forwardPlusFirst(let count) = policy, !addedFirst {
        addedFirst = true
        upstreamDemand += count
      }
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
  /// the step counts deliveries.
  @inlinable mutating func finished(
    final: Output?, _ completion: Subscribers.Completion<Failure>,
    emitted: Int, returned: Subscribers.Demand
  ) -> (upstream: (any Subscription)?, action: FinishAction) {
    guard case .subscribed(let upstream) = phase else { return (nil, .none) }
    guard let final, (requested + returned) - emitted == .none else {
      phase = .terminal
      return (upstream, .deliver(final, completion))
    }
    phase = .awaitingDemand(final, completion)
    return (upstream, .none)
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
/// The step and the delivery counters belong to the upstream's signals, which are serial, so
/// they need no lock; the lock guards the control state and the downstream reference.
@usableFromInline
final class StepSubscription<Step: OperatorStep, Downstream: Subscriber>: Subscriber,
  Subscription, CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
where Downstream.Input == Step.Output, Downstream.Failure == Step.Failure {
  // Safety: `control` is lock-protected, and so is `held` (touched only inside
  // `control.withLock`). `step`, `emitted` and `returned` are touched only by upstream signals,
  // which the publisher contract makes serial. `policy`, `name` and `countsDeliveries` are
  // immutable.
  @usableFromInline typealias Input = Step.Input
  @usableFromInline typealias Failure = Step.UpstreamFailure

  /// The downstream until the subscription is done with it (guarded by `control`'s lock).
  @usableFromInline @exclusivity(unchecked) var held: Downstream?
  @usableFromInline let policy: UpstreamDemand
  @usableFromInline let name: StaticString
  @usableFromInline let countsDeliveries: Bool
  @usableFromInline @exclusivity(unchecked) var step: Step
  @usableFromInline @exclusivity(unchecked) var emitted = 0
  @usableFromInline @exclusivity(unchecked) var returned = Subscribers.Demand.none
  @usableFromInline let control = Lock(StepControl<Step.Output, Step.Failure>())
  /// `request(_:)` and `cancel()` as compiled where this subscription was made (specialized);
  /// subscribers call them through `any Subscription`, whose generic witnesses forward here.
  @usableFromInline let specializedRequest: (StepSubscription, Subscribers.Demand) -> Void
  @usableFromInline let specializedCancel: (StepSubscription) -> Void

  @inlinable init(step: Step, downstream: Downstream) {
    self.step = step
    held = downstream
    policy = step.upstreamDemand
    name = step.name
    countsDeliveries = step.countsDeliveries
    specializedRequest = { $0.requestSpecialized($1) }
    specializedCancel = { $0.cancelSpecialized() }
  }

  // MARK: Upstream signals

  @inlinable func receive(subscription: any Subscription) {
    let downstream = control.withLock { control -> Downstream? in
      control.receivedSubscription(subscription) ? held : nil
    }
    guard let downstream else {
      subscription.cancel()
      return
    }
    downstream.receive(subscription: self)
    if policy == .unlimited { subscription.request(.unlimited) }
  }

  /// The downstream, while values may be delivered.
  @inlinable var liveDownstream: Downstream? {
    control.withLock { control in control.isSubscribed ? held : nil }
  }

  @inlinable func receive(_ input: Input) -> Subscribers.Demand {
    guard let downstream = liveDownstream else { return .none }
    switch step.receive(input) {
    case .emit(let value):
      let more = downstream.receive(value)
      if countsDeliveries {
        emitted += 1
        returned += more
      }
      return policy.scale(more)
    case .drop(let more):
      return more
    case .emitAndFinish(let value):
      _ = downstream.receive(value)
      finish(final: nil, .finished, cancellingUpstream: true)
    case .finish(let final):
      finish(final: final, .finished, cancellingUpstream: true)
    case .fail(let error):
      finish(final: nil, .failure(error), cancellingUpstream: true)
    }
    return .none
  }

  @inlinable func receive(completion: Subscribers.Completion<Step.UpstreamFailure>) {
    guard control.withLock({ $0.isSubscribed }) else { return }
    switch step.receive(completion: completion) {
    case .complete(let final, let completion):
      finish(final: final, completion, cancellingUpstream: false)
    }
  }

  @inlinable func finish(
    final: Step.Output?, _ completion: Subscribers.Completion<Step.Failure>,
    cancellingUpstream: Bool
  ) {
    let (upstream, action, downstream) = control.withLock { control in
      let (upstream, action) = control.finished(
        final: final, completion, emitted: emitted, returned: returned)
      return (upstream, action, takeDownstream(for: action))
    }
    if cancellingUpstream { upstream?.cancel() }
    withExtendedLifetime(upstream) {}
    if case .deliver(let final, let completion) = action, let downstream {
      deliver(final, completion, to: downstream)
    }
  }

  /// Inside the lock: hands the downstream over for a final delivery (forgetting it).
  @inlinable func takeDownstream(
    for action: StepControl<Step.Output, Step.Failure>.FinishAction
  ) -> Downstream? {
    guard case .deliver = action else { return nil }
    defer { held = nil }
    return held
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
    let (action, downstream) = control.withLock { control in
      let action = control.requested(demand, policy: policy)
      guard case .deliver = action else { return (action, Downstream?.none) }
      defer { held = nil }
      return (action, held)
    }
    switch action {
    case .request(let upstream, let demand): upstream.request(demand)
    case .deliver(let final, let completion):
      if let downstream { deliver(final, completion, to: downstream) }
    case .none: break
    }
  }

  @inlinable func cancel() { specializedCancel(self) }

  @inlinable func cancelSpecialized() {
    let (upstream, released, downstream) = control.withLock { control in
      let (upstream, released) = control.cancelled()
      defer { held = nil }
      return (upstream, released, held)
    }
    upstream?.cancel()
    withExtendedLifetime((released, downstream)) {}
  }

  @usableFromInline var description: String { "\(name)" }
  @usableFromInline var customMirror: Mirror {
    Mirror(self, children: ["downstream": control.withLock { _ in held } as Any])
  }
  @usableFromInline var playgroundDescription: Any { description }
}

extension Publisher {
  /// Subscribes `downstream` to this publisher through `step`.
  @inlinable
  func subscribe<Step: OperatorStep, Downstream: Subscriber>(
    _ downstream: Downstream, through step: Step
  )
  where
    Step.Input == Output, Step.UpstreamFailure == Failure, Downstream.Input == Step.Output,
    Downstream.Failure == Step.Failure
  {
    subscribe(StepSubscription(step: step, downstream: downstream))
  }
}
