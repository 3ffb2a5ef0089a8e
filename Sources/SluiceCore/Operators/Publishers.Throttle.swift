extension Publishers {
  /// A publisher that publishes at most one value per `interval`: the first value of each
  /// interval, or the latest when `latest` is true — Combine's `Throttle`.
  ///
  /// ![Marble diagram: throttle(for: .seconds(3), scheduler: scheduler, latest: false)](throttle)
  ///
  /// **Demand**: asks the upstream for `.unlimited`; a value that arrives when the downstream
  /// has no demand is dropped, and one unit of demand is used when a value is scheduled.
  /// **Timing and ordering**: a value arriving at least `interval` after the last emission is
  /// emitted at once (through the scheduler); later values wait for the interval to end, and the
  /// one kept (first or latest) is emitted then. Every emission runs on `scheduler`, one at a
  /// time. **Completion**: delivered on the scheduler, after a value waiting to be emitted.
  /// **Cancellation** cancels the upstream; nothing scheduled is delivered after it.
  public struct Throttle<Upstream: Publisher, Context: Scheduler>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher whose values are throttled.
    public let upstream: Upstream
    /// The shortest time between two emissions.
    public let interval: Context.SchedulerTimeType.Stride
    /// The scheduler emissions run on.
    public let scheduler: Context
    /// Whether the latest value of an interval is emitted (else the first).
    public let latest: Bool

    /// Creates a publisher that emits at most one value per `interval`.
    public init(
      upstream: Upstream, interval: Context.SchedulerTimeType.Stride, scheduler: Context,
      latest: Bool
    ) {
      self.upstream = upstream
      self.interval = interval
      self.scheduler = scheduler
      self.latest = latest
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: ThrottleSubscription<Upstream, Context, S>(
          interval: interval, scheduler: scheduler, latest: latest, downstream: subscriber))
    }
  }
}

extension Publisher {
  /// Publishes at most one value per `interval`, the first or the latest of each; see
  /// ``Publishers/Throttle``.
  ///
  /// ![Marble diagram: throttle(for: .seconds(3), scheduler: scheduler, latest: false)](throttle)
  /// ![Marble diagram of throttle-latest, drawn from a run](throttle-latest)
  public func throttle<S: Scheduler>(
    for interval: S.SchedulerTimeType.Stride, scheduler: S, latest: Bool
  ) -> Publishers.Throttle<Self, S> {
    Publishers.Throttle(upstream: self, interval: interval, scheduler: scheduler, latest: latest)
  }
}

/// States: `awaitingSubscription` → `subscribed` → `completing` (a completion waits for its
/// emission) → `terminal`.
/// | event | subscribed, nothing scheduled | subscribed, an emission scheduled | completing / terminal |
/// |---|---|---|---|
/// | value, no demand | drop | drop | drop |
/// | value | demand −1; schedule its emission at max(now, last emission + interval) | latest: replace the waiting value; else drop | drop |
/// | completion | completing; schedule its emission | completing; emitted after the value | drop |
/// | emission | — | deliver the value (then the completion) | deliver the completion |
/// | `request(n)` | demand +n | demand +n | ignore |
/// | `cancel()` | terminal; cancel the upstream | same | terminal |
@usableFromInline
final class ThrottleSubscription<Upstream: Publisher, Context: Scheduler, Downstream: Subscriber>:
  Subscriber, Subscription, CustomStringConvertible, CustomReflectable,
  CustomPlaygroundDisplayConvertible, @unchecked Sendable
where Upstream.Output == Downstream.Input, Upstream.Failure == Downstream.Failure {
  // Safety: all mutable state is in `state`'s lock; the upstream and the scheduler are called
  // after unlocking; the downstream only through `delivery`, which keeps it serial.
  @usableFromInline
  typealias Input = Upstream.Output
  @usableFromInline
  typealias Failure = Upstream.Failure

  @usableFromInline
  struct State {
    @usableFromInline
    var upstream: (any Subscription)?
    /// Whether `upstream` is set: values test this flag, not the existential (whose copy costs
    /// value-witness calls).
    @usableFromInline
    var live = false
    @usableFromInline
    var subscribed = false
    @usableFromInline
    var terminal = false
    @usableFromInline
    var demand = Subscribers.Demand.none
    @usableFromInline
    var lastEmission: Context.SchedulerTimeType?
    @usableFromInline
    var pendingValue: Input?
    @usableFromInline
    var pendingCompletion: Subscribers.Completion<Failure>?
    @inlinable
    var scheduled: Bool { pendingValue != nil || pendingCompletion != nil }
  }

  /// What a value does, decided under the lock.
  @usableFromInline
  enum Arrival {
    /// Not live: dropped without reading the clock.
    case dropped
    /// Kept as the pending value, or dropped for lack of demand.
    case kept
    /// Starts an interval: its emission is scheduled.
    case startsInterval
  }

  @usableFromInline
  let interval: Context.SchedulerTimeType.Stride
  @usableFromInline
  let scheduler: Context
  @usableFromInline
  let latest: Bool
  @usableFromInline
  let state = Lock(State())
  @usableFromInline
  var delivery: SerialDelivery<Downstream>!

  @inlinable
  init(
    interval: Context.SchedulerTimeType.Stride, scheduler: Context, latest: Bool,
    downstream: Downstream
  ) {
    self.interval = interval
    self.scheduler = scheduler
    self.latest = latest
    delivery = SerialDelivery(downstream) { [unowned self] more in
      state.withLock { $0.demand += more }
    }
    // Combine reads the clock when its subscriber is created, when it is subscribed, for each
    // value and the completion while live, and when it emits a value: a scheduler that logs
    // its calls sees the same calls here.
    _ = scheduler.now
  }

  @inlinable
  func receive(subscription: any Subscription) {
    let accepted = state.withLock { state -> Bool in
      guard !state.subscribed, !state.terminal else { return false }
      state.subscribed = true
      state.upstream = subscription
      state.live = true
      return true
    }
    guard accepted else { return subscription.cancel() }
    _ = scheduler.now
    subscription.request(.unlimited)
    delivery.downstream?.receive(subscription: self)
  }

  @inlinable
  func receive(_ input: Input) -> Subscribers.Demand {
    // Most values of a burst find an emission already scheduled: they take the lock once. The
    // clock (not read under the lock) is read for every value while live, as Combine does.
    // A value replaced is released after unlocking (its `deinit` may send here).
    var replaced: Input?
    defer { withExtendedLifetime(replaced) {} }
    let arrival = state.withLock { state -> Arrival in
      guard state.live, state.pendingCompletion == nil else { return .dropped }
      guard state.demand > 0 else { return .kept }
      if state.scheduled {
        if latest {
          replaced = state.pendingValue.take()
          state.pendingValue = input
        }
        return .kept
      }
      return .startsInterval
    }
    guard arrival != .dropped else { return .none }
    let now = scheduler.now
    guard arrival == .startsInterval else { return .none }
    let due = state.withLock { state -> Context.SchedulerTimeType?? in
      // Checked again: a `cancel()` or `request` may have come in meanwhile.
      guard state.live, state.pendingCompletion == nil, state.demand > 0,
        !state.scheduled
      else {
        return nil
      }
      if state.demand != .unlimited { state.demand -= 1 }
      replaced = state.pendingValue.take()
      state.pendingValue = input
      guard let last = state.lastEmission else { return .some(nil) }
      let earliest = last.advanced(by: interval)
      return .some(earliest > now ? earliest : nil)
    }
    switch due {
    case .none: break
    case .some(.none): scheduler.schedule { [weak self] in self?.emit() }
    case .some(.some(let date)): scheduler.schedule(after: date) { [weak self] in self?.emit() }
    }
    return .none
  }

  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    var released: (any Subscription)?
    let schedules = state.withLock { state -> Bool? in
      guard state.live, state.pendingCompletion == nil else { return nil }
      state.live = false
      released = state.upstream.take()
      defer { state.pendingCompletion = completion }
      return !state.scheduled
    }
    withExtendedLifetime(released) {}
    guard let schedules else { return }
    _ = scheduler.now
    if schedules { scheduler.schedule { [weak self] in self?.emit() } }
  }

  @inlinable
  func emit() {
    // The clock is read only to emit a value (not for the completion, not once terminal).
    let emitsValue = state.withLock { state in
      !state.terminal && state.pendingValue != nil && state.pendingCompletion == nil
    }
    let now = emitsValue ? scheduler.now : nil
    let (value, completion) = state.withLock {
      state -> (Input?, Subscribers.Completion<Failure>?) in
      guard !state.terminal else { return (nil, nil) }
      if state.pendingValue != nil { state.lastEmission = now ?? state.lastEmission }
      defer {
        state.pendingValue = nil
        state.pendingCompletion = nil
      }
      if state.pendingCompletion != nil { state.terminal = true }
      return (state.pendingValue, state.pendingCompletion)
    }
    if value != nil, completion == nil, now == nil {
      // A value became pending between the two locks: its emission time is now.
      let late = scheduler.now
      state.withLock { $0.lastEmission = late }
    }
    if let value {
      let more = delivery.send(.value(value))
      if more > 0 { state.withLock { $0.demand += more } }
    }
    if let completion { delivery.send(.completion(completion)) }
  }

  @inlinable
  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    state.withLock { state in
      if !state.terminal { state.demand += demand }
    }
  }

  @inlinable
  func cancel() {
    // The pending value is released after unlocking (its `deinit` may send here).
    let (upstream, pending) = state.withLock { state -> ((any Subscription)?, Input?) in
      state.terminal = true
      state.live = false
      state.pendingCompletion = nil
      return (state.upstream.take(), state.pendingValue.take())
    }
    withExtendedLifetime(pending) {}
    upstream?.cancel()
    delivery.end()
  }

  @inlinable
  var description: String { "Throttle" }
  @inlinable
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @inlinable
  var playgroundDescription: Any { description }
}
