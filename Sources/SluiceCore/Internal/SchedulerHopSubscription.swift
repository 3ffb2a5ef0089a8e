/// The subscription of `receive(on:)` and `delay(for:)`: every value and the completion hop to
/// a scheduler action (`hop`: at once for receive(on:), after the interval for delay).
///
/// States: `awaitingSubscription` → `subscribed(upstream)` → `completing` (the completion waits
/// for the scheduler) → `terminal`.
/// | event | awaiting | subscribed | completing | terminal |
/// |---|---|---|---|---|
/// | subscription `s` | subscribed; make the deliver action; hand self downstream | cancel `s` | cancel `s` | cancel `s` |
/// | value | drop | queue it, schedule an action (``ImmediateScheduler``: run the action now, in the same lock as the queueing); return `.none` | drop | drop |
/// | completion | drop | queue it, schedule an action: completing | drop | drop |
/// | action runs | — | deliver the oldest queued value (while the subscription is being handed down: reschedule once it is; while another thread delivers: leave it to that thread, which hands it back to the scheduler after a batch); request what it returns | same; the completion: terminal, drop the deliver action | nothing |
/// | `request(n)` | ignore | request `n` upstream | ignore | ignore |
/// | `cancel()` | terminal | terminal; cancel upstream, drop the queue and the deliver action | terminal, drop the queue and the deliver action | nothing |
///
/// Every signal schedules the same action ("deliver"), made once when subscribed: `hop` gets
/// that closure each time instead of a new one, and a scheduler that prepares repeated actions
/// (``RepeatedActionScheduling``: `DispatchQueue`, which would convert each closure into a block)
/// prepares it once. The action refers to the subscription, which keeps it until terminal (as it
/// keeps its upstream): both references end with the subscription.
@usableFromInline
final class SchedulerHopSubscription<Upstream: Publisher, Downstream: Subscriber>:
  Subscriber, Subscription, CustomStringConvertible, CustomReflectable,
  CustomPlaygroundDisplayConvertible, @unchecked Sendable
where Upstream.Output == Downstream.Input, Upstream.Failure == Downstream.Failure {
  // Safety: all mutable state is in `state`'s lock; the downstream, the upstream and the
  // scheduler are called after unlocking, and the hand-off queue lets one thread deliver at a time.
  @usableFromInline
  typealias Input = Upstream.Output
  @usableFromInline
  typealias Failure = Upstream.Failure

  @usableFromInline
  enum Signal {
    case value(Input)
    case completion(Subscribers.Completion<Failure>)
  }

  /// Schedules the deliver action once. A struct, not a bare closure: a closure kept in an
  /// `Optional` or returned through the lock's generic result is re-wrapped in a thunk (an
  /// allocation) each time it is taken out.
  @usableFromInline
  struct ScheduleDeliver {
    @usableFromInline let run: () -> Void
    @inlinable init(_ run: @escaping () -> Void) { self.run = run }
  }

  @usableFromInline
  enum Phase {
    case awaitingSubscription
    case subscribed
    case completing
    case terminal
  }

  @usableFromInline
  struct State {
    @usableFromInline
    var phase = Phase.awaitingSubscription
    /// Until terminal.
    @usableFromInline
    var downstream: Downstream?
    @usableFromInline
    var queue = HandOffQueue<Signal>()
    /// Schedules the deliver action once: from the subscription until terminal.
    @usableFromInline
    var scheduleDeliver: ScheduleDeliver?

    @inlinable
    init(downstream: Downstream) { self.downstream = downstream }

    /// The upstream while subscribed. (Not the phase's payload: matching the phase on every
    /// value would copy the existential.)
    @usableFromInline
    var upstream: (any Subscription)?

    /// What the thread performing does next.
    @usableFromInline
    enum Step {
      case deliver(Signal, Downstream)
      case stop
      /// Schedule one deliver action again (``HandOffQueue/Next/yield``).
      case yield
    }

    /// A scheduled action ran on `thread`: the signal it delivers and to whom, or `nil`.
    @inlinable
    mutating func first(on thread: UInt) -> (Signal, Downstream)? {
      deliverable(queue.actionRan(on: thread))
    }

    /// The performer finished a signal: what it does next.
    @inlinable
    mutating func next() -> Step {
      switch queue.performed() {
      case .perform(let signal):
        guard let (signal, downstream) = deliverable(signal) else { return .stop }
        return .deliver(signal, downstream)
      case .idle: return .stop
      case .yield: return .yield
      }
    }

    /// `signal`, taken from the queue to be performed, with the downstream to deliver it to.
    @inlinable
    mutating func deliverable(_ signal: Signal?) -> (Signal, Downstream)? {
      guard let signal else { return nil }
      guard let downstream else {
        queue.clear()
        queue.stop()
        return nil
      }
      if case .completion = signal {
        phase = .terminal
        self.downstream = nil
      }
      return (signal, downstream)
    }
  }

  @usableFromInline
  let name: String
  /// Schedules the action for a new signal, the way the operator hops.
  @usableFromInline
  let hop: (@escaping () -> Void) -> Void
  /// Schedules an action as soon as possible on the same scheduler (for actions that came due
  /// while the subscription was being handed down).
  @usableFromInline
  let resume: (@escaping () -> Void) -> Void
  @usableFromInline
  let state: Lock<State>
  /// The scheduler runs every action inside `schedule` (``ImmediateScheduler``): a signal is
  /// submitted and its action run under one lock, without scheduling a closure.
  @usableFromInline
  let runsActionsAtOnce: Bool
  /// Prepares the deliver action, for a scheduler that can (`nil`: it goes through `hop`).
  @usableFromInline
  let prepare: ((@escaping () -> Void) -> () -> Void)?

  @inlinable
  init(
    name: String, downstream: Downstream, hop: @escaping (@escaping () -> Void) -> Void,
    resume: @escaping (@escaping () -> Void) -> Void, runsActionsAtOnce: Bool = false,
    prepare: ((@escaping () -> Void) -> () -> Void)? = nil
  ) {
    self.name = name
    self.hop = hop
    self.resume = resume
    self.runsActionsAtOnce = runsActionsAtOnce
    self.prepare = prepare
    state = Lock(State(downstream: downstream))
  }

  @inlinable
  func receive(subscription: any Subscription) {
    var scheduleDeliver: ScheduleDeliver?
    if !runsActionsAtOnce {
      let deliver = { [self] in self.deliver() }
      scheduleDeliver = ScheduleDeliver(prepare?(deliver) ?? { [hop] in hop(deliver) })
    }
    let downstream = state.withLock { state -> Downstream? in
      guard case .awaitingSubscription = state.phase else { return nil }
      state.phase = .subscribed
      state.upstream = subscription
      state.scheduleDeliver = scheduleDeliver
      state.queue.runsInline = runsActionsAtOnce
      // Values the downstream's first request brings wait until it has its subscription.
      state.queue.hold(on: currentThreadIdentity())
      return state.downstream
    }
    guard let downstream else {
      subscription.cancel()
      return
    }
    downstream.receive(subscription: self)
    let waiting = state.withLock { $0.queue.release() }
    for _ in 0..<waiting { resume { self.deliver() } }
  }

  @inlinable
  func receive(_ input: Input) -> Subscribers.Demand {
    if runsActionsAtOnce {
      let thread = currentThreadIdentity()
      let first = state.withLock { state -> (Signal, Downstream)? in
        guard case .subscribed = state.phase else { return nil }
        return state.deliverable(state.queue.submitAndRun(.value(input), on: thread))
      }
      if let first { perform(first) }
      return .none
    }
    let scheduleDeliver = state.withLock { state -> ScheduleDeliver? in
      guard case .subscribed = state.phase else { return nil }
      state.queue.submit(.value(input))
      return state.scheduleDeliver
    }
    scheduleDeliver?.run()
    return .none
  }

  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    // A scheduler that runs actions inside `schedule`: as if this were its action.
    if runsActionsAtOnce { return receiveInAction(completion: completion) }
    let scheduleDeliver = state.withLock { state -> ScheduleDeliver? in
      guard case .subscribed = state.phase else { return nil }
      state.phase = .completing
      state.upstream = nil
      state.queue.submit(.completion(completion))
      return state.scheduleDeliver
    }
    scheduleDeliver?.run()
  }

  /// A completion made inside one of the scheduler's own actions (`timeout`'s timer): delivered
  /// in that action, as Combine does, when nothing is queued before it; else after what is
  /// queued (each queued signal's action still runs, one signal each).
  @inlinable
  func receiveInAction(completion: Subscribers.Completion<Failure>) {
    let thread = currentThreadIdentity()
    let first = state.withLock { state -> (Signal, Downstream)? in
      guard case .subscribed = state.phase else { return nil }
      state.phase = .completing
      state.upstream = nil
      return state.deliverable(state.queue.submitAndRun(.completion(completion), on: thread))
    }
    if let first { perform(first) }
  }

  /// A scheduled action: delivers the signal it stands for (or, if another thread is delivering,
  /// leaves it to that thread), then any signals owed meanwhile.
  @inlinable
  func deliver() {
    let thread = currentThreadIdentity()
    guard let first = state.withLock({ $0.first(on: thread) }) else { return }
    perform(first)
  }

  /// Delivers `first`, taken from the queue (this thread is now performing), then the signals
  /// owed meanwhile, until the queue is idle or the run yields the rest to the scheduler.
  @inlinable
  func perform(_ first: consuming (Signal, Downstream)) {
    var (signal, downstream) = first
    while true {
      switch signal {
      case .value(let value):
        let more = downstream.receive(value)
        if more > 0 { state.withLock { $0.upstream }?.request(more) }
      case .completion(let completion):
        downstream.receive(completion: completion)
        let dropped = state.withLock { $0.scheduleDeliver.take() }
        withExtendedLifetime(dropped) {}
      }
      switch state.withLock({ $0.next() }) {
      case .deliver(let nextSignal, let nextDownstream):
        (signal, downstream) = (nextSignal, nextDownstream)
      case .stop: return
      case .yield:
        resume { self.deliver() }
        state.withLock { $0.queue.yielded() }
        return
      }
    }
  }

  @inlinable
  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    state.withLock { $0.upstream }?.request(demand)
  }

  @inlinable
  func cancel() {
    let (upstream, released) = state.withLock { state in
      let upstream = state.upstream.take()
      defer {
        state.phase = .terminal
        state.downstream = nil
        state.queue.clear()
      }
      return (upstream, (state.downstream, state.queue, state.scheduleDeliver.take()))
    }
    upstream.cancelIfPresent()
    withExtendedLifetime(released) {}
  }

  @inlinable
  var description: String { name }
  @inlinable
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @inlinable
  var playgroundDescription: Any { description }
}
