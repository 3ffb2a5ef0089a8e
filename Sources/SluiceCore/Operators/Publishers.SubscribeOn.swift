extension Publishers {
  /// Performs the subscription to the upstream, and every request and cancel sent to it, on a
  /// scheduler, as Combine's `subscribe(on:options:)`.
  ///
  /// ![Marble diagram: subscribe(on: scheduler)](subscribe-on)
  ///
  /// **Demand**: each request is passed upstream in a scheduled action, in the order made.
  /// **Ordering**: values and the completion pass through on whatever thread the upstream sends
  /// them (use `receive(on:)` to move them). Requests and the cancel reach the upstream one at a
  /// time, in order, even on a scheduler that runs actions concurrently. **Cancellation**: the
  /// downstream is released at once and receives nothing more; the upstream is cancelled in a
  /// scheduled action. A cancel made before the upstream subscription arrives is honoured when it
  /// does. Once the upstream completes, its subscription and the downstream are both released
  /// (so a subscription that keeps its subscriber, such as `share()`'s, cannot keep the pair
  /// alive).
  public struct SubscribeOn<Upstream: Publisher, Context: Scheduler>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher from which this publisher receives elements.
    public let upstream: Upstream
    /// The scheduler used to subscribe, request and cancel.
    public let scheduler: Context
    /// Scheduler options that customize those actions.
    public let options: Context.SchedulerOptions?

    /// Creates a publisher that subscribes to `upstream`, and calls it, on `scheduler`.
    public init(upstream: Upstream, scheduler: Context, options: Context.SchedulerOptions?) {
      self.upstream = upstream
      self.scheduler = scheduler
      self.options = options
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let inner = SubscribeOnSubscription<Upstream, Context, S>(
        scheduler: scheduler, options: options, downstream: subscriber)
      let upstream = self.upstream
      scheduler.schedule(options: options) { upstream.receive(subscriber: inner) }
    }
  }
}

/// The subscription of `subscribe(on:)`.
///
/// States: `awaitingSubscription` → `subscribed(upstream)` → `terminal`.
/// | event | awaiting | subscribed | terminal |
/// |---|---|---|---|
/// | subscription `s` | subscribed; hand self downstream | cancel `s` | cancel `s` (an early cancel) |
/// | value / completion | drop | pass downstream (completion: terminal, release both sides) | drop |
/// | `request(n)` | ignore | queue a request, schedule an action | ignore |
/// | `cancel()` | terminal | terminal; queue the cancel, schedule an action | nothing |
/// | action runs | — | perform the oldest queued request or cancel upstream (another thread performing: leave it to that thread, which hands it back to the scheduler after a batch) | same |
@usableFromInline
final class SubscribeOnSubscription<
  Upstream: Publisher, Context: Scheduler, Downstream: Subscriber
>: Subscriber, Subscription, CustomStringConvertible, CustomReflectable,
  CustomPlaygroundDisplayConvertible, @unchecked Sendable
where Upstream.Output == Downstream.Input, Upstream.Failure == Downstream.Failure {
  // Safety: all mutable state is in `state`'s lock; the downstream, the upstream and the
  // scheduler are called after unlocking, and the hand-off queue lets one thread call the
  // upstream at a time.
  @usableFromInline
  typealias Input = Upstream.Output
  @usableFromInline
  typealias Failure = Upstream.Failure

  @usableFromInline
  enum Call {
    case request(Subscribers.Demand)
    case cancel
  }

  @usableFromInline
  enum Phase {
    case awaitingSubscription
    case subscribed
    case terminal
  }

  @usableFromInline
  struct State {
    @usableFromInline
    var phase = Phase.awaitingSubscription
    /// Until terminal.
    @usableFromInline
    var downstream: Downstream?

    @inlinable
    init(downstream: Downstream) { self.downstream = downstream }
    /// Kept until the queued cancel reached it, or the upstream completed.
    @usableFromInline
    var upstream: (any Subscription)?
    @usableFromInline
    var queue = HandOffQueue<Call>()
  }

  @usableFromInline
  let scheduler: Context
  @usableFromInline
  let options: Context.SchedulerOptions?
  @usableFromInline
  let state: Lock<State>

  @inlinable
  init(scheduler: Context, options: Context.SchedulerOptions?, downstream: Downstream) {
    self.scheduler = scheduler
    self.options = options
    state = Lock(State(downstream: downstream))
  }

  @inlinable
  func receive(subscription: any Subscription) {
    let downstream = state.withLock { state -> Downstream? in
      guard case .awaitingSubscription = state.phase else { return nil }
      state.phase = .subscribed
      state.upstream = subscription
      return state.downstream
    }
    guard let downstream else {
      subscription.cancel()
      return
    }
    downstream.receive(subscription: self)
  }

  @inlinable
  func receive(_ input: Input) -> Subscribers.Demand {
    let downstream = state.withLock { state -> Downstream? in
      guard case .subscribed = state.phase else { return nil }
      return state.downstream
    }
    return downstream?.receive(input) ?? .none
  }

  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    // The upstream completed: its subscription is released with the downstream (a queued
    // request finds no upstream and is dropped).
    let (downstream, upstream) = state.withLock {
      state -> (Downstream?, (any Subscription)?) in
      guard case .subscribed = state.phase else { return (nil, nil) }
      state.phase = .terminal
      defer {
        state.downstream = nil
        state.upstream = nil
      }
      return (state.downstream, state.upstream)
    }
    withExtendedLifetime(upstream) { downstream?.receive(completion: completion) }
  }

  @inlinable
  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    submit(.request(demand))
  }

  @inlinable
  func cancel() {
    let (queued, released) = state.withLock { state -> (Bool, Downstream?) in
      let wasSubscribed: Bool
      switch state.phase {
      case .subscribed: wasSubscribed = true
      case .awaitingSubscription: wasSubscribed = false
      case .terminal: return (false, nil)
      }
      state.phase = .terminal
      defer { state.downstream = nil }
      if wasSubscribed { state.queue.submit(.cancel) }
      return (wasSubscribed, state.downstream)
    }
    withExtendedLifetime(released) {}
    if queued { scheduler.schedule(options: options) { self.perform() } }
  }

  @inlinable
  func submit(_ call: Call) {
    let queued = state.withLock { state -> Bool in
      guard case .subscribed = state.phase else { return false }
      state.queue.submit(call)
      return true
    }
    if queued { scheduler.schedule(options: options) { self.perform() } }
  }

  /// A scheduled action: makes the call it stands for (or leaves it to the thread already making
  /// calls), then the calls owed meanwhile — after a batch of them, if other threads' actions are
  /// owed, it hands one action back to the scheduler and the rest to the next run
  /// (``HandOffQueue``), and returns.
  @inlinable
  func perform() {
    let thread = currentThreadIdentity()
    var next = state.withLock { state in
      state.queue.actionRan(on: thread).map { ($0, state.upstream) }
    }
    while let (call, upstream) = next {
      switch call {
      case .request(let demand): upstream?.request(demand)
      case .cancel:
        upstream?.cancel()
        state.withLock { $0.upstream = nil }
      }
      let step = state.withLock { state -> HandOffQueue<(Call, (any Subscription)?)>.Next in
        switch state.queue.performed() {
        case .perform(let call): .perform((call, state.upstream))
        case .idle: .idle
        case .yield: .yield
        }
      }
      switch step {
      case .perform(let item): next = item
      case .idle: next = nil
      case .yield:
        scheduler.schedule(options: options) { self.perform() }
        state.withLock { $0.queue.yielded() }
        next = nil
      }
    }
  }

  @inlinable
  var description: String { "SubscribeOn" }
  @inlinable
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @inlinable
  var playgroundDescription: Any { description }
}

extension Publisher {
  /// Subscribes to this publisher, and sends it requests and cancels, on `scheduler`.
  ///
  /// ![Marble diagram: subscribe(on: scheduler)](subscribe-on)
  ///
  /// ```swift
  /// expensiveWork.subscribe(on: DispatchQueue.global()).receive(on: DispatchQueue.main)
  /// ```
  public func subscribe<S: Scheduler>(on scheduler: S, options: S.SchedulerOptions? = nil)
    -> Publishers.SubscribeOn<Self, S>
  {
    Publishers.SubscribeOn(upstream: self, scheduler: scheduler, options: options)
  }
}
