extension Publishers {
  /// Delivers the upstream's values and completion on a scheduler, as Combine's
  /// `receive(on:options:)`.
  ///
  /// **Demand**: requests pass straight upstream; each value returns `.none` to the upstream, and
  /// the demand the downstream returns when it receives the value on the scheduler is requested
  /// from the upstream then. **Ordering**: every value and the completion are delivered in a
  /// scheduled action, serially and in the upstream's order, even on a scheduler that runs actions
  /// concurrently; the completion comes after every value, and nothing is delivered before the
  /// downstream's `receive(subscription:)` has returned. The subscription itself is handed
  /// downstream at once, on the subscribing thread. **Cancellation**: cancels the upstream,
  /// drops what is still waiting for the scheduler and releases the downstream; nothing is
  /// delivered after `cancel()` returns (at most one value already being delivered completes).
  public struct ReceiveOn<Upstream: Publisher, Context: Scheduler>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher from which this publisher receives elements.
    public let upstream: Upstream
    /// The scheduler the publisher is to use for element delivery.
    public let scheduler: Context
    /// Scheduler options that customize the delivery of elements.
    public let options: Context.SchedulerOptions?

    public init(upstream: Upstream, scheduler: Context, options: Context.SchedulerOptions?) {
      self.upstream = upstream
      self.scheduler = scheduler
      self.options = options
    }

    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: ReceiveOnSubscription<Upstream, Context, S>(
          scheduler: scheduler, options: options, downstream: subscriber))
    }
  }
}

/// The subscription of `receive(on:)`.
///
/// States: `awaitingSubscription` → `subscribed(upstream)` → `completing` (the completion waits
/// for the scheduler) → `terminal`.
/// | event | awaiting | subscribed | completing | terminal |
/// |---|---|---|---|---|
/// | subscription `s` | subscribed; hand self downstream | cancel `s` | cancel `s` | cancel `s` |
/// | value | drop | queue it, schedule an action; return `.none` | drop | drop |
/// | completion | drop | queue it, schedule an action: completing | drop | drop |
/// | action runs | — | deliver the oldest queued value (while the subscription is being handed down: reschedule once it is); request what it returns | same; the completion: terminal | nothing |
/// | `request(n)` | ignore | request `n` upstream | ignore | ignore |
/// | `cancel()` | terminal | terminal; cancel upstream, drop the queue | terminal, drop the queue | nothing |
final class ReceiveOnSubscription<Upstream: Publisher, Context: Scheduler, Downstream: Subscriber>:
  Subscriber, Subscription, CustomStringConvertible, CustomReflectable,
  CustomPlaygroundDisplayConvertible, @unchecked Sendable
where Upstream.Output == Downstream.Input, Upstream.Failure == Downstream.Failure {
  // Safety: all mutable state is in `state`'s lock; the downstream, the upstream and the
  // scheduler are called after unlocking, and the hand-off queue lets one thread deliver at a time.
  typealias Input = Upstream.Output
  typealias Failure = Upstream.Failure

  enum Signal {
    case value(Input)
    case completion(Subscribers.Completion<Failure>)
  }

  enum Phase {
    case awaitingSubscription
    case subscribed(any Subscription)
    case completing
    case terminal
  }

  struct State {
    var phase = Phase.awaitingSubscription
    /// Until terminal.
    var downstream: Downstream?
    var queue = HandOffQueue<Signal>()

    /// The upstream while subscribed.
    var upstream: (any Subscription)? {
      if case .subscribed(let upstream) = phase { return upstream }
      return nil
    }

    /// The next signal to deliver and whom to deliver it to (`first`: a scheduled action ran;
    /// otherwise the performer finished one).
    mutating func next(first: Bool) -> (Signal, Downstream)? {
      guard let signal = first ? queue.actionRan() : queue.performed() else { return nil }
      guard let downstream else {
        queue.clear()
        _ = queue.performed()
        return nil
      }
      if case .completion = signal {
        phase = .terminal
        self.downstream = nil
      }
      return (signal, downstream)
    }
  }

  let scheduler: Context
  let options: Context.SchedulerOptions?
  let state: Lock<State>

  init(scheduler: Context, options: Context.SchedulerOptions?, downstream: Downstream) {
    self.scheduler = scheduler
    self.options = options
    state = Lock(State(downstream: downstream))
  }

  func receive(subscription: any Subscription) {
    let downstream = state.withLock { state -> Downstream? in
      guard case .awaitingSubscription = state.phase else { return nil }
      state.phase = .subscribed(subscription)
      // Values the downstream's first request brings wait until it has its subscription.
      state.queue.hold()
      return state.downstream
    }
    guard let downstream else {
      subscription.cancel()
      return
    }
    downstream.receive(subscription: self)
    let waiting = state.withLock { $0.queue.release() }
    for _ in 0..<waiting { scheduler.schedule(options: options) { self.deliver() } }
  }

  func receive(_ input: Input) -> Subscribers.Demand {
    let queued = state.withLock { state -> Bool in
      guard case .subscribed = state.phase else { return false }
      state.queue.submit(.value(input))
      return true
    }
    if queued { scheduler.schedule(options: options) { self.deliver() } }
    return .none
  }

  func receive(completion: Subscribers.Completion<Failure>) {
    let queued = state.withLock { state -> Bool in
      guard case .subscribed = state.phase else { return false }
      state.phase = .completing
      state.queue.submit(.completion(completion))
      return true
    }
    if queued { scheduler.schedule(options: options) { self.deliver() } }
  }

  /// A scheduled action: delivers the signal it stands for (or, if another thread is delivering,
  /// leaves it to that thread), then any signals owed meanwhile.
  func deliver() {
    var next = state.withLock { $0.next(first: true) }
    while let (signal, downstream) = next {
      switch signal {
      case .value(let value):
        let more = downstream.receive(value)
        if more > 0 { state.withLock { $0.upstream }?.request(more) }
      case .completion(let completion):
        downstream.receive(completion: completion)
      }
      next = state.withLock { $0.next(first: false) }
    }
  }

  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    state.withLock { $0.upstream }?.request(demand)
  }

  func cancel() {
    let (upstream, released) = state.withLock { state in
      let upstream = state.upstream
      defer {
        state.phase = .terminal
        state.downstream = nil
        state.queue.clear()
      }
      return (upstream, (state.downstream, state.queue))
    }
    upstream?.cancel()
    withExtendedLifetime(released) {}
  }

  var description: String { "ReceiveOn" }
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  var playgroundDescription: Any { description }
}

extension Publisher {
  /// Delivers this publisher's values and completion on `scheduler`.
  ///
  /// ```swift
  /// search.results.receive(on: DispatchQueue.main).sink { model.results = $0 }
  /// ```
  public func receive<S: Scheduler>(on scheduler: S, options: S.SchedulerOptions? = nil)
    -> Publishers.ReceiveOn<Self, S>
  {
    Publishers.ReceiveOn(upstream: self, scheduler: scheduler, options: options)
  }
}
