public import SluiceCore

/// A publisher that plays a marble diagram on a ``TestScheduler``, and logs what each subscriber
/// did (``subscriptionLogs``: subscription, requests, cancellation, in ticks).
///
/// Made by ``TestScheduler/coldPublisher(_:values:failure:tick:)`` or
/// ``TestScheduler/hotPublisher(_:values:failure:tick:)`` (and their forms for publishers that
/// cannot fail):
/// - **cold**: each subscriber gets the whole diagram, tick 0 being the tick it subscribed at.
///   **Demand**: a value whose tick has come waits until the subscriber has demand (the
///   subscriber sees it later, as a real cold publisher would deliver it); the completion waits
///   only for the values before it.
/// - **hot**: the diagram plays once, tick 0 (`^`, or the first character) being the time the
///   publisher was made; a subscriber sees what happens after it subscribed. **Demand**: as a
///   `PassthroughSubject`, a value sent while a subscriber has no demand is dropped for it.
///
/// **Ordering**: the diagram's. **Cancellation**: nothing is delivered after `cancel()`; the
/// tick of the cancel is logged.
///
/// ```swift
/// let scheduler = DispatchQueue.test
/// let input = try scheduler.coldPublisher("-a-b|", values: ["a": 1, "b": 2])
/// let recording = scheduler.recordMarbles(input.map { $0 * 10 })
/// recording.marbles(values: ["x": 10, "y": 20])   // "-x-y|"
/// input.subscriptionLogs[0].marbles               // "^"
/// ```
public final class MarblePublisher<Output, Failure: Error>: Publisher, @unchecked Sendable {
  // Safety: the logs are in `logs`' lock; the clock's closures call the test scheduler, which is
  // thread-safe; subscribers are called after unlocking.
  /// The diagram being played.
  public let marbles: Marbles
  let signals: [(tick: Int, signal: MarbleSignal<Output, Failure>)]
  let clock: MarbleClock
  /// For a hot publisher: the subject every subscriber attaches to.
  let hotSubject: PassthroughSubject<Output, Failure>?
  let logs = Lock([MarbleSubscriptionLog]())
  /// What happened between the publisher and each subscriber (by its index in `logs`), in the
  /// order it happened: what ``MarbleDiagram`` draws.
  let timeline = Lock([MarbleEvent<Output, Failure>]())

  init(
    marbles: Marbles, signals: [(tick: Int, signal: MarbleSignal<Output, Failure>)],
    clock: MarbleClock, hot: Bool
  ) {
    self.marbles = marbles
    self.signals = signals
    self.clock = clock
    guard hot else {
      hotSubject = nil
      return
    }
    let subject = PassthroughSubject<Output, Failure>()
    hotSubject = subject
    for (tick, signal) in signals where tick >= 0 {
      clock.schedule(tick) {
        switch signal {
        case .value(let value): subject.send(value)
        case .completion(let completion): subject.send(completion: completion)
        }
      }
    }
  }

  /// What each subscriber did, in subscription order.
  public var subscriptionLogs: [MarbleSubscriptionLog] { logs.withLock { $0 } }

  public func receive<S: Subscriber>(subscriber: S) where Output == S.Input, Failure == S.Failure {
    let tick = clock.currentTick()
    let index = logs.withLock { logs in
      logs.append(MarbleSubscriptionLog(subscribedAt: tick))
      return logs.count - 1
    }
    timeline.withLock { $0.append(MarbleEvent(subscription: index, tick: tick, kind: .subscribed)) }
    if let hotSubject {
      hotSubject.subscribe(
        LoggedSubscription(publisher: self, index: index, downstream: subscriber))
    } else {
      ColdMarbleSubscription(publisher: self, index: index, downstream: subscriber).start()
    }
  }

  func logRequest(_ demand: Subscribers.Demand, index: Int) {
    let tick = clock.currentTick()
    logs.withLock { $0[index].requests.append(.init(tick: tick, demand: demand)) }
    let event = MarbleEvent<Output, Failure>(
      subscription: index, tick: tick, kind: .requested(demand))
    timeline.withLock { $0.append(event) }
  }

  func logDelivery(_ signal: MarbleSignal<Output, Failure>, index: Int) {
    let event = MarbleEvent(
      subscription: index, tick: clock.currentTick(), kind: .delivered(signal))
    timeline.withLock { $0.append(event) }
  }

  func logCancel(index: Int) {
    let tick = clock.currentTick()
    let first = logs.withLock { logs in
      guard logs[index].cancelledAt == nil else { return false }
      logs[index].cancelledAt = tick
      return true
    }
    guard first else { return }
    timeline.withLock { $0.append(MarbleEvent(subscription: index, tick: tick, kind: .cancelled)) }
  }
}

/// What happened between a marble publisher and one of its subscribers, at a tick.
struct MarbleEvent<Output, Failure: Error> {
  enum Kind {
    case subscribed
    case requested(Subscribers.Demand)
    case delivered(MarbleSignal<Output, Failure>)
    case cancelled
  }

  let subscription: Int
  let tick: Int
  let kind: Kind
}

/// A signal a marble publisher sends.
enum MarbleSignal<Output, Failure: Error> {
  case value(Output)
  case completion(Subscribers.Completion<Failure>)
}

/// A hot publisher's subscription: forwards everything, logging requests and the cancel.
private final class LoggedSubscription<Downstream: Subscriber>: Subscriber, Subscription,
  @unchecked Sendable
{
  // Safety: `upstream` is in a lock; every other field is immutable.
  typealias Input = Downstream.Input
  typealias Failure = Downstream.Failure

  let publisher: MarblePublisher<Input, Failure>
  let index: Int
  let downstream: Downstream
  let upstream = Lock<(any Subscription)?>(nil)

  init(publisher: MarblePublisher<Input, Failure>, index: Int, downstream: Downstream) {
    self.publisher = publisher
    self.index = index
    self.downstream = downstream
  }

  func receive(subscription: any Subscription) {
    upstream.withLock { $0 = subscription }
    downstream.receive(subscription: self)
  }

  func receive(_ input: Input) -> Subscribers.Demand {
    publisher.logDelivery(.value(input), index: index)
    let more = downstream.receive(input)
    if more > 0 { publisher.logRequest(more, index: index) }
    return more
  }

  func receive(completion: Subscribers.Completion<Failure>) {
    publisher.logDelivery(.completion(completion), index: index)
    downstream.receive(completion: completion)
  }

  func request(_ demand: Subscribers.Demand) {
    publisher.logRequest(demand, index: index)
    upstream.withLock { $0 }?.request(demand)
  }

  func cancel() {
    publisher.logCancel(index: index)
    upstream.withLock { upstream in
      defer { upstream = nil }
      return upstream
    }?.cancel()
  }

  var description: String { "MarblePublisher" }
}

/// The state of a cold marble subscription, as a pure state machine.
///
/// States: `live` (idle, or with a drainer delivering) → `terminal`.
/// | event | live, idle | live, draining | terminal |
/// |---|---|---|---|
/// | `due(s)` (a tick came) | queue `s`, become drainer | queue `s` | ignore |
/// | `requested(n)` | demand +n, become drainer if something is queued | demand +n | ignore |
/// | `cancelled` | terminal, drop the queue and the downstream | same | nothing |
/// | `next()` (drainer) | — | a value with demand: demand −1, deliver; the completion: terminal, deliver; else idle | idle |
private struct ColdMarbleState<Downstream: Subscriber> {
  var downstream: Downstream?
  var demand = Subscribers.Demand.none
  var queue: [MarbleSignal<Downstream.Input, Downstream.Failure>] = []
  var draining = false

  /// `true` when the caller became the drainer.
  mutating func due(_ signal: MarbleSignal<Downstream.Input, Downstream.Failure>) -> Bool {
    guard downstream != nil else { return false }
    queue.append(signal)
    return becomeDrainer()
  }

  mutating func requested(_ more: Subscribers.Demand) -> Bool {
    guard downstream != nil else { return false }
    demand += more
    return becomeDrainer()
  }

  mutating func becomeDrainer() -> Bool {
    guard !draining, !queue.isEmpty else { return false }
    draining = true
    return true
  }

  /// The next signal for the drainer to deliver, with the subscriber; `nil` ends the drain.
  mutating func next() -> (MarbleSignal<Downstream.Input, Downstream.Failure>, Downstream)? {
    guard let downstream, let first = queue.first else {
      draining = false
      return nil
    }
    switch first {
    case .value:
      guard demand > 0 else {
        draining = false
        return nil
      }
      demand -= 1
    case .completion:
      self.downstream = nil
    }
    queue.removeFirst()
    return (first, downstream)
  }

  /// The subscriber and the queue, to release after unlocking; `nil` when already terminal.
  mutating func cancelled() -> (Downstream, [MarbleSignal<Downstream.Input, Downstream.Failure>])? {
    guard let downstream else { return nil }
    defer {
      self.downstream = nil
      queue = []
    }
    return (downstream, queue)
  }
}

/// A cold marble publisher's subscription: schedules the diagram's ticks from its subscription
/// and delivers each signal when its tick has come and, for a value, the subscriber has demand.
private final class ColdMarbleSubscription<Downstream: Subscriber>: Subscription,
  @unchecked Sendable
{
  // Safety: all mutable state is in `state`'s lock; the subscriber is called by the one drainer
  // the state elects, after unlocking.
  typealias Input = Downstream.Input
  typealias Failure = Downstream.Failure

  let publisher: MarblePublisher<Input, Failure>
  let index: Int
  let state: Lock<ColdMarbleState<Downstream>>

  init(publisher: MarblePublisher<Input, Failure>, index: Int, downstream: Downstream) {
    self.publisher = publisher
    self.index = index
    state = Lock(ColdMarbleState(downstream: downstream))
  }

  func start() {
    let origin = publisher.clock.currentTick()
    for (tick, signal) in publisher.signals {
      publisher.clock.schedule(origin + tick) { [weak self] in
        guard let self, state.withLock({ $0.due(signal) }) else { return }
        drain()
      }
    }
    state.withLock { $0.downstream }?.receive(subscription: self)
  }

  func drain() {
    while let (signal, downstream) = state.withLock({ $0.next() }) {
      publisher.logDelivery(signal, index: index)
      switch signal {
      case .value(let value):
        let more = downstream.receive(value)
        if more > 0 {
          publisher.logRequest(more, index: index)
          state.withLock { $0.demand += more }
        }
      case .completion(let completion):
        downstream.receive(completion: completion)
      }
    }
  }

  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: "MarblePublisher")
    publisher.logRequest(demand, index: index)
    if state.withLock({ $0.requested(demand) }) { drain() }
  }

  func cancel() {
    publisher.logCancel(index: index)
    let released = state.withLock { $0.cancelled() }
    withExtendedLifetime(released) {}
  }

  var description: String { "MarblePublisher" }
}
