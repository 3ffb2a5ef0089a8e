/// The engine of `zip` and `combineLatest`: a fixed set of upstreams ("sides") of different
/// outputs, combined into tuples for one downstream.
///
/// **Demand**, as Combine's: the downstream's requests are passed to every side (a side that
/// subscribes late is asked for everything requested so far); demand the downstream returns from
/// `receive(_:)` is asked of every side too — of the side whose value completed the combination
/// as the result of its `receive(_:)`, as is a request made while that value is delivered.
/// `zip` keeps every value until it is paired (so it never holds more than the sides were asked
/// for); `combineLatest` keeps the newest value of each side and combines when any side sends,
/// dropping a combination that finds no demand (as Combine does).
/// **Ordering**: one thread delivers at a time (its turn); `zip` pairs values in the order each
/// side sent them. A completion that arrives while another thread delivers waits for that
/// delivery. **Bounded calls**: a side's value that arrives while another thread's turn is in
/// progress is left to it while the turn has grants (reserved from the holder's allowance, see
/// ``DeliveryContext``) and no thread waits; past that the side's thread waits (``TurnWaiter``;
/// inside a delivery of its own it defers the wait instead of blocking) and the deliverer hands
/// it the turn before its next delivery (or dismisses it, its value stored, when nothing more
/// can be delivered). So a call returns after its own delivery plus at most its allowance of
/// other threads' values, however fast another side sends.
/// **Completion**: `zip` finishes once a side has finished and everything it sent has been
/// paired (the other sides are cancelled); `combineLatest` once every side has finished; the
/// first failure cancels the other sides and fails at once.
///
/// States: `holding` (until the downstream has its subscription) → `live` → `terminal`; while
/// live, one thread at a time may be `delivering`.
/// | event | live, idle | live, delivering | terminal |
/// |---|---|---|---|
/// | side subscribes | keep it; ask it for what was requested so far | same | cancel it |
/// | side value | store it; a combination and demand: become the deliverer, drain | store it (combineLatest: the deliverer sends the newest combination next) | drop |
/// | drain | while demand and a combination: take it, demand −1, deliver, ask every side for the returned demand | — | send a waiting failure, stop |
/// | side finished | forget it; done (see Completion): terminal, cancel the rest, finish | same (the deliverer checks when it stops) | drop |
/// | side failed | terminal, cancel the rest, fail | terminal, cancel the rest; the deliverer fails | drop |
/// | `request(n)` | demand +n; ask every side for n; zip: drain | demand +n; ask the other sides (the delivering side gets it as its result) | ignore |
/// | `cancel()` | terminal; cancel every side; release the downstream | same | nothing |
@usableFromInline
final class FanInCore<Slots: FanInSlots, Failure: Error, Downstream: Subscriber>: Subscription,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
where Downstream.Input == Slots.Output, Downstream.Failure == Failure {
  // Safety: all mutable state is in `state`'s lock; sides and the downstream are called after
  // unlocking, the downstream only by the one thread the state lets deliver.

  @usableFromInline
  enum Kind {
    /// Pairs the sides' values in order.
    case zip
    /// Combines the newest value of each side.
    case combineLatest
  }

  @usableFromInline
  struct State {
    @usableFromInline
    let kind: Kind
    @usableFromInline
    var downstream: Downstream?
    @usableFromInline
    var slots = Slots()
    @usableFromInline
    var sides: [(any Subscription)?] = Array(repeating: nil, count: Slots.arity)
    @usableFromInline
    var finished = Array(repeating: false, count: Slots.arity)
    @usableFromInline
    var demand = Subscribers.Demand.none
    /// Everything the downstream asked for so far (what a late side is asked for).
    @usableFromInline
    var requested = Subscribers.Demand.none
    @usableFromInline
    var terminal = false
    /// A failure that arrived while another thread delivered; that thread sends it.
    @usableFromInline
    var failure: Subscribers.Completion<Failure>?
    /// Until the downstream makes its first request or returns from `receive(subscription:)`:
    /// completions wait (they must not reach it before its subscription).
    @usableFromInline
    var holding = true
    /// Held while `holding`, then while a thread delivers.
    @usableFromInline
    var delivering = true
    /// The side whose `receive(_:)` is delivering (its demand is returned, not requested).
    @usableFromInline
    var deliveringSide: Int?
    /// Demand for the delivering side, returned from its `receive(_:)`.
    @usableFromInline
    var owed = Subscribers.Demand.none
    /// combineLatest: a side sent while a value was delivered (the newest combination is next).
    @usableFromInline
    var fresh = false
    /// The thread whose turn it is to deliver (0 while holding or idle).
    @usableFromInline
    var deliverer: UInt = 0
    /// The turn was handed to `deliverer`, which has not come back for it yet (see
    /// ``DeliveryTurn/active``): its values wait like anyone's.
    @usableFromInline
    var parked = false
    /// How many more values other threads may leave to this turn without waiting (reserved
    /// from the holder's allowance).
    @usableFromInline
    var grants = 0
    /// Threads waiting for the turn, with their side, oldest first.
    @usableFromInline
    var waiters: [(side: Int, waiter: TurnWaiter)] = []

    @inlinable
    init(kind: Kind, downstream: Downstream) {
      self.kind = kind
      self.downstream = downstream
    }

    @inlinable
    var canDeliver: Bool { demand > 0 && slots.isComplete && (kind == .zip || fresh) }

    /// Whether nothing more can be combined: zip once a finished side has nothing left to
    /// pair, combineLatest once every side has finished.
    @inlinable
    var isDone: Bool {
      switch kind {
      case .zip: finished.indices.contains { finished[$0] && !slots.hasValue(at: $0) }
      case .combineLatest: !finished.contains(false)
      }
    }

    /// The thread of `context` begins a turn of delivering (and holds it until it calls
    /// ``DeliveryContext/exit()`` after draining), its grants reserved from its allowance.
    @inlinable
    mutating func beginTurn(_ context: DeliveryContext, side: Int?) {
      context.enter()
      delivering = true
      deliveringSide = side
      deliverer = context.identity
      parked = false
      grants = context.reserve(TurnWaiter.grantsPerTurn)
    }

    /// The turn passes to `waiter` (whose value, on `side`, is stored): the holder's unused
    /// grants go back to it; the waiter reserves its own as it takes the turn.
    @inlinable
    mutating func pass(to waiter: TurnWaiter, side: Int, from context: DeliveryContext) {
      deliveringSide = side
      deliverer = waiter.thread
      parked = true
      context.giveBack(grants)
      grants = 0
    }

    /// A waiter handed the turn takes it; `deferred`: its side's `receive` has returned, so
    /// demand owed to that side is asked of it instead (returned here).
    @inlinable
    mutating func resumed(_ context: DeliveryContext, deferred: Bool) -> (
      Subscribers.Demand, (any Subscription)?
    ) {
      context.enter()
      parked = false
      grants = context.reserve(TurnWaiter.grantsPerTurn)
      guard deferred, let side = deliveringSide else { return (.none, nil) }
      deliveringSide = nil
      defer { owed = .none }
      return (owed, sides[side])
    }

    /// The turn ends (by its holder, the thread of `context`): unused grants go back to it;
    /// returns the waiters to dismiss after unlocking (their values stay stored).
    @inlinable
    mutating func endTurn(_ context: DeliveryContext) -> [(side: Int, waiter: TurnWaiter)] {
      delivering = false
      deliveringSide = nil
      deliverer = 0
      parked = false
      context.giveBack(grants)
      grants = 0
      defer { waiters = [] }
      return waiters
    }

    /// Ends the operator: the sides to cancel (all but `except`), the downstream to signal.
    /// The values it held move to `dropped`, which the caller releases after unlocking (a
    /// value's `deinit` may call back into the pipeline).
    @inlinable
    mutating func end(except: Int? = nil, dropping dropped: inout Slots) -> (
      [any Subscription], Downstream?
    ) {
      terminal = true
      let cancelling = sides.indices.compactMap { $0 == except ? nil : sides[$0] }
      sides = Array(repeating: nil, count: sides.count)
      swap(&slots, &dropped)
      defer { downstream = nil }
      return (cancelling, downstream)
    }

    /// The sides to ask for demand now: every side but the delivering one, whose share is owed.
    @inlinable
    mutating func ask(_ demand: Subscribers.Demand) -> [any Subscription] {
      requested += demand
      guard delivering, let side = deliveringSide else { return sides.compactMap { $0 } }
      owed += demand
      return sides.indices.compactMap { $0 == side ? nil : sides[$0] }
    }
  }

  @usableFromInline
  enum Step {
    case deliver(Slots.Output, Downstream)
    case complete(Subscribers.Completion<Failure>, Downstream, cancelling: [any Subscription])
    case stop(owed: Subscribers.Demand)
    /// The turn is this waiter's now: grant it after unlocking; return what is owed.
    case passed(TurnWaiter, owed: Subscribers.Demand)
  }

  /// What a side's value does on arrival.
  @usableFromInline
  enum Arrival {
    case stored, drain
    case wait(TurnWaiter)
  }

  @usableFromInline
  let name: String
  @usableFromInline
  let state: Lock<State>

  @inlinable
  init(_ kind: Kind, downstream: Downstream) {
    name = kind == .zip ? "Zip" : "CombineLatest"
    state = Lock(State(kind: kind, downstream: downstream))
  }

  /// Runs a `zip` or `combineLatest` into `downstream`: `subscribeAll` subscribes the core to
  /// each upstream (Combine's order), then the downstream receives the subscription; signals
  /// that arrived meanwhile are delivered after that.
  @inlinable
  static func combine(
    _ kind: Kind, into downstream: Downstream, _ subscribeAll: (FanInCore) -> Void
  ) {
    let core = FanInCore(kind, downstream: downstream)
    subscribeAll(core)
    downstream.receive(subscription: core)
    let context = DeliveryContext.current
    let drains = core.state.withLock { state in
      defer { state.holding = false }
      if state.holding { state.beginTurn(context, side: nil) }
      return state.holding
    }
    // Still holding (no request yet): this thread delivers what waited.
    if drains { _ = core.drainAndLeave(side: nil, context) }
  }

  /// Subscribes the core to `upstream` as side `index`; `put` stores one of its values.
  @inlinable
  func subscribe<P: Publisher>(
    _ upstream: P, index: Int, put: @escaping (inout Slots, P.Output) -> P.Output?
  ) where P.Failure == Failure {
    upstream.receive(subscriber: FanInSide(core: self, index: index, put: put))
  }

  // MARK: Sides

  @inlinable
  func receive(subscription: any Subscription, side: Int) {
    let asked = state.withLock { state -> Subscribers.Demand? in
      guard !state.terminal, state.sides[side] == nil, !state.finished[side] else { return nil }
      state.sides[side] = subscription
      return state.requested
    }
    guard let asked else { return subscription.cancel() }
    if asked > 0 { subscription.request(asked) }
  }

  @inlinable
  func receive<Input>(_ value: Input, side: Int, put: (inout Slots, Input) -> Input?)
    -> Subscribers.Demand
  {
    let context = DeliveryContext.current
    // The value `value` replaces (combineLatest) is released as the call ends: its `deinit` may
    // call back into this operator's upstreams, which it must not do under the lock, nor
    // between queuing this thread's waiter and waiting for it.
    var replaced: Input?
    defer { withExtendedLifetime(replaced) {} }
    let arrival = state.withLock { state -> Arrival in
      guard !state.terminal, !state.finished[side] else { return .stored }
      replaced = put(&state.slots, value)
      state.fresh = true
      guard !state.delivering else {
        // The hold, this thread's own turn (a value from inside a delivery), or grants left
        // and nobody waiting.
        if state.holding || (state.deliverer == context.identity && !state.parked) {
          return .stored
        }
        if state.grants > 0, state.waiters.isEmpty {
          state.grants -= 1
          return .stored
        }
        let waiter = TurnWaiter(for: context)
        state.waiters.append((side, waiter))
        return .wait(waiter)
      }
      guard state.canDeliver else {
        state.fresh = false
        return .stored
      }
      state.beginTurn(context, side: side)
      return .drain
    }
    switch arrival {
    case .stored:
      return .none
    case .wait(let waiter):
      guard !context.mustNotBlock else {
        // Inside a delivery (or coming back to deferred waiters): never block; come back to
        // it when the outermost turn ends.
        context.deferTurn(waiter) { [self] in
          let (owed, sideSubscription) = state.withLock {
            $0.resumed(context, deferred: true)
          }
          if owed > 0 { sideSubscription?.request(owed) }
          _ = drainAndLeave(side: nil, context)
        }
        return .none
      }
      // Dismissed: nothing more could be delivered; the value stays stored.
      guard waiter.wait() else { return .none }
      _ = state.withLock { $0.resumed(context, deferred: false) }
      return drainAndLeave(side: side, context)
    case .drain:
      return drainAndLeave(side: side, context)
    }
  }

  @inlinable
  func receive(completion: Subscribers.Completion<Failure>, side: Int) {
    var dropped = Slots()
    let (cancelling, downstream) = state.withLock {
      state -> ([any Subscription], Downstream?) in
      guard !state.terminal, !state.finished[side] else { return ([], nil) }
      switch completion {
      case .finished:
        state.finished[side] = true
        state.sides[side] = nil
        guard !state.delivering, state.isDone else { return ([], nil) }
        return state.end(dropping: &dropped)
      case .failure:
        let (cancelling, downstream) = state.end(except: side, dropping: &dropped)
        guard !state.delivering else {
          // The delivering thread sends it after its value.
          state.failure = completion
          state.downstream = downstream
          return (cancelling, nil)
        }
        return (cancelling, downstream)
      }
    }
    withExtendedLifetime(dropped) {}
    for subscription in cancelling { subscription.cancel() }
    downstream?.receive(completion: completion)
  }

  // MARK: Downstream calls

  @inlinable
  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: name)
    let context = DeliveryContext.current
    // One call, however many sides it asks: one allowance.
    let beganCall = context.beginCall()
    defer { if beganCall { context.endCall() } }
    let (asking, drains) = state.withLock { state -> ([any Subscription], Bool) in
      if state.holding {
        // The first request: the downstream has its subscription, so the hold ends here (a
        // synchronous upstream may now deliver from inside this request).
        state.holding = false
        state.delivering = false
        if state.terminal || state.isDone {
          // What waited during the hold is sent by a drain.
          state.beginTurn(context, side: nil)
          return ([], true)
        }
      }
      guard !state.terminal else { return ([], false) }
      state.demand += demand
      let asking = state.ask(demand)
      guard !state.delivering, state.kind == .zip, state.canDeliver else { return (asking, false) }
      state.beginTurn(context, side: nil)
      return (asking, true)
    }
    for side in asking { side.request(demand) }
    if drains { _ = drainAndLeave(side: nil, context) }
  }

  @inlinable
  func cancel() {
    var dropped = Slots()
    let (cancelling, released) = state.withLock { state -> ([any Subscription], Downstream?) in
      guard !state.terminal else { return ([], nil) }
      state.failure = nil
      return state.end(dropping: &dropped)
    }
    for side in cancelling { side.cancel() }
    withExtendedLifetime((released, dropped)) {}
  }

  // MARK: Delivery

  /// ``drain(side:_:)``, then leaves the turn (``DeliveryContext/exit()``).
  @inlinable
  func drainAndLeave(side: Int?, _ context: DeliveryContext) -> Subscribers.Demand {
    defer { context.exit() }
    return drain(side: side, context)
  }

  /// Delivers combinations while there is demand; only the thread that set `delivering`.
  /// Returns the demand owed to `side` (the side whose value started this drain).
  ///
  /// Waiting threads' values are stored as they arrive, so the combinations after the first
  /// are theirs (or granted ones'): while a thread waits, each such combination is delivered
  /// for it — the oldest waiter is dismissed — at the cost of one of the allowance (free for
  /// this thread's own waiters); once the allowance is spent, the turn passes to the oldest
  /// waiter, which delivers the next combination itself.
  @inlinable
  func drain(side: Int?, _ context: DeliveryContext) -> Subscribers.Demand {
    var first = true
    while true {
      var dismissed: [(side: Int, waiter: TurnWaiter)] = []
      var dropped = Slots()  // released after unlocking
      let step = state.withLock { state -> Step in
        if state.terminal {
          dismissed = state.endTurn(context)
          guard let failure = state.failure, let downstream = state.downstream else {
            return .stop(owed: .none)
          }
          state.failure = nil
          state.downstream = nil
          return .complete(failure, downstream, cancelling: [])
        }
        if state.canDeliver, let downstream = state.downstream {
          if !first, let (side, waiter) = state.waiters.first {
            state.waiters.removeFirst()
            if waiter.thread == context.identity || context.spendOne() {
              dismissed = [(side, waiter)]  // delivered for it: its call returns
            } else {
              // The allowance is spent: the waiting thread delivers the next combination,
              // this call returns.
              defer { state.owed = .none }
              let owed = state.owed
              state.pass(to: waiter, side: side, from: context)
              return .passed(waiter, owed: owed)
            }
          }
          state.fresh = false
          if state.demand != .unlimited { state.demand -= 1 }
          return .deliver(state.slots.take(), downstream)
        }
        dismissed = state.endTurn(context)
        state.fresh = false
        defer { state.owed = .none }
        if state.isDone {
          let (cancelling, downstream) = state.end(dropping: &dropped)
          if let downstream { return .complete(.finished, downstream, cancelling: cancelling) }
        }
        return .stop(owed: state.owed)
      }
      for (_, waiter) in dismissed { waiter.dismiss() }
      switch step {
      case .deliver(let value, let downstream):
        first = false
        let more = downstream.receive(value)
        guard more > 0 else { continue }
        let asking = state.withLock { state -> [any Subscription] in
          guard !state.terminal else { return [] }
          state.demand += more
          return state.ask(more)
        }
        for other in asking { other.request(more) }
      case .complete(let completion, let downstream, let cancelling):
        for other in cancelling { other.cancel() }
        downstream.receive(completion: completion)
        return .none
      case .stop(let owed):
        return owed
      case .passed(let waiter, let owed):
        waiter.grant()
        return owed
      }
    }
  }

  @inlinable
  var description: String { name }
  @inlinable
  var customMirror: Mirror {
    let (downstream, sides, demand, buffers) = state.withLock {
      ($0.downstream, $0.sides, $0.demand, $0.slots.contents)
    }
    return Mirror(
      self,
      children: [
        ("downstream", downstream as Any), ("upstreamSubscriptions", sides),
        ("demand", demand), ("buffers", buffers),
      ])
  }
  @inlinable
  var playgroundDescription: Any { description }
}

/// Subscribes a ``FanInCore`` to one of its upstreams.
@usableFromInline
struct FanInSide<Input, Slots: FanInSlots, Failure: Error, Downstream: Subscriber>: Subscriber,
  CustomStringConvertible, CustomPlaygroundDisplayConvertible
where Downstream.Input == Slots.Output, Downstream.Failure == Failure {
  @usableFromInline
  let core: FanInCore<Slots, Failure, Downstream>
  @usableFromInline
  let index: Int
  @usableFromInline
  let put: (inout Slots, Input) -> Input?

  @inlinable
  init(
    core: FanInCore<Slots, Failure, Downstream>, index: Int,
    put: @escaping (inout Slots, Input) -> Input?
  ) {
    self.core = core
    self.index = index
    self.put = put
  }
  @usableFromInline
  let combineIdentifier = CombineIdentifier()

  @inlinable
  func receive(subscription: any Subscription) {
    core.receive(subscription: subscription, side: index)
  }
  @inlinable
  func receive(_ input: Input) -> Subscribers.Demand {
    core.receive(input, side: index, put: put)
  }
  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    core.receive(completion: completion, side: index)
  }

  @inlinable
  var description: String { core.name }
  @inlinable
  var playgroundDescription: Any { description }
}
