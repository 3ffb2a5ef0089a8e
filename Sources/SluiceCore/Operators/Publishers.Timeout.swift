extension Publishers {
  /// A publisher that ends when its upstream sends nothing for `interval`: it fails with
  /// `customError()`, or finishes when there is no custom error — Combine's `Timeout`.
  ///
  /// ![Marble diagram: timeout(.seconds(3), scheduler: scheduler)](timeout)
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

    @inlinable
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
          downstream: hop, timesOut: { hop.receiveInAction(completion: $0) }))
    }
  }
}

extension Publisher {
  /// Ends this publisher when it sends nothing for `interval`: fails with `customError()`, or
  /// finishes when there is none; see ``Publishers/Timeout``.
  ///
  /// ![Marble diagram: timeout(.seconds(3), scheduler: scheduler)](timeout)
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
/// | timer fires (current generation) | terminal; cancel the upstream; send the timeout's completion, delivered in the timer's action (as Combine) | nothing |
/// | `cancel()` | terminal; stop the timer; cancel the upstream | nothing |
@usableFromInline
final class TimeoutClock<Input, Failure: Error, Context: Scheduler, Downstream: Subscriber>:
  Subscriber, Subscription, CustomStringConvertible, CustomReflectable,
  CustomPlaygroundDisplayConvertible, @unchecked Sendable
where Downstream.Input == Input, Downstream.Failure == Failure {
  // Safety: all mutable state is in `state`'s lock; the upstream, the timer and the downstream
  // (a scheduler hop, which orders what it is handed) are called after unlocking.
  @usableFromInline
  struct State {
    @usableFromInline
    var upstream: (any Subscription)?
    @usableFromInline
    var subscribed = false
    @usableFromInline
    var terminal = false
    @usableFromInline
    var requested = false
    @usableFromInline
    var generation: UInt64 = 0
    @usableFromInline
    var timer: (any Cancellable)?
  }

  @usableFromInline
  let interval: Context.SchedulerTimeType.Stride
  @usableFromInline
  let scheduler: Context
  @usableFromInline
  let options: Context.SchedulerOptions?
  @usableFromInline
  let customError: (() -> Failure)?
  @usableFromInline
  let downstream: Downstream
  /// Delivers the timeout's completion from inside the timer's action.
  @usableFromInline
  let timesOut: (Subscribers.Completion<Failure>) -> Void
  @usableFromInline
  let state = Lock(State())

  @inlinable
  init(
    interval: Context.SchedulerTimeType.Stride, scheduler: Context,
    options: Context.SchedulerOptions?, customError: (() -> Failure)?, downstream: Downstream,
    timesOut: @escaping (Subscribers.Completion<Failure>) -> Void
  ) {
    self.timesOut = timesOut
    self.interval = interval
    self.scheduler = scheduler
    self.options = options
    self.customError = customError
    self.downstream = downstream
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
    restart()
    downstream.receive(subscription: self)
  }

  @inlinable
  func receive(_ input: Input) -> Subscribers.Demand {
    // `subscribed` and not terminal: the upstream is set (testing the flags copies no existential).
    guard state.withLock({ $0.subscribed && !$0.terminal }) else { return .none }
    restart()
    return downstream.receive(input)
  }

  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    guard let timer = state.withLock({ $0.terminal ? nil : $0.end() }) else { return }
    timer.timer?.cancel()
    downstream.receive(completion: completion)
  }

  @inlinable
  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    let (upstream, first) = state.withLock { state -> ((any Subscription)?, Bool) in
      defer { state.requested = true }
      return (state.terminal ? nil : state.upstream, !state.requested)
    }
    if first, upstream != nil { restart() }
    upstream?.request(demand)
  }

  @inlinable
  func cancel() {
    guard let ended = state.withLock({ $0.terminal ? nil : $0.end() }) else { return }
    ended.timer?.cancel()
    ended.upstream?.cancel()
  }

  /// Starts the clock again: a new timer, of a new generation.
  @inlinable
  func restart() {
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

  @inlinable
  func timedOut(_ generation: UInt64) {
    let ended = state.withLock { state -> State.Ended? in
      guard !state.terminal, state.generation == generation else { return nil }
      return state.end()
    }
    guard let ended else { return }
    ended.timer?.cancel()
    ended.upstream?.cancel()
    timesOut(customError.map { .failure($0()) } ?? .finished)
  }

  @inlinable
  var description: String { "Timeout" }
  @inlinable
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @inlinable
  var playgroundDescription: Any { description }
}

extension TimeoutClock.State {
  @usableFromInline
  struct Ended {
    @usableFromInline
    let upstream: (any Subscription)?
    @usableFromInline
    let timer: (any Cancellable)?

    @inlinable
    init(upstream: (any Subscription)?, timer: (any Cancellable)?) {
      self.upstream = upstream
      self.timer = timer
    }
  }

  /// Ends the clock: what to cancel.
  @inlinable
  mutating func end() -> Ended {
    terminal = true
    defer {
      upstream = nil
      timer = nil
    }
    return Ended(upstream: upstream, timer: timer)
  }
}
