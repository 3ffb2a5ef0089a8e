extension Publishers {
  /// How `collect(_:options:)` groups values: every `interval` of a scheduler's time, or also
  /// when `count` values have been collected.
  public enum TimeGroupingStrategy<Context: Scheduler> {
    /// An array every `interval` (when values arrived in it).
    case byTime(Context, Context.SchedulerTimeType.Stride)
    /// An array every `interval`, or as soon as `count` values have been collected.
    case byTimeOrCount(Context, Context.SchedulerTimeType.Stride, Int)
  }

  /// A publisher that collects its upstream's values and publishes them as arrays on a
  /// schedule — Combine's `CollectByTime`.
  ///
  /// ![Marble diagram: collect(.byTime(scheduler, .seconds(3)))](collect-byTime)
  ///
  /// **Demand**: `.byTime` asks the upstream for one value per request of the downstream and
  /// one more per value it receives, as Combine's (a subscriber that requests once inside
  /// `receive(subscription:)` and then takes 100 values makes 101 requests of one value);
  /// `.byTimeOrCount` asks for `count` values per array the downstream requests. **Timing**: a
  /// repeating timer of `interval`, started at the subscription, publishes what was collected
  /// since the last array (nothing when nothing arrived); `.byTimeOrCount` also publishes as
  /// soon as `count` values are in.
  /// An array that finds no demand waits (and keeps collecting) until the downstream requests.
  /// **Completion**: a finish publishes what is left (once there is demand), then finishes; a
  /// failure is delivered at once and drops what was collected. **Cancellation** cancels the
  /// upstream and the timer.
  public struct CollectByTime<Upstream: Publisher, Context: Scheduler>: Publisher {
    public typealias Output = [Upstream.Output]
    public typealias Failure = Upstream.Failure

    /// The publisher whose values are collected.
    public let upstream: Upstream
    /// How values are grouped.
    public let strategy: TimeGroupingStrategy<Context>
    /// Options for the scheduler.
    public let options: Context.SchedulerOptions?

    /// Creates a publisher that groups `upstream`'s values by `strategy`.
    public init(
      upstream: Upstream, strategy: TimeGroupingStrategy<Context>,
      options: Context.SchedulerOptions?
    ) {
      self.upstream = upstream
      self.strategy = strategy
      self.options = options
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: CollectByTimeSubscription<Upstream.Output, Context, S>(
          strategy: strategy, options: options, downstream: subscriber))
    }
  }
}

extension Publisher {
  /// Collects values and publishes them as arrays on a schedule; see
  /// ``Publishers/CollectByTime``.
  ///
  /// ![Marble diagram: collect(.byTime(scheduler, .seconds(3)))](collect-byTime)
  /// ![Marble diagram: collect(.byTimeOrCount(scheduler, .seconds(3), 2))](collect-byTimeOrCount)
  public func collect<S: Scheduler>(
    _ strategy: Publishers.TimeGroupingStrategy<S>, options: S.SchedulerOptions? = nil
  ) -> Publishers.CollectByTime<Self, S> {
    Publishers.CollectByTime(upstream: self, strategy: strategy, options: options)
  }
}

/// States: `awaitingSubscription` → `collecting` → `finishing` (the upstream finished; the
/// rest waits for demand) → `terminal`.
/// | event | collecting | finishing | terminal |
/// |---|---|---|---|
/// | value | collect it (byTime: ask for one more); count reached (byTimeOrCount): publish | — | drop |
/// | tick | something collected: publish | publish the rest, finish | — |
/// | publish | demand: deliver the array, demand −1; else keep collecting | same, then finish | — |
/// | finish | finishing; publish the rest, finish | — | — |
/// | failure | terminal; drop the collection; deliver it | — | — |
/// | `request(n)` | demand +n (byTime: ask the upstream for one more; byTimeOrCount: for n × count); publish what waited | same | ignore |
/// | `cancel()` | terminal; cancel the timer and the upstream | same | nothing |
@usableFromInline
final class CollectByTimeSubscription<Input, Context: Scheduler, Downstream: Subscriber>:
  Subscriber, Subscription, CustomStringConvertible, CustomReflectable,
  CustomPlaygroundDisplayConvertible, @unchecked Sendable
where Downstream.Input == [Input] {
  // Safety: all mutable state is in `state`'s lock; the upstream, the timer and the scheduler
  // are called after unlocking; the downstream only through `delivery`, which keeps it serial.
  @usableFromInline
  typealias Failure = Downstream.Failure

  @usableFromInline
  struct State {
    @usableFromInline
    var upstream: (any Subscription)?
    @usableFromInline
    var subscribed = false
    @usableFromInline
    var terminal = false
    @usableFromInline
    var finishing = false
    @usableFromInline
    var collected: [Input] = []
    /// Arrays ready to publish, waiting for demand.
    @usableFromInline
    var ready: [[Input]] = []
    @usableFromInline
    var demand = Subscribers.Demand.none
    @usableFromInline
    var timer: (any Cancellable)?

    /// Takes everything collected and ready, to release after unlocking (a value's `deinit`
    /// may send here).
    @inlinable
    mutating func takeAll() -> ([Input], [[Input]]) {
      defer {
        collected = []
        ready = []
      }
      return (collected, ready)
    }

    /// Moves what was collected to `ready`.
    @inlinable
    mutating func cut() {
      guard !collected.isEmpty else { return }
      ready.append(collected)
      collected = []
    }
  }

  @usableFromInline
  enum Next {
    case array([Input])
    case finish
    case stop
  }

  @usableFromInline
  let scheduler: Context
  @usableFromInline
  let interval: Context.SchedulerTimeType.Stride
  @usableFromInline
  let count: Int?
  @usableFromInline
  let options: Context.SchedulerOptions?
  @usableFromInline
  let state = Lock(State())
  @usableFromInline
  var delivery: SerialDelivery<Downstream>!

  @inlinable
  init(
    strategy: Publishers.TimeGroupingStrategy<Context>, options: Context.SchedulerOptions?,
    downstream: Downstream
  ) {
    switch strategy {
    case .byTime(let scheduler, let interval):
      (self.scheduler, self.interval, count) = (scheduler, interval, nil)
    case .byTimeOrCount(let scheduler, let interval, let count):
      if count < 1 { Violation.nonPositiveCount(count, operator: "collect(.byTimeOrCount)") }
      (self.scheduler, self.interval, self.count) = (scheduler, interval, count)
    }
    self.options = options
    delivery = SerialDelivery(downstream) { [unowned self] more in
      state.withLock { $0.demand += more }
    }
  }

  @inlinable
  func receive(subscription: any Subscription) {
    let accepted = state.withLock { state -> Bool in
      guard !state.subscribed, !state.terminal else { return false }
      state.subscribed = true
      state.upstream = subscription
      return true
    }
    guard accepted else { return subscription.cancel() }
    let timer = scheduler.schedule(
      after: scheduler.now.advanced(by: interval), interval: interval,
      tolerance: scheduler.minimumTolerance, options: options
    ) { [weak self] in self?.tick() }
    let stale = state.withLock { state -> (any Cancellable)? in
      guard !state.terminal else { return timer }
      state.timer = timer
      return nil
    }
    stale?.cancel()
    // Nothing is asked of the upstream here: the downstream's requests do that (asking here
    // too made two requests where Combine makes one).
    delivery.downstream?.receive(subscription: self)
  }

  @inlinable
  func receive(_ input: Input) -> Subscribers.Demand {
    let (accepted, full) = state.withLock { state -> (Bool, Bool) in
      guard !state.terminal, !state.finishing, state.subscribed else { return (false, false) }
      state.collected.append(input)
      guard let count, state.collected.count >= count else { return (true, false) }
      state.cut()
      return (true, true)
    }
    if full { publish() }
    return accepted && count == nil ? .max(1) : .none
  }

  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    switch completion {
    case .finished:
      let timer = state.withLock { state -> (any Cancellable)?? in
        guard !state.terminal, !state.finishing, state.subscribed else { return nil }
        state.finishing = true
        state.upstream = nil
        state.cut()
        defer { state.timer = nil }
        return .some(state.timer)
      }
      guard case .some(let timer) = timer else { return }
      timer?.cancel()
      publish()
    case .failure:
      var dropped: ([Input], [[Input]])?
      let timer = state.withLock { state -> (any Cancellable)?? in
        guard !state.terminal, !state.finishing, state.subscribed else { return nil }
        state.terminal = true
        state.upstream = nil
        dropped = state.takeAll()
        defer { state.timer = nil }
        return .some(state.timer)
      }
      withExtendedLifetime(dropped) {}
      guard case .some(let timer) = timer else { return }
      timer?.cancel()
      delivery.send(.completion(completion))
    }
  }

  @inlinable
  func tick() {
    let publishes = state.withLock { state -> Bool in
      guard !state.terminal else { return false }
      state.cut()
      return !state.ready.isEmpty
    }
    if publishes { publish() }
  }

  /// Delivers ready arrays while there is demand; then, when finishing and nothing is left,
  /// the finish.
  @inlinable
  func publish() {
    while true {
      let next = state.withLock { state -> Next in
        guard !state.terminal else { return .stop }
        if !state.ready.isEmpty {
          guard state.demand > 0 else { return .stop }
          if state.demand != .unlimited { state.demand -= 1 }
          return .array(state.ready.removeFirst())
        }
        guard state.finishing else { return .stop }
        state.terminal = true
        return .finish
      }
      switch next {
      case .array(let values):
        let more = delivery.send(.value(values))
        if more > 0 { state.withLock { $0.demand += more } }
      case .finish:
        delivery.send(.completion(.finished))
        return
      case .stop:
        return
      }
    }
  }

  @inlinable
  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    let upstream = state.withLock { state -> (any Subscription)? in
      guard !state.terminal else { return nil }
      state.demand += demand
      return state.upstream
    }
    if let upstream {
      if let count {
        upstream.request(demand == .unlimited ? .unlimited : demand * count)
      } else {
        upstream.request(.max(1))
      }
    }
    publish()
  }

  @inlinable
  func cancel() {
    var dropped: ([Input], [[Input]])?
    let (upstream, timer) = state.withLock { state -> ((any Subscription)?, (any Cancellable)?) in
      state.terminal = true
      dropped = state.takeAll()
      return (state.upstream.take(), state.timer.take())
    }
    withExtendedLifetime(dropped) {}
    timer?.cancel()
    upstream.cancelIfPresent()
    delivery.end()
  }

  @inlinable
  var description: String { "CollectByTime" }
  @inlinable
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @inlinable
  var playgroundDescription: Any { description }
}
