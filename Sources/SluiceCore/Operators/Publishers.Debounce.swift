extension Publishers {
  /// Publishes a value only after `dueTime` has passed without another one, as Combine's
  /// `debounce(for:scheduler:options:)`.
  ///
  /// ![Marble diagram: debounce(for: .seconds(2), scheduler: scheduler)](debounce)
  ///
  /// **Demand**: asks the upstream for `.unlimited`; a value that comes due while the downstream
  /// has no demand is dropped. **Ordering**: each due value is delivered in a scheduler action;
  /// the completion follows in a scheduled action too. As in Combine, a value still waiting when
  /// the upstream completes is dropped. **Cancellation**: cancels the upstream and the pending
  /// timer and releases the downstream.
  public struct Debounce<Upstream: Publisher, Context: Scheduler>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher from which this publisher receives elements.
    public let upstream: Upstream
    /// The amount of time the publisher should wait before publishing an element.
    public let dueTime: Context.SchedulerTimeType.Stride
    /// The scheduler on which this publisher delivers elements.
    public let scheduler: Context
    /// Scheduler options that customize this publisher's delivery of elements.
    public let options: Context.SchedulerOptions?

    /// Creates a publisher that publishes a value once `dueTime` passed without a newer one.
    public init(
      upstream: Upstream, dueTime: Context.SchedulerTimeType.Stride, scheduler: Context,
      options: Context.SchedulerOptions?
    ) {
      self.upstream = upstream
      self.dueTime = dueTime
      self.scheduler = scheduler
      self.options = options
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: DebounceSubscription<Upstream, Context, S>(
          dueTime: dueTime, scheduler: scheduler, options: options, downstream: subscriber))
    }
  }
}

/// The subscription of `debounce`.
///
/// One timer at a time: a value that arrives while a timer is armed only moves the deadline (its
/// arrival plus `dueTime`); when the timer fires before the deadline it is re-armed for the
/// deadline. A burst of values costs one scheduled action per `dueTime`, not one per value, and
/// the value still comes out when the last one's `dueTime` has passed, as in Combine (which
/// cancels and re-schedules a timer for every value).
///
/// States: `awaitingSubscription` → `subscribed(upstream)` → `terminal`; while subscribed,
/// `pending` holds the latest value and its `deadline`, and `armed` the timer (its token, the
/// time it was armed for, its cancellable).
/// | event | awaiting | subscribed, no timer | subscribed, timer armed | terminal |
/// |---|---|---|---|---|
/// | subscription `s` | subscribed; hand self down; request `.unlimited` | cancel `s` | cancel `s` | cancel `s` |
/// | value `v` | drop | pending = v, deadline; arm a timer for the deadline | pending = v, deadline | drop |
/// | the armed timer fires | — | — | deadline later than the timer: re-arm for it; else disarm, take pending, deliver it if demand > 0 (demand −1) | nothing |
/// | an older timer fires | — | nothing | nothing | nothing |
/// | completion | drop | terminal; deliver the completion in a scheduled action | same; cancel the timer | drop |
/// | `request(n)` | demand +n | demand +n | demand +n | ignore |
/// | `cancel()` | terminal | terminal; cancel upstream | terminal; cancel upstream and timer | nothing |
@usableFromInline
final class DebounceSubscription<Upstream: Publisher, Context: Scheduler, Downstream: Subscriber>:
  Subscriber, Subscription, CustomStringConvertible, CustomReflectable,
  CustomPlaygroundDisplayConvertible, @unchecked Sendable
where Upstream.Output == Downstream.Input, Upstream.Failure == Downstream.Failure {
  // Safety: all mutable state is in `state`'s lock; the upstream, timers and the scheduler are
  // called after unlocking; the downstream only through `delivery`, which keeps it serial.
  @usableFromInline
  typealias Input = Upstream.Output
  @usableFromInline
  typealias Failure = Upstream.Failure
  @usableFromInline
  typealias Time = Context.SchedulerTimeType

  @usableFromInline
  enum Phase {
    case awaitingSubscription
    case subscribed
    case terminal
  }

  @usableFromInline
  typealias Token = TimerToken<DebounceSubscription>

  @usableFromInline
  struct State {
    @usableFromInline
    var phase = Phase.awaitingSubscription
    /// While subscribed. (Not the phase's payload: matching the phase on every value would copy
    /// the existential.)
    @usableFromInline
    var upstream: (any Subscription)?
    @usableFromInline
    var demand = Subscribers.Demand.none
    @usableFromInline
    var pending: Input?
    /// When `pending` comes due.
    @usableFromInline
    var deadline: Time?
    /// The armed timer's token (actions of older timers that fire late are ignored), the time it
    /// was armed for, and its cancellable once `schedule` returned it. Kept apart, not in one
    /// optional struct: copying the cancellable existential on every value is what costs.
    @usableFromInline
    var armed: Token?
    @usableFromInline
    var armedFor: Time?
    @usableFromInline
    var timer: (any Cancellable)?
    /// The token of the last timer, reused once no scheduled action holds it.
    @usableFromInline
    var spare: Token?

    @inlinable
    init() {}

    /// Arms a new timer for `due` (the caller schedules it); returns its token.
    @inlinable
    mutating func arm(for due: Time, of owner: DebounceSubscription) -> Token {
      let token: Token
      if spare != nil, isKnownUniquelyReferenced(&spare!) {
        token = spare!
      } else {
        token = Token()
        spare = token
      }
      token.hold(owner)
      armed = token
      armedFor = due
      return token
    }

    /// Ends the subscription: the upstream (if subscribed), the timer to cancel, the reference
    /// the armed timer's token held and the value pending (released after unlocking: its
    /// `deinit` may send into the upstream).
    @inlinable
    mutating func terminate() -> (
      upstream: (any Subscription)?, timer: (any Cancellable)?, owner: AnyObject?,
      pending: Input?
    ) {
      phase = .terminal
      deadline = nil
      armedFor = nil
      return (upstream.take(), timer.take(), armed.take()?.take(), pending.take())
    }
  }

  /// What a timer firing leads to, performed after unlocking.
  @usableFromInline
  enum Firing {
    case nothing
    case disarm
    case deliver(Input)
    case rearm(Token, Time)
  }

  @usableFromInline
  let dueTime: Context.SchedulerTimeType.Stride
  @usableFromInline
  let scheduler: Context
  @usableFromInline
  let options: Context.SchedulerOptions?
  @usableFromInline
  let state = Lock(State())
  @usableFromInline
  var delivery: SerialDelivery<Downstream>!

  @inlinable
  init(
    dueTime: Context.SchedulerTimeType.Stride, scheduler: Context,
    options: Context.SchedulerOptions?, downstream: Downstream
  ) {
    self.dueTime = dueTime
    self.scheduler = scheduler
    self.options = options
    delivery = SerialDelivery(downstream) { [unowned self] more in
      state.withLock { $0.demand += more }
    }
  }

  @inlinable
  func receive(subscription: any Subscription) {
    let accepted = state.withLock { state -> Bool in
      guard case .awaitingSubscription = state.phase else { return false }
      state.phase = .subscribed
      state.upstream = subscription
      return true
    }
    guard accepted, let downstream = delivery.downstream else {
      subscription.cancel()
      return
    }
    downstream.receive(subscription: self)
    subscription.request(.unlimited)
  }

  @inlinable
  func receive(_ input: Input) -> Subscribers.Demand {
    // As Combine, the clock is read only while subscribed (not after a cancel or completion).
    guard state.withLock({ state in if case .subscribed = state.phase { true } else { false } })
    else { return .none }
    let due = scheduler.now.advanced(by: dueTime)
    // The value `input` replaces is released after unlocking (its `deinit` may send here).
    var replaced: Input?
    let token = state.withLock { state -> Token? in
      guard case .subscribed = state.phase else { return nil }
      replaced = state.pending.take()
      state.pending = input
      state.deadline = due
      return state.armed == nil ? state.arm(for: due, of: self) : nil
    }
    withExtendedLifetime(replaced) {}
    if let token { start(token, at: due) }
    return .none
  }

  /// Schedules the timer of `token` for `due`. As Combine, a repeating action, cancelled once it
  /// fired or the subscription ended.
  @inlinable
  func start(_ token: Token, at due: Time) {
    let timer = scheduler.schedule(
      after: due, interval: dueTime, tolerance: scheduler.minimumTolerance, options: options
    ) { [token] in token.take()?.fire(token) }
    // The timer may already have fired (a scheduler that runs actions at once) or the
    // subscription ended meanwhile: then it is cancelled now.
    let stale = state.withLock { state -> (any Cancellable)? in
      guard state.armed === token else { return timer }
      state.timer = timer
      return nil
    }
    stale?.cancel()
  }

  /// The timer of `token` fired.
  @inlinable
  func fire(_ token: Token) {
    let (firing, timer) = state.withLock { state -> (Firing, (any Cancellable)?) in
      guard case .subscribed = state.phase, state.armed === token, let due = state.armedFor
      else { return (.nothing, nil) }
      let timer = state.timer.take()
      if let deadline = state.deadline, due < deadline {
        // The old action still holds its token, so the new timer gets a new one.
        return (.rearm(state.arm(for: deadline, of: self), deadline), timer)
      }
      state.armed = nil
      state.armedFor = nil
      state.deadline = nil
      guard let value = state.pending.take(), state.demand > 0 else { return (.disarm, timer) }
      state.demand -= 1
      return (.deliver(value), timer)
    }
    timer?.cancel()
    switch firing {
    case .nothing, .disarm:
      return
    case .rearm(let token, let due):
      start(token, at: due)
    case .deliver(let value):
      let more = delivery.send(.value(value))
      if more > 0 { state.withLock { $0.demand += more } }
    }
  }

  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    var released: (upstream: (any Subscription)?, owner: AnyObject?, pending: Input?)
    let (live, timer) = state.withLock { state -> (Bool, (any Cancellable)?) in
      guard case .subscribed = state.phase else { return (false, nil) }
      let (upstream, timer, owner, pending) = state.terminate()
      released = (upstream, owner, pending)
      return (true, timer)
    }
    withExtendedLifetime(released) {}
    timer?.cancel()
    guard live else { return }
    // As Combine, the completion's action is scheduled without the operator's options.
    scheduler.schedule(options: nil) { [self] in delivery.send(.completion(completion)) }
  }

  @inlinable
  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    state.withLock { state in
      if case .terminal = state.phase { return }
      state.demand += demand
    }
  }

  @inlinable
  func cancel() {
    let (upstream, timer, owner, pending) = state.withLock { $0.terminate() }
    withExtendedLifetime((owner, pending)) {}
    timer?.cancel()
    upstream?.cancel()
    delivery.end()
  }

  @inlinable
  var description: String { "Debounce" }
  /// Combine's children: the downstream, its outstanding demand and the value waiting.
  @inlinable
  var customMirror: Mirror {
    let (demand, pending) = state.withLock { ($0.demand, $0.pending) }
    return Mirror(
      self,
      children: [
        ("downstream", delivery.downstream as Any), ("downstreamDemand", demand),
        ("currentValue", pending as Any),
      ])
  }
  @inlinable
  var playgroundDescription: Any { description }
}

extension Publisher {
  /// Publishes a value only after `dueTime` passes with no newer value.
  ///
  /// ![Marble diagram: debounce(for: .seconds(2), scheduler: scheduler)](debounce)
  ///
  /// ```swift
  /// $query.debounce(for: .milliseconds(300), scheduler: DispatchQueue.main)
  /// ```
  public func debounce<S: Scheduler>(
    for dueTime: S.SchedulerTimeType.Stride, scheduler: S, options: S.SchedulerOptions? = nil
  ) -> Publishers.Debounce<Self, S> {
    Publishers.Debounce(upstream: self, dueTime: dueTime, scheduler: scheduler, options: options)
  }
}
