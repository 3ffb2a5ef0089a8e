extension Publishers {
  /// A publisher that replaces each value with the time since the previous one (the first:
  /// since the subscription), measured with `scheduler`'s clock — Combine's `MeasureInterval`.
  ///
  /// ![Marble diagram: measureInterval(using: scheduler)](measureInterval)
  ///
  /// **Demand**: passed through (demand the downstream returns is requested from the upstream).
  /// **Ordering**: one interval per value, on the thread the value arrives on.
  /// **Cancellation** cancels the upstream.
  public struct MeasureInterval<Upstream: Publisher, Context: Scheduler>: Publisher {
    public typealias Output = Context.SchedulerTimeType.Stride
    public typealias Failure = Upstream.Failure

    /// The publisher whose values are timed.
    public let upstream: Upstream
    /// The scheduler whose clock measures.
    public let scheduler: Context

    /// Creates a publisher that measures the time between `upstream`'s values.
    public init(upstream: Upstream, scheduler: Context) {
      self.upstream = upstream
      self.scheduler = scheduler
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: MeasureIntervalSubscription<Upstream.Output, Context, S>(
          scheduler: scheduler, downstream: subscriber))
    }
  }
}

extension Publisher {
  /// Publishes the time between this publisher's values; see ``Publishers/MeasureInterval``.
  ///
  /// ![Marble diagram: measureInterval(using: scheduler)](measureInterval)
  public func measureInterval<S: Scheduler>(
    using scheduler: S, options: S.SchedulerOptions? = nil
  ) -> Publishers.MeasureInterval<Self, S> {
    Publishers.MeasureInterval(upstream: self, scheduler: scheduler)
  }
}

/// States: `awaitingSubscription` → `subscribed(upstream, last)` → `terminal`.
@usableFromInline
final class MeasureIntervalSubscription<Input, Context: Scheduler, Downstream: Subscriber>:
  Subscriber, Subscription, CustomStringConvertible, CustomReflectable,
  CustomPlaygroundDisplayConvertible, @unchecked Sendable
where Downstream.Input == Context.SchedulerTimeType.Stride {
  // Safety: all mutable state is in `state`'s lock; the upstream and the downstream are called
  // after unlocking (signals from the upstream are serial).
  @usableFromInline
  typealias Failure = Downstream.Failure

  @usableFromInline
  struct State {
    @usableFromInline
    var upstream: (any Subscription)?
    @usableFromInline
    var last: Context.SchedulerTimeType?
    @usableFromInline
    var subscribed = false
    @usableFromInline
    var downstream: Downstream?

    @inlinable
    init(downstream: Downstream) { self.downstream = downstream }
  }

  @usableFromInline
  let scheduler: Context
  @usableFromInline
  let state: Lock<State>

  @inlinable
  init(scheduler: Context, downstream: Downstream) {
    self.scheduler = scheduler
    state = Lock(State(downstream: downstream))
  }

  @inlinable
  func receive(subscription: any Subscription) {
    let downstream = state.withLock { state -> Downstream? in
      guard !state.subscribed, state.downstream != nil else { return nil }
      state.subscribed = true
      state.upstream = subscription
      return state.downstream
    }
    guard let downstream else { return subscription.cancel() }
    // The clock is read only for a subscription accepted, as Combine; a value cannot come
    // before `last` is set (the downstream has not requested yet).
    let now = scheduler.now
    state.withLock { state in if state.upstream != nil { state.last = now } }
    downstream.receive(subscription: self)
  }

  @inlinable
  func receive(_ input: Input) -> Subscribers.Demand {
    // As Combine, the clock is read only while measuring (not after a cancel or completion).
    guard state.withLock({ $0.last != nil }) else { return .none }
    let now = scheduler.now
    let measured = state.withLock { state -> (Context.SchedulerTimeType.Stride, Downstream)? in
      guard let last = state.last, let downstream = state.downstream else { return nil }
      state.last = now
      return (last.distance(to: now), downstream)
    }
    guard let (interval, downstream) = measured else { return .none }
    let more = downstream.receive(interval)
    if more > 0 { state.withLock { $0.upstream }?.request(more) }
    return .none
  }

  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    let downstream = state.withLock { state -> Downstream? in
      guard state.upstream != nil else { return nil }
      state.upstream = nil
      state.last = nil
      defer { state.downstream = nil }
      return state.downstream
    }
    downstream?.receive(completion: completion)
  }

  @inlinable
  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    state.withLock { $0.upstream }?.request(demand)
  }

  @inlinable
  func cancel() {
    let (upstream, released) = state.withLock { state -> ((any Subscription)?, Downstream?) in
      defer {
        state.upstream = nil
        state.last = nil
        state.downstream = nil
      }
      return (state.upstream, state.downstream)
    }
    upstream?.cancel()
    withExtendedLifetime(released) {}
  }

  @inlinable
  var description: String { "MeasureInterval" }
  @inlinable
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @inlinable
  var playgroundDescription: Any { description }
}
