extension Publishers {
  /// Publishes a value only after `dueTime` has passed without another one, as Combine's
  /// `debounce(for:scheduler:options:)`.
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
/// States: `awaitingSubscription` → `subscribed(upstream)` → `terminal`; while subscribed, a
/// `generation` counts values and `pending` holds the latest value and its timer.
/// | event | awaiting | subscribed | terminal |
/// |---|---|---|---|
/// | subscription `s` | subscribed; hand self down; request `.unlimited` | cancel `s` | cancel `s` |
/// | value `v` | drop | generation +1, pending = v, cancel the old timer, start one | drop |
/// | timer of generation `g` fires | — | `g` current: take pending; deliver it if demand > 0 (demand −1) | nothing |
/// | completion | drop | terminal; cancel the timer; deliver the completion in a scheduled action | drop |
/// | `request(n)` | demand +n | demand +n | ignore |
/// | `cancel()` | terminal | terminal; cancel upstream and timer | nothing |
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
  enum Phase {
    case awaitingSubscription
    case subscribed(any Subscription)
    case terminal
  }

  @usableFromInline
  struct State {
    @usableFromInline
    var phase = Phase.awaitingSubscription
    @usableFromInline
    var demand = Subscribers.Demand.none
    @usableFromInline
    var generation: UInt64 = 0
    @usableFromInline
    var pending: Input?
    @usableFromInline
    var timer: (any Cancellable)?
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
      state.phase = .subscribed(subscription)
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
    let generation = state.withLock { state -> UInt64? in
      guard case .subscribed = state.phase else { return nil }
      state.generation += 1
      state.pending = input
      return state.generation
    }
    guard let generation else { return .none }
    // Combine schedules a repeating action and cancels it once it fired or was superseded.
    let timer = scheduler.schedule(
      after: scheduler.now.advanced(by: dueTime), interval: dueTime,
      tolerance: scheduler.minimumTolerance, options: options
    ) { [weak self] in self?.due(generation) }
    let stale = state.withLock { state -> (any Cancellable)? in
      guard case .subscribed = state.phase, state.generation == generation else { return timer }
      defer { state.timer = timer }
      return state.timer
    }
    stale?.cancel()
    return .none
  }

  /// The timer of `generation` fired.
  @inlinable
  func due(_ generation: UInt64) {
    let (value, timer) = state.withLock { state -> (Input?, (any Cancellable)?) in
      guard case .subscribed = state.phase, state.generation == generation else {
        return (nil, nil)
      }
      let timer = state.timer
      state.timer = nil
      guard let value = state.pending else { return (nil, timer) }
      state.pending = nil
      guard state.demand > 0 else { return (nil, timer) }
      state.demand -= 1
      return (value, timer)
    }
    timer?.cancel()
    guard let value else { return }
    let more = delivery.send(.value(value))
    if more > 0 { state.withLock { $0.demand += more } }
  }

  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    let (live, timer) = state.withLock { state -> (Bool, (any Cancellable)?) in
      guard case .subscribed = state.phase else { return (false, nil) }
      state.phase = .terminal
      state.pending = nil
      defer { state.timer = nil }
      return (true, state.timer)
    }
    timer?.cancel()
    guard live else { return }
    scheduler.schedule(options: options) { [self] in delivery.send(.completion(completion)) }
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
    let (upstream, timer) = state.withLock { state -> ((any Subscription)?, (any Cancellable)?) in
      let upstream: (any Subscription)?
      if case .subscribed(let subscription) = state.phase {
        upstream = subscription
      } else {
        upstream = nil
      }
      state.phase = .terminal
      state.pending = nil
      defer { state.timer = nil }
      return (upstream, state.timer)
    }
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
  /// ```swift
  /// $query.debounce(for: .milliseconds(300), scheduler: DispatchQueue.main)
  /// ```
  public func debounce<S: Scheduler>(
    for dueTime: S.SchedulerTimeType.Stride, scheduler: S, options: S.SchedulerOptions? = nil
  ) -> Publishers.Debounce<Self, S> {
    Publishers.Debounce(upstream: self, dueTime: dueTime, scheduler: scheduler, options: options)
  }
}
