public import Synchronization

/// A subject's subscription to one subscriber: per-subscriber demand, serial delivery.
///
/// **Fast path.** While the subscriber's demand is `.unlimited` and nothing is queued, owed or
/// finishing (a `sink`, an `assign`, most operators), a value needs no lock and no atomic
/// read-modify-write: the sender holding the subject's list (one at a time, see
/// ``SharedSubscriberList``) reads the word ``fast`` and, if it is *eligible*, delivers at once.
/// Events that do not come from that sender close the path under the lock first:
///
/// | event | eligible | interrupted | 0 |
/// |---|---|---|---|
/// | the sender offers `v` (``offerInPlace(_:)``) | deliver `v` without locking | — | lock path (below) |
/// | that delivery returns | — (done) | 0, then drain under the lock | — (done) |
/// | an event from inside that delivery (same thread: a cancel, say) | interrupted; the state counts as draining | nothing | — |
/// | any other event under the lock (an offer the path refused, finish, cancel, request that adds demand) | 0 | nothing | nothing |
/// | `request(n)` while eligible | nothing: demand is `.unlimited` already | — | — |
/// | the drain goes idle with unlimited demand, nothing queued or owed | — | — | eligible |
///
/// The sender reads ``fastSlot`` without the lock; the lock writes it only while the word is
/// 0 and no sender may be delivering: a `cancel()` from inside the delivery leaves the release
/// of the downstream to that delivery's drain, and a `cancel()` from another thread while a
/// sender reads the list defers it until the sender has left (see ``SharedSubscriberList``).
///
/// **A `sink`** attached to the subject (directly, or behind the `AnySubscriber` that an
/// `AnyPublisher` wraps it in) hands the conduit the release of its closure at its
/// first request (`Sink.releaseOwner`): fast deliveries then call the closure without the
/// sink's delivery gate (two atomic operations less per value), and the conduit closes that
/// gate — releasing the closure — when it ends, after its last delivery (at `cancel()` if none
/// is in flight, otherwise in the drain that follows it, or before delivering the completion;
/// after a cancel that a sender of another thread may overlap, when that sender leaves).
///
/// **Replay.** A request that finds the subject's value owed to the subscriber (its first
/// request to a `CurrentValueSubject` or `@Published`, or more demand after it went without)
/// delivers it at once on the requesting thread, as Combine does, and with the subject's turn
/// (``SubjectCore/withReplayTurn(_:)``): senders of other threads meanwhile are handed over or
/// wait, as behind any delivery — and a turn already in progress waits for the replay once it
/// has run what was queued before the request — so a slow first `receive` paces them instead of
/// letting them queue values for this subscriber without bound, and the request's call
/// delivers at most ``DeliveryContext/allowancePerCall`` of their values (the holder delivers
/// the rest). The request never blocks for the turn.
///
/// **Demand**: a value offered while the subscriber has no demand is dropped (for subjects with a
/// current value, the subscriber is then owed the latest value on its next request).
/// **Ordering**: values reach the subscriber in the order the conduit accepted them; concurrent
/// senders never deliver concurrently (see ``ConduitState``). **Cancellation**: `cancel()` detaches
/// from the subject and releases the subscriber at once — unless the subject's sender on another
/// thread may be delivering to it, which then releases it as it leaves; a value already being
/// delivered on another thread completes its delivery, and nothing is offered after `cancel()`
/// returns.
///
/// **Layout.** `State` is always `ConduitState<Downstream, SubjectCore<…>>` and `Slot` always
/// `Downstream?` (only ``SubjectCore/subscribe(_:subject:)`` makes conduits, through
/// ``init(parent:state:fastDownstream:)``, which checks it). They are generic parameters, not
/// spelled-out field types, because Swift never specialises a generic class's `deinit`: a field
/// whose type is derived from `Downstream` (an optional of it, a struct or lock around it) costs
/// the unspecialised `deinit` a runtime metadata lookup (a hash of its arguments, ~300
/// instructions each; six per subscribe + cancel before this layout), while a field typed by a
/// generic parameter reads its metadata straight from the object's class. Code inside reaches
/// the two fields through ``withState(_:)`` and ``withFastDownstream(_:)`` with their real types.
@usableFromInline
final class Conduit<Downstream: Subscriber, State, Slot>:
  AnyConduit<Downstream.Input, Downstream.Failure>, Subscription, CustomStringConvertible,
  CustomReflectable, CustomPlaygroundDisplayConvertible, @unchecked Sendable
{
  // Safety: all mutable state is in `lockedState`, read and written only under `lock`, and in
  // `fastSlot` (see its rule); the subscriber is called only by the single drainer
  // that `ConduitState` elects, after unlocking.
  @usableFromInline typealias Output = Downstream.Input
  @usableFromInline typealias Failure = Downstream.Failure
  @usableFromInline typealias Parent = SubjectCore<Output, Failure>

  @usableFromInline let lock = FieldLock()
  /// The ``ConduitState``; only inside ``withState(_:)``.
  @usableFromInline @exclusivity(unchecked) var lockedState: State
  @usableFromInline let replaysCurrentValue: Bool
  @usableFromInline let demandIsOnOff: Bool
  @usableFromInline let description: String
  /// `request(_:)` and `cancel()` as compiled where the subscriber attached (specialized);
  /// subscribers call them through `any Subscription`, whose generic implementations forward.
  @usableFromInline let specializedRequest: (Conduit, Subscribers.Demand) -> Void
  @usableFromInline let specializedCancel: (Conduit) -> Void
  /// The fast path's word (see the type's table).
  @usableFromInline let fast = Atomic<UInt>(0)
  /// The downstream for fast deliveries, until terminal (a `Downstream?`; only through
  /// ``withFastDownstream(_:)``). Safety: read without the lock only by the subject's sender
  /// that found ``fast`` eligible; written only under the lock while ``fast`` is 0 and no such
  /// sender can be delivering (see the type).
  @usableFromInline @exclusivity(unchecked) var fastSlot: Slot
  /// The `Sink` that handed this conduit its closure's release (`Sink.releaseOwner`), as its
  /// address, or 0: fast deliveries call it through this unretained address, without the
  /// retain and release that taking it out of ``fastSlot`` (a bit cast, or an erased box's
  /// field) costs per value. Written once, under the lock, at the sink's first request —
  /// before the fast path can open, whose word's store publishes it; the sink stays alive
  /// while fast deliveries may run, held by ``fastSlot``.
  @usableFromInline @exclusivity(unchecked) var ownedSink: UInt = 0

  /// Makes a conduit from its state machine and its fast-delivery downstream (both moved in,
  /// typed as the generic parameters so that nothing is copied through value witnesses).
  @inlinable
  init(parent: Parent, state: consuming State, fastDownstream: consuming Slot) {
    // The layout's invariant (see the type); true by construction in `SubjectCore.subscribe`.
    assert(State.self == ConduitState<Downstream, Parent>.self && Slot.self == Downstream?.self)
    replaysCurrentValue = parent.replaysCurrentValue
    demandIsOnOff = parent.demandIsOnOff
    description = parent.name
    lockedState = state
    specializedRequest = { $0.requestSpecialized($1) }
    specializedCancel = { $0.cancelSpecialized() }
    fastSlot = fastDownstream
    // Non-capturing, so made without a context here, where `Downstream` is known.
    super.init(
      offerInPlace: { unsafeDowncast($0, to: Conduit.self).offerInPlace($1) },
      finish: { unsafeDowncast($0, to: Conduit.self).finish($1) },
      release: { unsafeDowncast($0, to: Conduit.self).releaseDeferredDownstream() },
      // Run by the subject's turn, while no sender can add to the queue: to its end.
      drain: { unsafeDowncast($0, to: Conduit.self).drain(adding: .none, handingOff: false) })
  }

  /// Runs `body` under the lock with the state machine.
  @inlinable @inline(__always)
  func withState<Result>(_ body: (inout ConduitState<Downstream, Parent>) -> Result) -> Result {
    lock.withLock {
      // Safety: `lockedState` is a `ConduitState<Downstream, Parent>` (the layout's invariant),
      // so its memory is bound to that type; the lock makes this the only access.
      withUnsafeMutablePointer(to: &lockedState) { pointer in
        pointer.withMemoryRebound(to: ConduitState<Downstream, Parent>.self, capacity: 1) {
          body(&$0.pointee)
        }
      }
    }
  }

  /// Runs `body` with the fast-delivery downstream, in place (no copy, so no retain).
  @inlinable @inline(__always)
  func withFastDownstream<Result>(_ body: (inout Downstream?) -> Result) -> Result {
    // Safety: `fastSlot` is a `Downstream?` (the layout's invariant); callers keep its rule.
    withUnsafeMutablePointer(to: &fastSlot) { pointer in
      pointer.withMemoryRebound(to: Downstream?.self, capacity: 1) { body(&$0.pointee) }
    }
  }

  @usableFromInline typealias SinkDownstream = Subscribers.Sink<Output, Failure>
  @usableFromInline typealias ErasedDownstream = AnySubscriber<Output, Failure>

  /// Whether the subscriber may be a `Sink` whose closure's release this conduit takes over:
  /// a `Sink`, or an `AnySubscriber` (which may wrap one: `AnyPublisher` wraps its subscriber).
  /// Decided where the conduit is specialized.
  @inlinable static var downstreamMayBeSink: Bool {
    Downstream.self == SinkDownstream.self || Downstream.self == ErasedDownstream.self
  }

  /// The subscriber as the `Sink` it is or wraps (``AnySubscriberBox/sink``), or `nil`; only
  /// where ``downstreamMayBeSink``. (Bit casts to the type it is, not `as`, which for an
  /// unconstrained generic goes through the runtime's casts.)
  @inlinable @inline(__always)
  static func sink(of downstream: Downstream) -> SinkDownstream? {
    SinkDownstream.sink(of: downstream)
  }

  /// This conduit as `Sink.releaseOwner` names it: its address.
  @inlinable var ownerWord: UInt { SinkDownstream.ownerWord(self) }

  /// At the end of the subscription, after the last delivery: if the subscriber is a sink that
  /// handed this conduit its closure's release, releases it (deciding for the sink's own gate
  /// if the sink has not decided yet, so that exactly one of them does).
  @inlinable
  func endSinkDelivery(_ downstream: Downstream?) {
    guard Self.downstreamMayBeSink, let downstream, let sink = Self.sink(of: downstream) else {
      return
    }
    if sink.decidedReleaseOwner() == ownerWord { sink.closeGate() }
  }

  @inlinable static var eligible: UInt { 1 }
  @inlinable static var interrupted: UInt { 2 }

  /// What ``suspendFastPath(_:sender:)`` found.
  @usableFromInline enum Suspension {
    /// The fast path was closed already.
    case idle
    /// It was open, and is closed now; a sender of another thread may be delivering on it.
    case closed
    /// The event comes from inside a fast delivery on this thread, which drains once it
    /// returns: the caller marks the state draining.
    case inFlight
  }

  /// Called under the lock before an event changes the state: no new fast delivery starts.
  /// `sender`: the event is the subject's sender offering through the lock (it is not inside a
  /// delivery to this conduit).
  @inlinable
  func suspendFastPath(_ parent: Parent?, sender: Bool = false) -> Suspension {
    switch fast.load(ordering: .relaxed) {
    case Self.interrupted:
      return .inFlight
    case Self.eligible:
      if !sender, let parent, parent.subscribers.isDelivering(to: self) {
        fast.store(Self.interrupted, ordering: .relaxed)
        return .inFlight
      }
      fast.store(0, ordering: .sequentiallyConsistent)
      return .closed
    default:
      return .idle
    }
  }

  /// For a subject with a current value, under the subject's lock as the conduit is attached
  /// (before anyone else can reach it): the value it replays on its first request, unless it
  /// is sent a newer one first.
  @inlinable
  func oweCurrentValue(_ value: Output?) {
    withState { $0.owedValue = value }
  }

  /// A value from the subject's sender holding its list (see ``SharedSubscriberList``).
  @inlinable
  func offerInPlace(_ value: Output) {
    // Sequentially consistent, like the claim of the list before it and a cancel's store:
    // either the cancel sees the sender, or the sender sees the cancel.
    guard fast.load(ordering: .sequentiallyConsistent) == Self.eligible else {
      return offer(value)
    }
    // Safety: only this sender delivers while the word is eligible, and nothing writes
    // `fastSlot` meanwhile (see the type).
    if Self.downstreamMayBeSink, ownedSink != 0 {
      // A sink whose `receiveValue` this conduit releases: no gate (see `Sink.releaseOwner`),
      // and no reference count traffic (``fastSlot`` holds it).
      let sink = UnsafeRawPointer(bitPattern: ownedSink).unsafelyUnwrapped
      Unmanaged<SinkDownstream>.fromOpaque(sink)._withUnsafeGuaranteedRef {
        $0.receiveFromOwner(value)
      }
    } else {
      withFastDownstream { slot in
        _ = slot.unsafelyUnwrapped.receive(value)  // demand stays `.unlimited`
      }
    }
    // Interrupted (only from inside the delivery, so this thread's own write): the state counts
    // as draining, and this thread is its drainer.
    guard fast.load(ordering: .relaxed) == Self.interrupted else { return }
    fast.store(0, ordering: .relaxed)
    drain(adding: .none)
  }

  /// A value through the lock, from the subject's sender when the fast path is closed (a send
  /// from inside a delivery is queued by the subject, so it never reaches a conduit nested).
  @inlinable
  func offer(_ value: Output) {
    var replaced: Output?
    var gated: Parent?
    let action = withState { state in
      if suspendFastPath(state.parent, sender: true) == .inFlight { state.draining = true }
      let action = state.offered(
        value, replaysCurrentValue: replaysCurrentValue, replaced: &replaced)
      if case .waitForAttach = action { gated = state.parent }
      return action
    }
    withExtendedLifetime(replaced) {}  // released after unlocking
    switch action {
    case .deliver(let downstream): drain(adding: downstream.receive(value))
    case .drain: drain(adding: .none)
    case .waitForAttach(let waiter):
      // The turn delivering parks at its end until the attach ends; the attach's drain leaves
      // what its share did not cover to it (see `attachEnded()` and `TurnParking`).
      guard let gated else {
        Violation.internalInconsistency("an attaching conduit had no subject")
      }
      gated.parkTurnForAttach(at: waiter)
    case .none: break
    }
  }

  @inlinable
  func finish(_ completion: Subscribers.Completion<Failure>) {
    let drains = withState { state in
      if suspendFastPath(state.parent) == .inFlight { state.draining = true }
      return state.finished(completion)
    }
    if drains { drain(adding: .none) }
  }

  @inlinable
  func request(_ demand: Subscribers.Demand) { specializedRequest(self, demand) }

  @inlinable
  func requestSpecialized(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    let demand = demandIsOnOff ? .unlimited : demand
    // A replay runs holding the subject's turn (see the type: **Replay**).
    if replaysCurrentValue, let parent = withState({ $0.replayNeedsTurn ? $0.parent : nil }) {
      var announce: Parent?
      // Not handed to the turn part way: the turn stops at this thread's waiter, so nothing
      // is added to the queue meanwhile; past the call's allowance, the rest goes back to
      // the holder (see `withReplayTurn`).
      parent.withReplayTurn { charged in
        let (drains, parent) = addDemand(demand)
        announce = parent
        let stopped = drains && drain(adding: .none, handingOff: false, charged: charged)
        return stopped ? self : nil
      }
      announce?.downstreamRequested()
      return
    }
    // After draining: a value the upstream sends while it is asked for `.unlimited` then finds
    // this conduit idle and is delivered at once, in order with the upstream's other effects.
    requestNow(demand)?.downstreamRequested()
  }

  /// Adds `demand` and drains if this thread becomes the drainer; returns the parent to tell
  /// of the subscriber's first request (after the turn, if the drain ran in one).
  @inlinable
  func requestNow(_ demand: Subscribers.Demand) -> Parent? {
    let (drains, parent) = addDemand(demand)
    if drains { drain(adding: .none) }
    return parent
  }

  /// Adds `demand`: whether this thread became the drainer, and the parent to tell of the
  /// subscriber's first request.
  @inlinable
  func addDemand(_ demand: Subscribers.Demand) -> (drains: Bool, parent: Parent?) {
    withState { state -> (Bool, Parent?) in
      // Eligible: demand is `.unlimited` already and nothing waits, so nothing changes (and a
      // sender may be delivering without the lock).
      if fast.load(ordering: .relaxed) == Self.eligible { return (false, nil) }
      if Self.downstreamMayBeSink, !state.announcedDemand, let downstream = state.downstream,
        let sink = Self.sink(of: downstream)
      {
        // The sink's first request, on the subscription it accepted: this conduit takes over
        // the release of its closure, unless a cancel or completion decided first.
        let (exchanged, owner) = sink.releaseOwner.compareExchange(
          expected: 0, desired: ownerWord, ordering: .acquiringAndReleasing)
        if exchanged || owner == ownerWord {
          ownedSink = UInt(bitPattern: Unmanaged.passUnretained(sink).toOpaque())
        }
      }
      if suspendFastPath(state.parent) == .inFlight { state.draining = true }
      return (state.requested(demand), state.firstRequest())
    }
  }

  @inlinable
  func cancel() { specializedCancel(self) }

  @inlinable
  func cancelSpecialized() {
    var foreignSender = false
    var gateWaiters: [TurnWaiter] = []
    defer { for waiter in gateWaiters { waiter.grant() } }
    let (released, fastDownstream) = withState {
      state -> (
        (downstream: Downstream?, parent: Parent?, subject: AnyObject?, queue: [Output?]),
        Downstream?
      ) in
      gateWaiters = state.openAttachGate()  // granted: their parked turn resumes
      guard state.downstream != nil else { return (state.cancelled(), nil) }
      let suspension = suspendFastPath(state.parent)
      if suspension == .inFlight { state.draining = true }
      // A sender of another thread marks nothing here: it may be delivering now.
      foreignSender =
        suspension == .closed && state.parent?.subscribers.foreignSenderMayBeDelivering() == true
      // A delivery in flight (a drain, or one of this thread's fast deliveries) keeps
      // `fastSlot`; the drain that follows it releases it.
      let keepsDownstream = state.draining || foreignSender
      return (state.cancelled(), keepsDownstream ? nil : withFastDownstream { $0.take() })
    }
    if let parent = released.parent {
      let deferred = parent.detach(self, deferringRelease: foreignSender)
      if foreignSender {
        // Deferred: released by the sender as it leaves. Otherwise the sender left before the
        // detach, and none can reach this conduit now: released here.
        if !deferred { releaseDeferredDownstream() }
        withExtendedLifetime(released) {}
        return
      }
    }
    if released.downstream != nil { endSinkDelivery(fastDownstream) }
    withExtendedLifetime((released, fastDownstream)) {}
  }

  /// The end of a cancel that found a sender of another thread reading the list: called once
  /// no sender can be delivering, it releases the downstream (see ``SharedSubscriberList``).
  @inlinable
  func releaseDeferredDownstream() {
    let downstream = withState { _ in withFastDownstream { $0.take() } }
    endSinkDelivery(downstream)
    withExtendedLifetime(downstream) {}
  }

  /// The drain loop; only the thread that `ConduitState` made the drainer runs it.
  ///
  /// **Bounded**: the subject's sender may keep adding to the queue while another thread (a
  /// `request`) drains it. After ``TurnWaiter/grantsPerTurn`` deliveries with more queued, the
  /// drain is handed to the subject's turn (``SubjectCore/continueDrain(of:)``), which
  /// continues it while no sender can offer, and this call returns — unless not `handingOff`
  /// (a replay, during which the turn's holder waits at the replay's waiter so that nothing is
  /// added: see ``SubjectCore/withReplayTurn(_:)``; or the turn itself continuing a drain).
  ///
  /// `charged`: every value after the first `free` ones (a replay: its own value; an attach's
  /// drain: the values queued while the subscriber attached, up to ``ConduitState/attachQueueLimit``)
  /// is another thread's, queued while the drain ran beside that thread's turn (or by a turn
  /// parked at the attach's gate), and spends one of this call's allowance
  /// (``DeliveryContext/spendOne()``); once it is spent, the drain stops with the rest still
  /// queued (the conduit stays draining, so nobody else delivers to the subscriber) and returns
  /// `true`: the caller hands the rest to the turn's holder (see
  /// ``SubjectCore/withReplayTurn(_:)``).
  @inlinable
  @discardableResult
  func drain(
    adding demand: Subscribers.Demand, handingOff: Bool = true, charged: Bool = false,
    free: Int = 1, share: Int = TurnWaiter.grantsPerTurn
  ) -> Bool {
    var more = demand
    var delivered = 0
    var free = free
    while true {
      if charged, free == 0, DeliveryContext.current.allowance == 0 {
        switch stop(adding: more) {
        case .goOn: break
        case .paused: return false
        case .stopped: return true
        }
      }
      // Past its share, every step checks (a queue found empty may fill again before the
      // next step: the share is never exceeded).
      if handingOff, delivered >= share {
        switch stop(adding: more) {
        case .goOn: break
        case .paused: return false
        case .stopped(let parent):
          parent?.continueDrain(of: self)
          return false
        }
      }
      delivered += 1
      let (step, released) = withState {
        state -> (ConduitState<Downstream, Parent>.Step, Downstream?) in
        let step = state.nextStep(adding: more)
        switch step {
        case .idle where state.downstream == nil, .complete:
          return (step, withFastDownstream { $0.take() })
        case .idle:
          if state.allowsFastDelivery { fast.store(Self.eligible, ordering: .releasing) }
          return (step, nil)
        case .deliver:
          return (step, nil)
        }
      }
      // Terminal (`released` is the subscriber): nothing more is delivered but the completion.
      endSinkDelivery(released)
      withExtendedLifetime(released) {}
      switch step {
      case .deliver(let downstream, let value):
        if charged {
          if free > 0 { free -= 1 } else { _ = DeliveryContext.current.spendOne() }
        }
        more = downstream.receive(value)
      case .complete(let downstream, let completion, let parent, let subject):
        parent?.detach(self)
        downstream.receive(completion: completion)
        withExtendedLifetime(subject) {}
        return false
      case .idle:
        return false
      }
    }
  }

  /// What a drain that has spent its share does (see ``drain(adding:handingOff:charged:)``).
  @usableFromInline enum DrainStop {
    /// Nothing is queued: the drain goes on to its next step (idle, or the completion).
    case goOn
    /// Values are queued: the drain stops, keeping `more` for whoever continues it, with
    /// the parent to hand the rest to.
    case stopped(Parent?)
    /// The subscriber is still attaching: the rest waits for ``attachEnded()``.
    case paused
  }

  /// Under the lock: whether a drain that has spent its share stops (see ``DrainStop``).
  @inlinable
  func stop(adding more: Subscribers.Demand) -> DrainStop {
    withState { state in
      guard state.downstream != nil, state.queueHead < state.queue.count else { return .goOn }
      if state.pausedForAttach(adding: more) { return .paused }
      state.demand += more  // kept for the drain's next step
      return .stopped(state.parent)
    }
  }

  /// The subscriber's `receive(subscription:)` has returned on the subscribing thread (see
  /// ``ConduitState``, **Attaching**): drains what other threads brought meanwhile — and a value
  /// owed with demand for it — holding the subject's turn, as a request's replay is
  /// (``SubjectCore/withReplayTurn(_:)``), or opens the fast path.
  ///
  /// Holding the turn, no sender adds to the queue while this call drains it: the values are
  /// those queued while the subscriber attached. The first of them, up to
  /// ``ConduitState/attachQueueLimit``, are this call's (their senders' calls may have
  /// returned); past that limit each was queued by a turn that parked at the gate
  /// (``TurnParking``), whose call takes the rest back. If the turn was free, this call takes
  /// it and delivers them all (there is no parked turn then). If another thread holds it
  /// (running, or parked), this call drains beside it — its own share, then the rest within
  /// its allowance — and hands what is left back to that turn, first in its queue: the values
  /// that turn queued. The gate's waiters are granted after that, so a parked turn resumes with
  /// the rest first. (Before, the drain ran without the turn, and turns that went on meanwhile
  /// added to the queue what the next holder then delivered: a send delivered up to 151 values
  /// of others to one subscriber.)
  @inlinable
  func attachEnded() {
    var gateWaiters: [TurnWaiter] = []
    let (drains, free, delivered, parent) = withState { state -> (Bool, Int, Int, Parent?) in
      gateWaiters = state.openAttachGate()
      let delivered = state.deliveredWhileAttaching
      let queued = state.queue.count - state.queueHead
      // The first values queued are this call's to deliver (their senders' calls may have
      // returned); past the limit, each was queued by a turn that parked at the gate and
      // takes the rest back. With nothing queued, an owed value is a replay (free too).
      let free = queued > 0 ? min(queued, ConduitState<Downstream, Parent>.attachQueueLimit) : 1
      guard state.attachEnded() else {
        if state.allowsFastDelivery { fast.store(Self.eligible, ordering: .releasing) }
        return (false, 0, 0, nil)
      }
      return (true, free, delivered, state.parent)
    }
    defer { for waiter in gateWaiters { waiter.grant() } }  // after the drain
    guard drains else { return }
    guard let parent else {
      drain(adding: .none, handingOff: false)  // ended meanwhile: releases what it kept
      return
    }
    // What this call delivered while the subscriber attached counts against its allowance
    // (it is at most the drains' shares and what its own turns took on): the charged part of
    // the drain below is what is left, so the call delivers at most its allowance, and the
    // values queued before the gate closed (`free`), in all.
    _ = DeliveryContext.current.reserve(delivered)
    parent.withReplayTurn { charged in
      drain(adding: .none, handingOff: false, charged: charged, free: free) ? self : nil
    }
  }

  @usableFromInline var customMirror: Mirror {
    let (core, subject, downstream, demand) = withState {
      ($0.parent, $0.subject, $0.downstream, $0.demand)
    }
    // Combine's children; `parent`, `downstream` and `subject` read nil once it has ended. No
    // ancestor: ``AnyConduit``'s stored functions are internal (`dump` showed them).
    if demandIsOnOff {
      return Mirror(
        self, children: ["downstream": downstream as Any], ancestorRepresentation: .suppressed)
    }
    let parent: Any? = subject ?? core
    return Mirror(
      self,
      children: [
        ("parent", parent as Any), ("downstream", downstream as Any), ("demand", demand),
        ("subject", parent as Any),
      ], ancestorRepresentation: .suppressed)
  }

  @usableFromInline var playgroundDescription: Any { description }
}
