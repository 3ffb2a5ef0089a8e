public import Synchronization

/// The engine of `flatMap`, `merge` and `MergeMany`: many upstreams ("inners") of the same output
/// into one downstream, optionally fed by an outer publisher of inners.
///
/// **Demand**, as Combine's: each inner is asked for `.max(1)` when it subscribes (`.unlimited`
/// once the downstream's demand is unlimited) and for one more after each of its values is
/// delivered; a value that arrives without downstream demand waits in a buffer (at most one per
/// inner), oldest first, until the downstream requests. With an outer publisher, `maxPublishers`
/// inners are requested from it, and one more each time an inner finishes.
/// **Ordering**: one thread delivers at a time (the turn); values from one inner keep their
/// order, and values are delivered in the order they arrived.
/// **Bounded calls** (``DeliveryTurn``): a value that arrives from another thread while a turn
/// is in progress is buffered for it while the turn has grants (reserved from its holder's
/// allowance); past that the inner's thread waits until the turn delivers its value for it or
/// hands it the turn (or, should the deliverer stop for lack of demand first, returns with its
/// value buffered) — and a thread that is itself inside a delivery defers that wait to the end
/// of its outermost turn instead of blocking (``DeliveryContext``), so feedback into a merge
/// never deadlocks. So a call (an inner's value, a `request`) returns after its own delivery
/// plus at most its allowance of other threads' values, however fast other inners send and
/// however many engines its values pass through, and the buffer holds at most the grants plus
/// one value per waiting thread (plus one per inner while demand is limited). A value from
/// inside a delivery of this merge (the same thread) is buffered without waiting.
/// **Completion**: finishes when the outer publisher (if any) and every inner have finished and
/// the buffer is drained; the first failure cancels everything else and fails at once.
/// **A `sink`** downstream (or the `AnySubscriber` an `AnyPublisher` wraps one in) hands the
/// merge the release of its `receiveValue` closure at its first request
/// (`Subscribers.Sink._claimValueRelease(for:)`): the turn's holder then calls the closure
/// without the sink's gate (two atomic read-modify-write operations less per value), and the
/// merge releases it once it is terminal and no turn is delivering — at `cancel()` or a
/// failure if no turn is, otherwise as that turn ends — and before a completion.
///
/// States: `live` → `terminal`; while live, one thread at a time may be delivering (its turn, a
/// ``DeliveryTurn``).
/// | event | live, idle | live, delivering | terminal |
/// |---|---|---|---|
/// | inner subscribes | keep it; request `.max(1)` (unlimited demand: `.unlimited`) | same | cancel it |
/// | inner value | buffer it; demand > 0: become the deliverer, drain | buffer it (the deliverer drains it); no grants left and another thread's turn: wait for the turn | drop |
/// | drain | while demand > 0: deliver the oldest buffered value, demand −1 +returned; ask its inner for one more; a waiter's value next: hand it the turn, return | — | stop; dismiss waiters |
/// | inner / outer finished | forget it; all done and buffer empty: finish; else ask outer for one more | same (the deliverer finishes) | drop |
/// | a failure | terminal; cancel the rest; fail | terminal; cancel the rest; the deliverer fails after its value | drop |
/// | `request(n)` | demand +n; drain (unlimited: ask every inner for `.unlimited`) | demand +n | ignore |
/// | `cancel()` | terminal; cancel everything; release the downstream (and an owned sink's closure) | same; the deliverer releases the closure as its turn ends | drop a failure still owed; release the downstream |
@usableFromInline
final class MergeCore<Output, Failure: Error, Downstream: Subscriber>: Subscription,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
where Downstream.Input == Output, Downstream.Failure == Failure {
  // Safety: all mutable state is in `state`'s lock; upstreams and the downstream are called
  // after unlocking, the downstream only by the one thread the state lets deliver.

  @usableFromInline
  struct State {
    @usableFromInline
    var downstream: Downstream?
    /// The sink (the downstream, or what it wraps) whose closure's release this merge took
    /// over at its first request, until released (see the type).
    @usableFromInline
    var ownedSink: Subscribers.Sink<Output, Failure>?
    @usableFromInline
    var terminal = false
    /// Whose turn it is to deliver, and who waits for it.
    @usableFromInline
    var turn = DeliveryTurn()
    /// A failure that came while another thread was delivering: that thread sends it when its
    /// delivery returns (signals stay serial).
    @usableFromInline
    var pendingFailure: Subscribers.Completion<Failure>?
    @usableFromInline
    var demand = Subscribers.Demand.none
    @usableFromInline
    var buffer = RingBuffer<(index: Int, value: Output)>()
    @usableFromInline
    var inners: [Int: any Subscription] = [:]
    /// Inners subscribed to (or about to be) that have not finished.
    @usableFromInline
    var liveInners = 0
    @usableFromInline
    var outer: (any Subscription)?
    @usableFromInline
    var outerFinished: Bool
    @usableFromInline
    var nextIndex = 0

    @inlinable
    init(downstream: Downstream, outerFinished: Bool) {
      self.downstream = downstream
      self.outerFinished = outerFinished
    }

    /// The live inners' subscriptions, oldest first.
    @inlinable
    var innersInOrder: [any Subscription] {
      inners.sorted { $0.key < $1.key }.map(\.value)
    }

    /// Everything to cancel when the merge ends early: the inners oldest first, then the outer.
    @inlinable
    mutating func end() -> [any Subscription] {
      terminal = true
      defer {
        inners = [:]
        outer = nil
      }
      return innersInOrder + [outer].compactMap { $0 }
    }

    /// The oldest buffered value (with the waiter it is delivered for, if any), or — a
    /// waiter's value next, past the turn's budget — the turn handed to that waiter.
    @inlinable
    mutating func next(_ context: DeliveryContext) -> Step {
      var deliveredFor: TurnWaiter?
      switch turn.waiterNext(context) {
      case .none: break
      case .deliverFor(let waiter): deliveredFor = waiter
      case .pass(let waiter): return .passed(waiter)
      }
      guard let (index, value) = buffer.popFirst() else { return .stop }
      turn.took()
      return .deliver(index, value, for: deliveredFor)
    }

    /// The fast path of an arriving value: idle, nothing buffered, demand, a downstream — the
    /// value's own thread takes the turn and delivers it at once, without the buffer. The turn
    /// counts it as appended and taken at once, so its bookkeeping is what the slow path's
    /// `arrived` + `next` would leave (idle means no waiter and nothing unwaited, so the grants
    /// reserved are the same). Returns the downstream to deliver to, or `nil` (slow path).
    @inlinable
    mutating func takeDirectly(_ context: DeliveryContext) -> Delivery? {
      guard !turn.isDelivering, buffer.isEmpty, demand > 0, let delivery else { return nil }
      turn.begin(context)
      turn.appended += 1
      turn.took()
      if demand != .unlimited { demand -= 1 }
      return delivery
    }

    /// How the turn's holder delivers a value now: to the owned sink (unretained: `ownedSink`
    /// keeps it while a turn delivers), or to the downstream; `nil` once there is none.
    @inlinable
    var delivery: Delivery? {
      if let ownedSink { return .sink(Unmanaged.passUnretained(ownedSink)) }
      guard let downstream else { return nil }
      return .downstream(downstream)
    }

    /// The downstream's first request: takes over the release of its sink's closure, if it is
    /// a sink that has not decided otherwise (an atomic operation on the sink, no call out).
    @inlinable
    mutating func claimSinkRelease(for core: AnyObject) {
      guard ownedSink == nil, !terminal, let downstream,
        let sink = Subscribers.Sink<Output, Failure>.sink(of: downstream),
        sink._claimValueRelease(for: core)
      else { return }
      ownedSink = sink
    }

    /// The owned sink whose closure is to be released now: the merge is terminal and no turn
    /// is delivering (the caller releases it after unlocking, before any completion).
    @inlinable
    mutating func sinkToRelease() -> Subscribers.Sink<Output, Failure>? {
      guard terminal, !turn.isDelivering else { return nil }
      return ownedSink.take()
    }

    /// The end of the fast path's turn, when nothing else is left to it: the value delivered
    /// directly returned `more` (from the caller's own inner, so nothing is asked of it), and
    /// nothing is buffered, waits, is owed or finishes. Ends the turn and returns whether demand
    /// is unlimited; `nil` (nothing changed) when the general drain has work.
    @inlinable
    mutating func endDirect(more: Subscribers.Demand, _ context: DeliveryContext) -> Bool? {
      guard more == .none || demand == .unlimited, !terminal, buffer.isEmpty,
        turn.waiters.isEmpty, pendingFailure == nil, !(outerFinished && liveInners == 0)
      else { return nil }
      turn.endedWithoutWaiters(context)
      return demand == .unlimited
    }

    /// Whether the merge has finished normally (the caller sends `.finished`).
    @inlinable
    mutating func finishedIfDone() -> Downstream? {
      guard !terminal, !turn.isDelivering, outerFinished, liveInners == 0, buffer.isEmpty else {
        return nil
      }
      terminal = true
      defer { downstream = nil }
      return downstream
    }
  }

  /// How a value is delivered (see ``State/delivery``).
  @usableFromInline
  enum Delivery {
    case sink(Unmanaged<Subscribers.Sink<Output, Failure>>)
    case downstream(Downstream)
  }

  /// What the drain does after one lock round.
  @usableFromInline
  enum DrainStep {
    /// Deliver this value of inner `index` (dismissing the waiter it is delivered for).
    case deliver(Output, Int, Delivery, for: TurnWaiter?)
    /// Ask inners for more after the last delivery (outside the lock), then go on.
    case request(one: (any Subscription)?, unlimited: [any Subscription])
    /// The turn was handed to this waiter.
    case passed(TurnWaiter)
    /// The turn ended with nothing else to do (the common case, kept free of payloads that
    /// cost copies): whether demand is unlimited.
    case idle(unlimited: Bool)
    /// The turn ended: dismiss these waiters; release the owned sink's closure; send the
    /// failure owed, or finish.
    case stop(
      dismissed: [(position: Int, waiter: TurnWaiter)],
      releasing: Subscribers.Sink<Output, Failure>?,
      owedFailure: (Subscribers.Completion<Failure>, Downstream)?, finishing: Downstream?,
      unlimited: Bool)
  }

  /// What the turn's holder does next.
  @usableFromInline
  enum Step {
    /// Deliver this value of inner `index`; dismiss the waiter it is delivered for.
    case deliver(Int, Output, for: TurnWaiter?)
    case passed(TurnWaiter)
    case stop
  }

  @usableFromInline
  let name: String
  @usableFromInline
  let maxPublishers: Subscribers.Demand
  @usableFromInline
  let state: Lock<State>
  /// `cancel()` has begun (see ``deliver(_:via:)``).
  @usableFromInline
  let cancelledFlag = Atomic<Bool>(false)

  @inlinable
  init(name: String, downstream: Downstream, maxPublishers: Subscribers.Demand, hasOuter: Bool) {
    self.name = name
    self.maxPublishers = maxPublishers
    state = Lock(State(downstream: downstream, outerFinished: !hasOuter))
  }

  /// Counts an inner about to be subscribed (so the merge does not finish before it does) and
  /// gives it its index; `nil` once the merge has ended.
  @inlinable
  func willSubscribeInner() -> Int? {
    state.withLock { state in
      guard !state.terminal else { return nil }
      state.liveInners += 1
      defer { state.nextIndex += 1 }
      return state.nextIndex
    }
  }

  /// Subscribes the core to `inner`, unless the merge has ended.
  @inlinable
  func subscribe<P: Publisher>(_ inner: P) where P.Output == Output, P.Failure == Failure {
    guard let index = willSubscribeInner() else { return }
    inner.receive(subscriber: MergeInner(core: self, index: index))
  }

  // MARK: Outer publisher

  @inlinable
  func receiveOuter(subscription: any Subscription) -> Bool {
    let accepted = state.withLock { state -> Bool in
      guard state.outer == nil, !state.terminal, !state.outerFinished else { return false }
      state.outer = subscription
      return true
    }
    if accepted { subscription.request(maxPublishers) } else { subscription.cancel() }
    return accepted
  }

  @inlinable
  func receiveOuter(completion: Subscribers.Completion<Failure>) {
    switch completion {
    case .finished:
      let (finishing, releasing) = state.withLock {
        state -> (Downstream?, Subscribers.Sink<Output, Failure>?) in
        guard !state.terminal else { return (nil, nil) }
        state.outer = nil
        state.outerFinished = true
        return (state.finishedIfDone(), state.sinkToRelease())
      }
      releasing?._endValueRelease(by: self)
      finishing?.receive(completion: .finished)
    case .failure: fail(completion, exceptInner: nil, outerFailed: true)
    }
  }

  /// For `merge`: every upstream has been subscribed to (the merge may finish from now on).
  @inlinable
  func allInnersSubscribed() { receiveOuter(completion: .finished) }

  /// Runs a `merge` of fixed upstreams into `downstream`: hands it the subscription, lets
  /// `subscribeAll` subscribe the core to each upstream, then lets the merge finish.
  @inlinable
  static func merge(
    into downstream: Downstream, _ subscribeAll: (MergeCore) -> Void
  ) {
    let core = MergeCore(
      name: "Merge", downstream: downstream, maxPublishers: .unlimited, hasOuter: true)
    downstream.receive(subscription: core)
    subscribeAll(core)
    core.allInnersSubscribed()
  }

  // MARK: Inners

  @inlinable
  func receiveInner(subscription: any Subscription, index: Int) {
    let demand = state.withLock { state -> Subscribers.Demand? in
      guard !state.terminal, state.inners[index] == nil else { return nil }
      state.inners[index] = subscription
      return state.demand == .unlimited ? .unlimited : .max(1)
    }
    guard let demand else {
      subscription.cancel()
      return
    }
    subscription.request(demand)
  }

  @inlinable
  func receiveInner(_ value: Output, index: Int) -> Subscribers.Demand {
    let context = DeliveryContext.current
    var direct: Delivery?
    let arrival = state.withLock { state -> DeliveryTurn.Arrival? in
      guard !state.terminal else { return nil }
      if let delivery = state.takeDirectly(context) {
        direct = delivery
        return .deliver
      }
      state.buffer.append((index, value))
      return state.turn.arrived(from: context, mayStart: state.demand > 0)
    }
    switch arrival {
    case nil, .queued:
      return .none
    case .wait(let waiter):
      guard !context.mustNotBlock else {
        // Inside a delivery (or coming back to deferred waiters): never block (feedback would
        // deadlock). The value stays buffered with its waiter; this thread comes back to it
        // when its outermost turn ends.
        context.deferTurn(waiter) { [self] in takeGrantedTurn(context) }
        return .none
      }
      // Dismissed: the deliverer stopped for lack of demand; the value stays buffered.
      guard waiter.wait() else { return .none }
      state.withLock { $0.turn.resumed(context) }
    case .deliver:
      break
    }
    // When this call delivers its own value, its "one more" is returned, not requested (and
    // nothing is, once every inner has been asked for `.unlimited`).
    let end: DrainEnd
    if let delivery = direct.take() {
      // The fast path: delivered at once; the turn ends in one lock round when nothing else is
      // left to it, else the drain accounts for the value and goes on.
      let more = deliver(value, via: delivery)
      if let unlimited = state.withLock({ $0.endDirect(more: more, context) }) {
        end = DrainEnd(deliveredOwn: true, unlimited: unlimited)
      } else {
        end = drain(returningFor: index, context, delivered: (index, more))
      }
    } else {
      end = drain(returningFor: index, context)
    }
    context.exit()
    return end.deliveredOwn && !end.unlimited ? .max(1) : .none
  }

  /// A deferred waiter of this thread was handed the turn: it delivers what is buffered from
  /// its value on (its inner's "one more" is requested, since its `receive` has returned).
  @usableFromInline
  func takeGrantedTurn(_ context: DeliveryContext) {
    state.withLock { $0.turn.resumed(context) }
    drain(returningFor: nil, context)
    context.exit()
  }

  @inlinable
  func receiveInner(completion: Subscribers.Completion<Failure>, index: Int) {
    switch completion {
    case .finished:
      let (finishing, releasing, askOuter) = state.withLock {
        state -> (Downstream?, Subscribers.Sink<Output, Failure>?, (any Subscription)?) in
        guard !state.terminal, state.inners.removeValue(forKey: index) != nil else {
          return (nil, nil, nil)
        }
        state.liveInners -= 1
        if let downstream = state.finishedIfDone() {
          return (downstream, state.sinkToRelease(), nil)
        }
        return (nil, nil, maxPublishers == .unlimited ? nil : state.outer)
      }
      releasing?._endValueRelease(by: self)
      finishing?.receive(completion: .finished)
      askOuter?.request(.max(1))
    case .failure: fail(completion, exceptInner: index, outerFailed: false)
    }
  }

  // MARK: Downstream calls

  @inlinable
  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: name)
    let context = DeliveryContext.current
    // One call, however many inners it asks (each may deliver a replay and what others
    // queued for it): one allowance.
    let beganCall = context.beginCall()
    defer { if beganCall { context.endCall() } }
    let (drains, everyInner) = state.withLock { state -> (Bool, [any Subscription]) in
      guard !state.terminal else { return (false, []) }
      state.claimSinkRelease(for: self)
      let wasUnlimited = state.demand == .unlimited
      state.demand += demand
      let everyInner = !wasUnlimited && state.demand == .unlimited ? state.innersInOrder : []
      guard !state.turn.isDelivering, !state.buffer.isEmpty else { return (false, everyInner) }
      state.turn.begin(context)
      return (true, everyInner)
    }
    // As Combine: what waits is delivered first, then every inner may send all it has.
    if drains {
      drain(returningFor: nil, context)
      context.exit()
    }
    for inner in everyInner { inner.request(.unlimited) }
  }

  @inlinable
  func cancel() {
    // Before the lock: a turn delivering to an owned sink checks it just before each call, as
    // the sink's gate would (see ``deliver(_:via:)``).
    cancelledFlag.store(true, ordering: .sequentiallyConsistent)
    let (cancelling, released, releasing) = state.withLock {
      state -> ([any Subscription], Downstream?, Subscribers.Sink<Output, Failure>?) in
      defer { state.downstream = nil }
      guard !state.terminal else {
        // A failure still owed by the deliverer is dropped: nothing after cancel() returns.
        state.pendingFailure = nil
        return ([], state.downstream, state.sinkToRelease())
      }
      let cancelling = state.end()
      return (cancelling, state.downstream, state.sinkToRelease())
    }
    for subscription in cancelling { subscription.cancel() }
    // After the upstreams, as a sink's own cancel orders it: what the closure captured is
    // released once nothing can send any more.
    releasing?._endValueRelease(by: self)
    withExtendedLifetime(released) {}
  }

  /// Delivers `value` as ``State/delivery`` said, by the turn's holder.
  @inlinable @inline(__always)
  func deliver(_ value: Output, via delivery: Delivery) -> Subscribers.Demand {
    switch delivery {
    case .sink(let sink):
      // As the sink's gate would: nothing enters the closure once `cancel()` has begun (the
      // value was taken before it; the turn's next lock round sees the merge terminal).
      guard !cancelledFlag.load(ordering: .sequentiallyConsistent) else { return .none }
      // Demand is `.unlimited` (a sink's); no retain: `ownedSink` keeps it during the turn.
      sink._withUnsafeGuaranteedRef { $0.receiveFromOwner(value) }
      return .none
    case .downstream(let downstream):
      return downstream.receive(value)
    }
  }

  // MARK: Delivery

  /// What a drain reports: whether it delivered its caller's own value, and whether demand
  /// was unlimited when it ended (then the caller's inner is asked for nothing more).
  @usableFromInline
  struct DrainEnd {
    @usableFromInline let deliveredOwn: Bool
    @usableFromInline let unlimited: Bool

    @inlinable init(deliveredOwn: Bool, unlimited: Bool) {
      self.deliveredOwn = deliveredOwn
      self.unlimited = unlimited
    }
  }

  /// Delivers buffered values while there is demand; only the thread whose turn it is. The
  /// first value from inner `own` is this call's caller's: its "one more" is returned by the
  /// caller instead of requested here. `delivered`: a value the caller has just delivered
  /// (the fast path) and the demand it returned, accounted for first. Stops early, handing over
  /// the turn, when a waiting thread's value comes next.
  ///
  /// One lock round per value: it accounts for the last delivery's returned demand and takes
  /// the next value together — unless inners must be asked for more first (limited demand):
  /// they are asked outside the lock, still inside the turn (a synchronous inner's next value
  /// is then buffered for this loop, not delivered recursively), and the loop goes on.
  @discardableResult
  @inlinable
  func drain(
    returningFor own: Int?, _ context: DeliveryContext,
    delivered first: (index: Int, more: Subscribers.Demand)? = nil
  ) -> DrainEnd {
    var own = own
    var deliveredOwn = false
    var last: (index: Int, more: Subscribers.Demand, isOwn: Bool)?
    if let first {
      let isOwn = own == first.index
      if isOwn {
        own = nil
        deliveredOwn = true
      }
      last = (first.index, first.more, isOwn)
    }
    while true {
      let step = state.withLock { state -> DrainStep in
        if let (index, more, isOwn) = last {
          let wasUnlimited = state.demand == .unlimited
          state.demand += more
          if state.demand == .unlimited {
            // Became unlimited through returned demand: every inner may now send all it has.
            if !wasUnlimited { return .request(one: nil, unlimited: state.innersInOrder) }
          } else if !isOwn, let inner = state.inners[index] {
            return .request(one: inner, unlimited: [])
          }
        }
        if !state.terminal, let delivery = state.delivery, state.demand > 0 {
          switch state.next(context) {
          case .deliver(let index, let value, let waiter):
            if state.demand != .unlimited { state.demand -= 1 }
            return .deliver(value, index, delivery, for: waiter)
          case .passed(let waiter):
            return .passed(waiter)
          case .stop:
            break
          }
        }
        let dismissed = state.turn.ended(context)
        if let failure = state.pendingFailure.take(), let downstream = state.downstream.take() {
          return .stop(
            dismissed: dismissed, releasing: state.sinkToRelease(),
            owedFailure: (failure, downstream), finishing: nil,
            unlimited: state.demand == .unlimited)
        }
        let finishing = state.finishedIfDone()
        // Terminal (a cancel or failure during this turn, or finishing now): the turn was the
        // last delivery.
        let releasing = state.sinkToRelease()
        if dismissed.isEmpty, finishing == nil, releasing == nil {
          return .idle(unlimited: state.demand == .unlimited)
        }
        return .stop(
          dismissed: dismissed, releasing: releasing, owedFailure: nil, finishing: finishing,
          unlimited: state.demand == .unlimited)
      }
      last = nil
      switch step {
      case .request(let one, let unlimited):
        for inner in unlimited { inner.request(.unlimited) }
        one?.request(.max(1))
      case .deliver(let value, let index, let delivery, let deliveredFor):
        deliveredFor?.dismiss()  // its value is delivered here: its call returns
        let more = deliver(value, via: delivery)
        let isOwn = own == index
        if isOwn {
          own = nil
          deliveredOwn = true
        }
        last = (index, more, isOwn)
      case .passed(let waiter):
        waiter.grant()  // its turn: it delivers its value and what follows
        return DrainEnd(
          deliveredOwn: deliveredOwn, unlimited: state.withLock { $0.demand } == .unlimited)
      case .idle(let unlimited):
        return DrainEnd(deliveredOwn: deliveredOwn, unlimited: unlimited)
      case .stop(let dismissed, let releasing, let owedFailure, let finishing, let unlimited):
        for (_, waiter) in dismissed { waiter.dismiss() }
        releasing?._endValueRelease(by: self)
        if let (failure, downstream) = owedFailure {
          downstream.receive(completion: failure)
        } else {
          finishing?.receive(completion: .finished)
        }
        return DrainEnd(deliveredOwn: deliveredOwn, unlimited: unlimited)
      }
    }
  }

  @inlinable
  var description: String { name }
  @inlinable
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @inlinable
  var playgroundDescription: Any { description }

  /// Fails the merge: cancels everything but the upstream that failed. If another thread is
  /// delivering a value, the failure waits for it (that thread sends it when its value returns).
  @inlinable
  func fail(
    _ completion: Subscribers.Completion<Failure>, exceptInner index: Int?, outerFailed: Bool
  ) {
    let (cancelling, downstream, releasing) = state.withLock {
      state -> ([any Subscription], Downstream?, Subscribers.Sink<Output, Failure>?) in
      guard !state.terminal else { return ([], nil, nil) }
      if let index { state.inners[index] = nil }
      if outerFailed { state.outer = nil }
      let cancelling = state.end()
      if state.turn.isDelivering {
        state.pendingFailure = completion
        return (cancelling, nil, nil)
      }
      defer { state.downstream = nil }
      return (cancelling, state.downstream, state.sinkToRelease())
    }
    for subscription in cancelling { subscription.cancel() }
    releasing?._endValueRelease(by: self)
    downstream?.receive(completion: completion)
  }
}

/// Subscribes a ``MergeCore`` to one inner publisher (or one of `merge`'s upstreams).
@usableFromInline
struct MergeInner<Output, Failure: Error, Downstream: Subscriber>: Subscriber,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible
where Downstream.Input == Output, Downstream.Failure == Failure {
  @usableFromInline
  typealias Input = Output

  @usableFromInline
  let core: MergeCore<Output, Failure, Downstream>
  @usableFromInline
  let index: Int

  @inlinable
  init(core: MergeCore<Output, Failure, Downstream>, index: Int) {
    self.core = core
    self.index = index
  }
  @usableFromInline
  let combineIdentifier = CombineIdentifier()

  @inlinable
  func receive(subscription: any Subscription) {
    core.receiveInner(subscription: subscription, index: index)
  }
  @inlinable
  func receive(_ input: Output) -> Subscribers.Demand { core.receiveInner(input, index: index) }
  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    core.receiveInner(completion: completion, index: index)
  }

  @inlinable
  var description: String { core.name }
  @inlinable
  var customMirror: Mirror { Mirror(self, children: [("parentSubscription", core)]) }
  @inlinable
  var playgroundDescription: Any { description }
}
