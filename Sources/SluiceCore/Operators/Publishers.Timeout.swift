extension Publishers {
  /// A publisher that ends when its upstream sends nothing for `interval`: it fails with
  /// `customError()`, or finishes when there is no custom error — Combine's `Timeout`.
  ///
  /// **Timing**: the clock starts at the subscription, starts again at the downstream's first
  /// request and at every value. **Demand**: passed through. **Ordering**: values, the
  /// completion and the timeout are delivered on `scheduler`, one at a time, in the order they
  /// happened (as `receive(on:)`). **Cancellation**: a timeout or `cancel()` cancels the upstream
  /// and the clock.
  public struct Timeout<Upstream: Publisher, Context: Scheduler>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher being timed.
    public let upstream: Upstream
    /// The longest time allowed without a value.
    public let interval: Context.SchedulerTimeType.Stride
    /// The scheduler the clock and the deliveries run on.
    public let scheduler: Context
    /// Options for the scheduler.
    public let options: Context.SchedulerOptions?
    /// The error to fail with; `nil` finishes instead.
    public let customError: (() -> Upstream.Failure)?

    /// Creates a publisher that ends when `upstream` is silent for `interval`.
    public init(
      upstream: Upstream, interval: Context.SchedulerTimeType.Stride, scheduler: Context,
      options: Context.SchedulerOptions?, customError: (() -> Upstream.Failure)?
    ) {
      self.upstream = upstream
      self.interval = interval
      self.scheduler = scheduler
      self.options = options
      self.customError = customError
    }

    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let (scheduler, options) = (self.scheduler, self.options)
      let hop = SchedulerHopSubscription<Self, S>(
        name: "Timeout", downstream: subscriber,
        hop: { scheduler.schedule(options: options, $0) },
        resume: { scheduler.schedule(options: options, $0) })
      upstream.receive(
        subscriber: TimeoutClock<Upstream.Output, Failure, Context, _>(
          interval: interval, scheduler: scheduler, options: options, customError: customError,
          downstream: hop))
    }
  }
}

extension Publisher {
  /// Ends this publisher when it sends nothing for `interval`: fails with `customError()`, or
  /// finishes when there is none; see ``Publishers/Timeout``.
  public func timeout<S: Scheduler>(
    _ interval: S.SchedulerTimeType.Stride, scheduler: S, options: S.SchedulerOptions? = nil,
    customError: (() -> Failure)? = nil
  ) -> Publishers.Timeout<Self, S> {
    Publishers.Timeout(
      upstream: self, interval: interval, scheduler: scheduler, options: options,
      customError: customError)
  }
}

/// The clock of `timeout`, between the upstream and the scheduler hop that delivers: it passes
/// signals on, restarting its timer, and ends everything with the timeout's completion when
/// the timer fires first. Each timer carries a generation; a stale one does nothing.
///
/// | event | live | terminal |
/// |---|---|---|
/// | upstream subscribes | start the timer; hand self downstream | cancel it |
/// | value | restart the timer; pass it on | drop |
/// | completion | terminal; stop the timer; pass it on | drop |
/// | first `request(n)` | restart the timer; request n | ignore |
/// | timer fires (current generation) | terminal; cancel the upstream; send the timeout's completion | nothing |
/// | `cancel()` | terminal; stop the timer; cancel the upstream | nothing |
final class TimeoutClock<Input, Failure: Error, Context: Scheduler, Downstream: Subscriber>:
  Subscriber, Subscription, CustomStringConvertible, CustomReflectable,
  CustomPlaygroundDisplayConvertible, @unchecked Sendable
where Downstream.Input == Input, Downstream.Failure == Failure {
  // Safety: all mutable state is in `state`'s lock; the upstream, the timer and the downstream
  // (a scheduler hop, which orders what it is handed) are called after unlocking.
  struct State {
    var upstream: (any Subscription)?
    var subscribed = false
    var terminal = false
    var requested = false
    var generation: UInt64 = 0
    var timer: (any Cancellable)?
  }

  let interval: Context.SchedulerTimeType.Stride
  let scheduler: Context
  let options: Context.SchedulerOptions?
  let customError: (() -> Failure)?
  let downstream: Downstream
  let state = Lock(State())

  init(
    interval: Context.SchedulerTimeType.Stride, scheduler: Context,
    options: Context.SchedulerOptions?, customError: (() -> Failure)?, downstream: Downstream
  ) {
    self.interval = interval
    self.scheduler = scheduler
    self.options = options
    self.customError = customError
    self.downstream = downstream
  }

  func receive(subscription: any Subscription) {
    let accepted = state.withLock { state -> Bool in
      guard !state.subscribed, !state.terminal else { return false }
      state.subscribed = true
      state.upstream = subscription
      return true
    }
    guard accepted else { return subscription.cancel() }
    restart()
    downstream.receive(subscription: self)
  }

  func receive(_ input: Input) -> Subscribers.Demand {
    guard state.withLock({ !$0.terminal && $0.upstream != nil }) else { return .none }
    restart()
    return downstream.receive(input)
  }

  func receive(completion: Subscribers.Completion<Failure>) {
    guard let timer = state.withLock({ $0.terminal ? nil : $0.end() }) else { return }
    timer.timer?.cancel()
    downstream.receive(completion: completion)
  }

  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    let (upstream, first) = state.withLock { state -> ((any Subscription)?, Bool) in
      defer { state.requested = true }
      return (state.terminal ? nil : state.upstream, !state.requested)
    }
    if first, upstream != nil { restart() }
    upstream?.request(demand)
  }

  func cancel() {
    guard let ended = state.withLock({ $0.terminal ? nil : $0.end() }) else { return }
    ended.timer?.cancel()
    ended.upstream?.cancel()
  }

  /// Starts the clock again: a new timer, of a new generation.
  private func restart() {
    let generation = state.withLock { state -> UInt64? in
      guard !state.terminal else { return nil }
      state.generation += 1
      return state.generation
    }
    guard let generation else { return }
    let timer = scheduler.schedule(
      after: scheduler.now.advanced(by: interval), interval: interval,
      tolerance: scheduler.minimumTolerance, options: options
    ) { [weak self] in self?.timedOut(generation) }
    let stale = state.withLock { state -> (any Cancellable)? in
      guard !state.terminal, state.generation == generation else { return timer }
      defer { state.timer = timer }
      return state.timer
    }
    stale?.cancel()
  }

  private func timedOut(_ generation: UInt64) {
    let ended = state.withLock { state -> State.Ended? in
      guard !state.terminal, state.generation == generation else { return nil }
      return state.end()
    }
    guard let ended else { return }
    ended.timer?.cancel()
    ended.upstream?.cancel()
    downstream.receive(completion: customError.map { .failure($0()) } ?? .finished)
  }

  var description: String { "Timeout" }
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  var playgroundDescription: Any { description }
}

extension TimeoutClock.State {
  struct Ended {
    let upstream: (any Subscription)?
    let timer: (any Cancellable)?
  }

  /// Ends the clock: what to cancel.
  mutating func end() -> Ended {
    terminal = true
    defer {
      upstream = nil
      timer = nil
    }
    return Ended(upstream: upstream, timer: timer)
  }
}
