import Synchronization

/// The machinery every subject shares: the list of subscriptions, the completion replayed to
/// late subscribers, the upstream subscriptions it was given and, for subjects that have one,
/// the current value.
///
/// **Ordering**: a `send` reaches every subscriber that is attached when it starts, in attachment
/// order; each subscriber receives values serially (see ``Conduit``). One thread at a time
/// delivers (the turn, see ``SharedSubscriberList``): a send (or completion) racing another
/// thread's turn is handed to it while the turn has grants (reserved from its holder's
/// allowance, see ``DeliveryContext``), and past that waits until the turn delivers its value
/// for it or hands it the turn — or, made from inside a delivery, defers that wait to the end of
/// its outermost call; a send from inside a delivery of this subject is queued behind the value
/// being delivered. Every subscriber receives the values in one order, the order the sends were
/// serialised in, each thread's in the order sent; nothing demanded is lost and nothing
/// duplicated. **Bounded calls**: a `send`, `send(completion:)` or `cancel()` made outside any
/// delivery returns after its own work plus at most ``DeliveryContext/allowancePerCall`` values
/// handed over by others, however many engines its values pass through.
/// **Completion**: delivered once to each attached subscriber and replayed to later
/// ones (after `Subscriptions.empty`); values after completion are ignored.
/// **Cost**: attaching and detaching a subscriber take constant amortised time, however many
/// there are (see ``SubscriberList``).
/// **Upstreams**: each subscription given through `send(subscription:)` is kept, asked for
/// `.unlimited` (at once, or — PassthroughSubject, as in Combine — once any subscriber has made a
/// request) and cancelled when the core is released.
@usableFromInline
final class SubjectCore<Output, Failure: Error>: CustomStringConvertible, @unchecked Sendable {
  // Safety: all mutable state is in `state`'s lock; conduits and upstreams are called after
  // unlocking.
  @usableFromInline
  struct State {
    /// The subscriptions in attachment order (see ``SubjectCore/subscribers``).
    @usableFromInline var subscribers = SharedSubscriberList<Output, Failure>.Guarded()
    @usableFromInline var completion: Subscribers.Completion<Failure>?
    @usableFromInline var upstreams: [any Subscription] = []
    @usableFromInline var currentValue: Output?
    /// Whether kept upstreams have been (and new ones are at once) asked for `.unlimited`.
    @usableFromInline var upstreamsOpen: Bool
    /// The subject object that owned this core is gone (``cancelUpstreams()``): a connection
    /// that still holds the core (``SubjectSubscriber``) may send into it, but an upstream that
    /// arrives now is not kept or asked for anything, and no value is stored as current.
    @usableFromInline var orphaned = false

    @inlinable init(currentValue: Output?, upstreamsOpen: Bool) {
      self.currentValue = currentValue
      self.upstreamsOpen = upstreamsOpen
    }
  }

  /// The `description` of this subject's subscriptions, as Combine names them.
  @usableFromInline let name: String
  /// Whether subscribers receive the current value first (CurrentValueSubject, Published).
  @usableFromInline let replaysCurrentValue: Bool
  /// Whether a subscriber's demand is on/off: after its first request it receives every value
  /// (ObservableObjectPublisher, as in Combine).
  @usableFromInline let demandIsOnOff: Bool
  @usableFromInline let state: Lock<State>
  /// The subscriptions in attachment order: changed under `state`'s lock (the list is in
  /// `State.subscribers`), read by one sender at a time without it.
  @usableFromInline let subscribers = SharedSubscriberList<Output, Failure>()
  /// A subscriber has made a request (PassthroughSubject: kept upstreams are then asked for
  /// `.unlimited`). With ``keptUpstreams`` it lets the first request skip the lock when there
  /// is no upstream to open: each side writes its flag, then reads the other's, sequentially
  /// consistent, so at least one of them sees both and opens the upstreams.
  let downstreamHadDemand = Atomic<Bool>(false)
  /// How many upstream subscriptions were kept (see ``downstreamHadDemand``).
  let keptUpstreams = Atomic<Int>(0)

  /// `requestsUpstreamsOnDemand`: upstreams are asked for `.unlimited` only once a subscriber
  /// has demand (PassthroughSubject), not as soon as they arrive. `demandIsOnOff`: see
  /// ``demandIsOnOff``.
  @inlinable
  init(
    name: String, currentValue: Output?, requestsUpstreamsOnDemand: Bool = false,
    demandIsOnOff: Bool = false
  ) {
    self.name = name
    replaysCurrentValue = currentValue != nil
    self.demandIsOnOff = demandIsOnOff
    state = Lock(State(currentValue: currentValue, upstreamsOpen: !requestsUpstreamsOnDemand))
  }

  /// The subject's name: what a conduit's `parent` and `subject` children show.
  @usableFromInline var description: String { name }

  deinit {
    for upstream in state.withLock({ $0.upstreams }) { upstream.cancel() }
  }

  /// Cancels the upstream subscriptions kept (after unlocking): as the subject object that owns
  /// this core is deinitialised. A multicast's connection may hold the core itself, strongly
  /// (``SubjectSubscriber``), so the core's own `deinit` can come later; the subject's death is
  /// what cancels its upstreams, as in Combine.
  @usableFromInline
  func cancelUpstreams() {
    let (upstreams, value) = state.withLock { state in
      defer { state.upstreams.removeAll() }
      state.orphaned = true
      return (state.upstreams, state.currentValue.take())
    }
    for upstream in upstreams { upstream.cancel() }
    withExtendedLifetime(value) {}  // released after unlocking
  }

  @inlinable
  var currentValue: Output? {
    get { state.withLock { $0.currentValue } }
  }

  /// Attaches `downstream`; its subscription keeps `subject` (the object this core belongs to)
  /// alive until it ends, as a subscription to a Combine subject does.
  @inlinable
  func subscribe<Downstream: Subscriber>(_ downstream: Downstream, subject: AnyObject? = nil)
  where Downstream.Input == Output, Downstream.Failure == Failure {
    let context = DeliveryContext.current
    let conduit = Conduit<Downstream, ConduitState<Downstream, SubjectCore>, Downstream?>(
      parent: self,
      state: ConduitState(
        downstream: downstream, parent: self, subject: subject,
        replaysCurrentValue: replaysCurrentValue, attachingThread: context.identity),
      fastDownstream: downstream)
    let (completion, garbage) = state.withLock {
      state -> (Subscribers.Completion<Failure>?, SharedSubscriberList<Output, Failure>.Garbage) in
      if let completion = state.completion { return (completion, .init()) }
      // The value of this moment: every later send reaches the conduit (see `ConduitState`).
      if replaysCurrentValue { conduit.oweCurrentValue(state.currentValue) }
      return (nil, subscribers.update(&state.subscribers) { $0.append(conduit) }.1)
    }
    garbage.dispose()
    if let completion {
      downstream.receive(subscription: Subscriptions.empty)
      downstream.receive(completion: completion)
    } else {
      // Until it returns, nothing reaches the subscriber on another thread (see
      // `ConduitState`, **Attaching**). It runs as inside a delivery: a sender of another
      // thread may wait for its end (`AttachGate`), so a `send` made inside it must never
      // block for a turn (it is deferred to the end of this call, see `DeliveryContext`).
      context.enter()
      downstream.receive(subscription: conduit)
      conduit.attachEnded()
      context.exit()
    }
  }

  /// Sends `value` to every attached subscriber with demand; for a subject with a current
  /// value, also makes it the current value (after completion only when
  /// `storingAfterCompletion`: setting `CurrentValueSubject.value` stores, `send(_:)` does not).
  ///
  /// One sender at a time (the turn) reads the subscriber list in place, without the lock (see
  /// ``SharedSubscriberList``); a send that finds another thread's turn in progress hands its
  /// value to it (or, once that turn has taken its share, waits until the turn delivers it or
  /// passes to it), and a send
  /// from inside a delivery is queued behind the value being delivered.
  ///
  /// **A busy claim is tried again** (at most ``busyClaimRetries`` times): a send from outside
  /// any delivery that finds another thread's turn offering no grant — its value would make it
  /// sleep until a turn of its own, one sleep and one wake-up per value — first yields the
  /// processor and tries the claim again. The turn often ends meanwhile (a subscriber's
  /// `receive` is short), and a free turn has an empty queue, so a retry that takes it
  /// overtakes no queued value; a retry takes no turn and reserves nothing, so the bound on
  /// one call's work and the order of values are those of a send that locked at once. It only
  /// delays the locked path by a few system calls (at most ``busyClaimRetries`` yields, never
  /// a spin). The trade (Benchmarks/README.md, issue 38): with 8 and 16 senders into a fast
  /// subscriber throughput rose from about a third of OpenCombine's to above it (behind a
  /// ~1 µs subscriber, to about half of it), and the median send got faster, but
  /// the senders that lose their retries to others and sleep wait longer: behind a ~1 µs
  /// subscriber the slowest 0.1 % of sends took 2–4× as long.
  @inlinable
  func send(_ value: Output, storingAfterCompletion: Bool = false) {
    let context = DeliveryContext.current
    if !replaysCurrentValue {
      var retries = 0
      claiming: while true {
        // (Pattern matching, not `==`: the derived `==` of `Claim` is a call.)
        switch subscribers.claim(by: context.identity) {
        case .nobody:
          return
        case .claimed(let address):
          subscribers.beginTurn(context)
          subscribers.forEach(inStorageAt: address) { $0.receiveInPlace(value) }
          leave(context, held: address)
          return
        case .stale(let address):
          subscribers.beginTurn(context)
          leave(context, held: address)
        case .busy, .nested, .draining, .wait:
          if retries < Self.busyClaimRetries, !context.mustNotBlock,
            subscribers.offersNoGrant
          {
            retries += 1
            yieldProcessor()
            continue claiming
          }
        }
        break
      }
    }
    sendLocked(value, by: context, storing: storingAfterCompletion)
  }

  /// How many times a send tries a busy claim again before it locks (see
  /// ``send(_:storingAfterCompletion:)``). Two: one buys most of the gain with 8 and 16 fast
  /// senders, a second helps slow subscribers (8 senders into a ~1 µs sink: 0.80× → 0.9×
  /// OpenCombine's throughput); more bought nothing.
  @inlinable static var busyClaimRetries: Int { 2 }

  /// `send` through the lock: another thread's sender holds the list (the value is handed
  /// over, or this thread waits for its turn — or, inside a delivery, defers that wait), this
  /// thread's does (the value is queued), or the subject has a current value to store.
  @inlinable
  func sendLocked(
    _ value: Output, by context: DeliveryContext, storing storingAfterCompletion: Bool
  ) {
    // The value this send replaces as the current value is released as the call ends: its
    // `deinit` may call back into this subject (read `value`, send, subscribe), which it must
    // not do under the lock, nor between queuing this thread's waiter and waiting for it (a
    // send there would wait on the same semaphore, for a turn behind this thread's own).
    var replaced: Output?
    defer { withExtendedLifetime(replaced) {} }
    let (claim, conduits) = claimOrHandOff(
      value, by: context, storing: storingAfterCompletion, replacing: &replaced)
    switch claim {
    case .nobody, .busy, .stale, .nested:
      return  // nobody to send to, or queued
    case .claimed(let address):
      subscribers.forEach(inStorageAt: address) { $0.receiveInPlace(value) }
      leave(context, held: address)
    case .draining:
      leave(context, held: SharedSubscriberList<Output, Failure>.draining)  // runs the queue
    case .wait(let waiter):
      guard !context.mustNotBlock else {
        // Inside a delivery (or coming back to deferred waiters): never block (turns that
        // feed each other would deadlock). The value stays queued with its waiter; this
        // thread comes back to it when its outermost turn ends.
        context.deferTurn(waiter) { [self] in takeGrantedTurn(value, to: conduits, context) }
        return
      }
      // Dismissed: the turn delivered the value for this thread.
      guard waiter.wait() else { return }
      takeGrantedTurn(value, to: conduits, context)
    }
  }

  /// The turn was handed to this thread's waiter: it offers its own grants, delivers its value
  /// to the subscribers attached when it was sent, and runs what follows. (Inlinable so that
  /// the queue it runs is specialised: generic, `runHandedOver` looked up metadata per item —
  /// 3–4 % of a profile with eight contending senders.)
  @inlinable
  func takeGrantedTurn(
    _ value: Output, to conduits: SlotArray<AnyConduit<Output, Failure>>,
    _ context: DeliveryContext
  ) {
    subscribers.beginTurn(context)
    deliver(value, to: conduits)
    leave(context, held: SharedSubscriberList<Output, Failure>.draining)
  }

  /// Under the lock: ``SharedSubscriberList/claimOrHandOff(by:_:_:)``, and, if this thread
  /// must wait for its turn, the subscribers the value is for. For a subject with a current
  /// value, the value is stored in the same lock round, so that a subscriber attaching
  /// meanwhile receives it once, replayed or sent; the value it replaces goes to `replaced`,
  /// for the caller to release once its call is done (see ``sendLocked(_:by:storing:)``).
  @inlinable
  func claimOrHandOff(
    _ value: Output, by context: DeliveryContext, storing storingAfterCompletion: Bool,
    replacing replaced: inout Output?
  ) -> (SharedSubscriberList<Output, Failure>.Claim, SlotArray<AnyConduit<Output, Failure>>) {
    state.withLock {
      state -> (SharedSubscriberList<Output, Failure>.Claim, SlotArray<AnyConduit<Output, Failure>>)
      in
      let claim = subscribers.claimOrHandOff(by: context, &state.subscribers) {
        .value(value, $0)
      }
      // Combine: `send(_:)` after completion leaves `value` as it was; setting `value` stores.
      if replaysCurrentValue, !state.orphaned,
        state.completion == nil || storingAfterCompletion
      {
        replaced = state.currentValue.take()
        state.currentValue = value
      }
      guard case .wait = claim else { return (claim, SlotArray()) }
      return (claim, state.subscribers.list.slots)
    }
  }

  /// Delivers `value` in place to `conduits` (a list kept alive by the array), by the holder
  /// of the turn.
  @inlinable
  func deliver(_ value: Output, to conduits: SlotArray<AnyConduit<Output, Failure>>) {
    withExtendedLifetime(conduits) {
      subscribers.forEach(inStorageAt: conduits.storageAddress) { $0.receiveInPlace(value) }
    }
  }

  /// Ends this thread's turn, ``reader`` held as `held`: runs what was queued for it (up to a
  /// waiter it hands the turn to), then gives back the list — the give-back fails while work
  /// waits, so whatever comes as it leaves is run too; then leaves the turn in the thread's
  /// context (``DeliveryContext/exit()``, which comes back to deferred waiters at the outermost
  /// turn).
  @inlinable @inline(__always)
  func leave(_ context: DeliveryContext, held: UInt) {
    defer { context.exit() }
    while true {
      switch subscribers.leave(held: held, thread: context.identity) {
      case .left:
        return
      case .kept:
        guard runHandedOver(context) else { return }
      }
    }
  }

  /// Runs what was queued for this turn, oldest first, until the queue is empty (`true`) or
  /// a waiter comes first (`false`: the turn is handed to it, and this thread must not touch
  /// the list any more). Granted values queued with nothing else come as one batch: one lock
  /// round instead of one per value, so other senders' hand-offs wait behind the holder less
  /// often. The batch's buffer goes back in the next lock round, so batches allocate nothing. (Inlinable so that
  /// it is specialised: generic, it looked up the metadata of `HandedOver` per item.)
  @inlinable
  func runHandedOver(_ context: DeliveryContext) -> Bool {
    // A batch's buffer, emptied, given back in the next lock round.
    var emptied: [SharedSubscriberList<Output, Failure>.HandedOver?]?
    while true {
      let next = state.withLock { state in
        if let buffer = emptied.take() { state.subscribers.spareBuffer = buffer }
        return subscribers.nextHandedOver(&state.subscribers, context)
      }
      switch next {
      case .runValues(var batch, let head):
        for index in head..<batch.count {
          // Moved out, so that each value is released as its delivery ends.
          guard case .value(let value, let conduits)? = batch[index].take() else {
            Violation.internalInconsistency("a subject's batch held work other than values")
          }
          deliver(value, to: conduits)
        }
        batch.removeAll(keepingCapacity: true)
        emptied = batch
      case .done:
        return true
      case .passed(let waiter):
        waiter.grant()
        return false
      case .parked:
        return false  // taken back by this call as the gates open (`resumeParkedTurn`)
      case .paused(let replay):
        replay.waitForReplay()  // holding the turn: a bounded drain on the replay's thread
      case .run(.value(let value, let conduits)):
        deliver(value, to: conduits)
      case .run(.completion(let completion, let conduits)):
        conduits.forEach { $0.receiveFromSubject(completion: completion) }
      case .run(.release(let conduit)):
        conduit.releaseAfterSenders()
      case .run(.drain(let conduit)):
        conduit.continueDrain()
      case .run(.waiter(let waiter, let value, let conduits)):
        // Delivered for the waiting sender, within the turn's budget: its `send` returns.
        deliver(value, to: conduits)
        waiter.dismiss()
      case .run(.replay):
        Violation.internalInconsistency("a replay's waiter was run as work")
      }
    }
  }

  @inlinable
  func send(completion: Subscribers.Completion<Failure>) {
    let context = DeliveryContext.current
    let (conduits, garbage, claim) = state.withLock {
      state -> (
        SlotArray<AnyConduit<Output, Failure>>, SharedSubscriberList<Output, Failure>.Garbage,
        SharedSubscriberList<Output, Failure>.Claim
      ) in
      guard state.completion == nil else { return (SlotArray(), .init(), .busy) }
      state.completion = completion
      let (conduits, garbage) = subscribers.update(&state.subscribers) { $0.removeAll() }
      // A sender reads (another thread's, or this thread's: a completion from inside a
      // delivery), or values handed over wait: the completion is delivered after them.
      let claim = subscribers.handOffToReader(
        .completion(completion, conduits), inOrder: true, &state.subscribers, by: context)
      return (claim == .nested ? conduits : SlotArray(), garbage, claim)
    }
    garbage.dispose()
    conduits.forEach { $0.receiveFromSubject(completion: completion) }
    if claim == .draining { leave(context, held: SharedSubscriberList<Output, Failure>.draining) }
  }

  @usableFromInline
  func send(subscription: any Subscription) {
    let open = state.withLock { state -> (Bool, [any Subscription]) in
      // The subject is gone: as in Combine, where its connection then holds `nil`.
      if state.orphaned { return (false, []) }
      state.upstreams.append(subscription)
      keptUpstreams.add(1, ordering: .sequentiallyConsistent)
      if !state.upstreamsOpen, downstreamHadDemand.load(ordering: .sequentiallyConsistent) {
        state.upstreamsOpen = true
        return (true, state.upstreams)
      }
      return (state.upstreamsOpen, [subscription])
    }
    if open.0 { for upstream in open.1 { upstream.request(.unlimited) } }
  }

  /// A subscriber made its first request: kept upstreams waiting for demand are asked for
  /// `.unlimited` now (once). Without kept upstreams it costs two atomic operations, no lock.
  @usableFromInline
  func downstreamRequested() {
    if downstreamHadDemand.load(ordering: .relaxed) { return }
    downstreamHadDemand.store(true, ordering: .sequentiallyConsistent)
    guard keptUpstreams.load(ordering: .sequentiallyConsistent) > 0 else { return }
    let waiting = state.withLock { state -> [any Subscription] in
      if state.upstreamsOpen { return [] }
      state.upstreamsOpen = true
      return state.upstreams
    }
    for upstream in waiting { upstream.request(.unlimited) }
  }

  /// Forgets `conduit` (it was cancelled or has completed).
  @inlinable
  func detach(_ conduit: AnyConduit<Output, Failure>) {
    _ = detach(conduit, deferringRelease: false)
  }

  /// Forgets `conduit`; `deferringRelease`: it was cancelled while a sender of another thread
  /// may have been delivering to it. Returns `true` if that sender still reads the list: it
  /// then has the conduit release its subscriber as it leaves (see ``SharedSubscriberList``).
  @inlinable
  func detach(_ conduit: AnyConduit<Output, Failure>, deferringRelease: Bool) -> Bool {
    let context = DeliveryContext.current
    let (claim, garbage) = state.withLock { state in
      let (_, garbage) = subscribers.update(&state.subscribers) { $0.remove(conduit) }
      guard deferringRelease, !garbage.exclusive else {
        return (SharedSubscriberList<Output, Failure>.Claim.nested, garbage)
      }
      return (
        subscribers.handOffToReader(
          .release(conduit), inOrder: false, &state.subscribers, by: context), garbage
      )
    }
    garbage.dispose()
    if claim == .draining { leave(context, held: SharedSubscriberList<Output, Failure>.draining) }
    return claim != .nested
  }

  /// Runs `body` (a subscriber's replay, see ``Conduit``, or the drain that ends its attach,
  /// ``Conduit/attachEnded()``) on this thread, at once, so that the replay is synchronous as
  /// in Combine, and such that senders of other threads feel its pace instead of queueing
  /// values for the subscriber without bound while it runs.
  ///
  /// If the turn is free this thread takes it for the replay (then runs what was handed over
  /// meanwhile, like a `send`); if it holds it already (a request from inside a delivery of
  /// this subject), `body` runs nested. If another thread holds it, this thread queues a
  /// ``ReplayWaiter`` and runs `body` at once without the turn, as a delivery of its own (a
  /// wait inside it is deferred, see ``DeliveryContext``): the turn in progress runs what was
  /// queued before the waiter and then waits for the replay, holding the turn, so that nothing
  /// more is offered to the subscriber meanwhile. `body`'s argument: whether values of other
  /// threads it delivers count against this call's allowance (the replay runs without the
  /// turn: what the turn in progress queued for the subscriber meanwhile is others'); it
  /// returns the conduit whose drain it stopped with values left once the allowance ran out —
  /// the holder, which queued them, delivers the rest (first, before it goes on). This thread
  /// never blocks for the turn, and never takes it from the holder.
  @inlinable
  func withReplayTurn(_ body: (_ charged: Bool) -> AnyConduit<Output, Failure>?) {
    let context = DeliveryContext.current
    let claim = state.withLock { subscribers.claimTurn(by: context, &$0.subscribers) }
    switch claim {
    case .nested:
      _ = body(false)
    case .draining:
      _ = body(false)
      leave(context, held: SharedSubscriberList<Output, Failure>.draining)
    case .beside(let waiter):
      context.enter()
      let rest = body(true)
      let holderWaits = state.withLock {
        subscribers.endReplay(waiter, handingBack: rest, &$0.subscribers)
      }
      if holderWaits { waiter.resume() }
      context.exit()
    }
  }

  /// The holder of the turn (inside its delivery) queued `waiter` at the gate of a subscriber
  /// that is attaching on another thread: its turn parks where it would end or be handed on
  /// (``TurnParking``), and its call waits for the gate at the end of its outermost turn;
  /// granted, it takes the turn back (``resumeParkedTurn(_:)``).
  @usableFromInline
  func parkTurnForAttach(at waiter: TurnWaiter) {
    let context = DeliveryContext.current
    guard context.depth > 0 else {
      Violation.internalInconsistency("a subject's attach gate was reached outside its turn")
    }
    state.withLock { subscribers.armParking(&$0.subscribers) }
    context.deferTurn(waiter) { [self] in resumeParkedTurn(context) }
  }

  /// A gate the parked turn waited for has opened: if it was the last, this call (the one
  /// that parked it) takes the turn back — with what is left of its allowance — and runs what
  /// was queued for it (first the rest of an attach's drain, handed back), then leaves.
  @usableFromInline
  func resumeParkedTurn(_ context: DeliveryContext) {
    guard state.withLock({ $0.subscribers.parking.resumed() }) else { return }
    subscribers.beginTurn(context)
    leave(context, held: SharedSubscriberList<Output, Failure>.draining)
  }

  /// Hands the rest of `conduit`'s drain to the turn (see ``Conduit/drain(adding:)``): the
  /// sender in flight runs it as it leaves, or this thread takes the turn to run it.
  @usableFromInline
  func continueDrain(of conduit: AnyConduit<Output, Failure>) {
    let context = DeliveryContext.current
    let claim = state.withLock {
      subscribers.handOffToTurn(.drain(conduit), &$0.subscribers, by: context)
    }
    // Runs the queue, the drain included.
    if claim == .draining { leave(context, held: SharedSubscriberList<Output, Failure>.draining) }
  }

  var subscriberCount: Int { state.withLock { $0.subscribers.list.count } }
}
