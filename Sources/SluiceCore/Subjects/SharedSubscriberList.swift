public import Synchronization

/// A subject's ``SubscriberList``, changed under the subject's lock and read by one sender at a
/// time without the lock and without retaining anything: a `send` takes ``reader`` with one
/// compare-and-swap and gives it back with a sequentially consistent store, however many
/// subscribers there are. Because only that sender delivers without a lock, the conduits it
/// delivers to need none of their own (see ``Conduit``).
///
/// **Reading.** ``current`` is the address of the list's slot storage (``SlotArray``). A
/// sender takes ``reader`` by writing that address into it (compare-and-swap from 0), checks
/// that it is still current and that nothing handed over waits, notes its thread in
/// ``readerThread``, calls each subscription in place (noting which in ``position``) and gives
/// ``reader`` back (``leave()``). The holder of ``reader`` has *the turn*: it alone delivers.
///
/// **Handing over, bounded.** A send that finds another thread's turn in progress, and a
/// completion or a cancel's release that must not overlap it, are queued under the lock with
/// the list as it is then (``Guarded/handedOver``), and ``pending`` is set; the holder runs the
/// queue, oldest first, before it gives ``reader`` back. Two rules bound that work:
/// - a turn accepts values from other threads without waiting only while it has grants
///   (``Guarded/grants``: a turn begun under the lock, by draining or by a pass gets
///   ``TurnWaiter/grantsPerTurn`` less the values already queued; a turn taken back after a
///   raced leave is the same call's and gets none). Past that, the sending thread queues a
///   ``TurnWaiter`` in the value's place and blocks until its turn;
/// - the waiting sender's value is queued with its waiter. The holder delivers such values for
///   their senders (and dismisses each waiter: its `send` returns) while the turn's *budget*
///   lasts (``Guarded/budget``, ``TurnWaiter/grantsPerTurn`` per turn); at the first waiter
///   past the budget it stops and hands that waiter the turn (``Next/passed``): the waiter
///   delivers its own value and runs what follows it, with a budget of its own.
///
/// So a `send` (or a `cancel()`, or a completion, that finds the turn free and takes it to run
/// the queue) returns after its own delivery plus at most `2 × grantsPerTurn + 1` values
/// queued by other threads (and what its own subscribers send from inside their deliveries,
/// and releases): a thread that never stops sending can no longer keep another thread's call
/// delivering its values, and the queue holds at most the granted values plus one value per
/// blocked thread. A racing sender waits at most for the turn in progress to reach its place.
/// The budget keeps many concurrent senders fast: the turn passes once per budget of waiting
/// senders' values, not once per value (each pass waits for the next holder to be scheduled,
/// which on a machine whose cores are busy takes a time slice).
///
/// **Proved, not only tested.** `Models/SubjectTurn.pml` models these steps (claim, leave,
/// hand-off, raced re-claim, waiter hand-over) for spin, which checks every interleaving of
/// 2–4 senders (CI: `Models/check`): every value delivered exactly once, each sender's in
/// order; every call returns (no waiter left without its turn or its delivery, nothing
/// stranded); one call runs at most `2 × grantsPerTurn + 1` values of other threads; nothing
/// left queued, pending or held.
///
/// **Order.** The queue is the order in which sends were serialised (under the lock, or by
/// taking ``reader``): every subscriber receives the values in that one order, each thread's in
/// the order it sent them. A send from inside a delivery (this thread holds the turn) is queued
/// too, so it reaches every subscriber after the value being delivered, never nested — and a
/// `CurrentValueSubject` whose subscriber sets `value` from inside `receive` ends with every
/// subscriber having received that value last. A completion from inside a delivery is queued
/// the same way.
///
/// | ``claim(by:)`` finds ``reader`` | the sender |
/// |---|---|
/// | 0, nothing pending | takes it and reads in place (``Claim/claimed(_:)``) |
/// | 0, work pending | takes it; queues its value behind the work and runs the queue (``Claim/claimedBehind(_:)``) |
/// | taken by this thread | queues its value for this turn (``Claim/queued``) |
/// | taken by another thread | under the lock: queues its value (``Claim/busy``) or, with no grants left, a waiter (``Claim/wait(_:)``) |
///
/// **Why it is safe to leave without a lock.** Handing over is a Dekker pair: the holder stores
/// 0 to ``reader`` then loads ``handOver``; the handing thread sets ``pending`` then loads
/// ``reader`` (all sequentially consistent), so at least one sees the other. A holder that
/// sees ``pending`` before giving ``reader`` back keeps it and runs the queue (``Leaving/kept``);
/// one that sees it only after (``Leaving/raced``) takes ``reader`` again under the lock (as
/// ``draining``) if it is still free; a thread that queues work and then finds ``reader`` free
/// takes it and runs the queue itself. Work waits only while ``pending`` is set (set with each
/// hand-off, cleared under the lock when the queue is empty), so nothing is left behind.
///
/// **Writing** (attach, detach, completion; under the subject's lock, through
/// ``update(_:_:)``): if no sender reads, the writer takes ``reader`` itself (``writing``, so
/// none can start), changes the list in place and publishes its storage's address; otherwise
/// it keeps the current storage alive and unchanged (*retired*: one more reference, so the
/// change goes to a copy) and publishes the copy. A completion made while another thread's
/// sender reads, or while handed-over work waits, is handed over too, after that work.
///
/// **Cancelling while a sender reads.** The sender does not mark the conduit it delivers to, so
/// a `cancel()` on another thread cannot tell whether a value is being delivered to its
/// subscriber right now: it detaches at once and hands the release of the subscriber to the
/// sender (``HandedOver/release(_:)``), which runs it as it leaves.
///
/// **Reclamation.** At most one retired storage is kept past a write (the one a sender is
/// reading); it is freed by the next write that finds no sender, or with the subject. It holds
/// subscriptions detached meanwhile; their conduits no longer hold their subscribers (cancelled
/// and completed conduits release them, or hand it over as above), so nothing the user made is
/// kept. Queued values and waiters hold the list they were sent to as a ``SlotArray`` (a
/// reference to its storage), so it stays alive until they are delivered.
///
/// **Why reading in place is safe.** Sender: compare-and-swap of ``reader``, then load of
/// ``current`` (and of each conduit's fast-path word); writer that finds a sender: exchange of
/// ``current``, then load of ``reader``; a cancel: store of the conduit's word, then load of
/// ``reader``; all sequentially consistent. So either the writer (or the cancel) sees the
/// sender and keeps its storage (or hands the release over), or the sender sees the new
/// address (or the cancelled conduit's word) and falls back. A storage is changed in place only
/// while the writer holds ``reader``. ``readerThread`` and ``position`` are read by other
/// threads only to learn that they are not the sender: a thread sees its own last writes to
/// them, and no other thread writes its identity (a turn handed to a waiter is written by the
/// granting thread before ``TurnWaiter/grant()``, which orders it before the waiter runs).
@usableFromInline
struct SharedSubscriberList<Output, Failure: Error>: ~Copyable, @unchecked Sendable {
  // Safety: the list is in ``Guarded``, inside the subject's lock; what senders read without
  // the lock is guarded by `reader` (see the type's documentation).
  @usableFromInline typealias List = SubscriberList<Output, Failure>
  @usableFromInline typealias Storage = SlotStorage<AnyConduit<Output, Failure>>
  @usableFromInline typealias Entry = AnyConduit<Output, Failure>

  /// What lives in the subject's locked state.
  @usableFromInline
  struct Guarded {
    @usableFromInline var list = List()
    /// Storages a sender may still be reading.
    @usableFromInline var retired: [Storage] = []
    /// What other threads (and this turn's own deliveries) left to the holder of ``reader``,
    /// oldest first, from ``handedOverHead`` on (taken one at a time; the buffer keeps its
    /// capacity).
    @usableFromInline var handedOver: [HandedOver] = []
    @usableFromInline var handedOverHead = 0
    /// How many more values other threads may hand to this turn without waiting.
    @usableFromInline var grants = TurnWaiter.grantsPerTurn
    /// How many more waiting senders' values this turn delivers for them before it passes the
    /// turn to the next waiting sender.
    @usableFromInline var budget = TurnWaiter.grantsPerTurn
    /// How many values the queue holds (waiters not counted): a new turn's grants are what is
    /// left of ``TurnWaiter/grantsPerTurn`` after them.
    @usableFromInline var valuesQueued = 0

    @inlinable init() {}

    @inlinable var isIdle: Bool { handedOverHead == handedOver.count }
  }

  /// Work left to the holder of ``reader``.
  @usableFromInline
  enum HandedOver {
    /// A value, for the subscribers attached when it was sent.
    case value(Output, SlotArray<Entry>)
    /// The subject's completion, for the subscribers attached when it was sent.
    case completion(Subscribers.Completion<Failure>, SlotArray<Entry>)
    /// A conduit cancelled while the sender may have been delivering to it: it releases its
    /// subscriber now (``AnyConduit/releaseAfterSenders()``).
    case release(Entry)
    /// A value whose sender waits (``TurnWaiter``): the turn delivers it for the sender while
    /// the turn's ``Guarded/budget`` lasts (then dismisses the waiter: its `send` returns);
    /// past that, the turn passes to the sender, which delivers it itself.
    case waiter(TurnWaiter, Output, SlotArray<Entry>)
    /// A conduit's drain that ran long on another thread (a request, a replay), continued by
    /// the turn so that no sender adds to the conduit's queue meanwhile
    /// (``AnyConduit/continueDrain()``).
    case drain(Entry)
  }

  /// What the holder of ``reader`` does next (``nextHandedOver(_:)``).
  @usableFromInline
  enum Next {
    /// Run this work, then ask again.
    case run(HandedOver)
    /// The turn is this waiter's now: grant it (after unlocking) and return at once.
    case passed(TurnWaiter)
    /// Nothing waits: ``leave()``.
    case done
  }

  /// What a change of the list leaves to drop after unlocking (storages may hold the last
  /// references to conduits).
  @usableFromInline
  struct Garbage {
    @usableFromInline var storages: [Storage] = []
    /// Whether the writer held ``reader`` (no sender was reading).
    @usableFromInline var exclusive = false

    @inlinable init() {}

    @inlinable func dispose() { withExtendedLifetime(storages) {} }
  }

  /// What a sender found when it tried to take ``reader``.
  @usableFromInline
  enum Claim: Equatable {
    /// Nobody is attached: nothing to read, nothing claimed.
    case nobody
    /// ``reader`` is this sender's: read the storage at this address, then ``leave()``.
    case claimed(UInt)
    /// ``reader`` is this sender's, but handed-over work waits: queue the value behind it
    /// (``queueBehind(_:_:)``), then ``leave()``, which runs the queue.
    case claimedBehind(UInt)
    /// ``reader`` is this sender's, but the list changed meanwhile: read nothing, ``leave()``
    /// and try again under the lock.
    case stale
    /// The work is for the caller to do now: nobody else holds the turn (a completion, a
    /// release), or — a release — this thread holds it.
    case nested
    /// The work is queued for the turn in progress (another thread's, or this thread's own:
    /// a send from inside a delivery).
    case busy
    /// The work is queued, and ``reader`` is this thread's (as ``draining``): run the queue
    /// (``leave()`` does).
    case draining
    /// No grants were left: this thread waits for its turn (``TurnWaiter/wait()``), then
    /// delivers its value itself and ``leave()``s.
    case wait(TurnWaiter)
  }

  /// The address of the list's slot storage; 0 while it has none.
  @usableFromInline let current = Atomic<UInt>(0)
  /// 0, the address of the storage a sender is reading, ``draining`` or ``writing``.
  @usableFromInline let reader = Atomic<UInt>(0)
  /// The thread of the sender holding ``reader`` (``currentThreadIdentity()``), 0 if none.
  @usableFromInline let readerThread = Atomic<UInt>(0)
  /// The conduit that sender is delivering to (its address), 0 between conduits.
  @usableFromInline let position = Atomic<UInt>(0)
  /// ``pending`` while ``Guarded/handedOver`` holds work.
  @usableFromInline let handOver = Atomic<UInt>(0)

  /// ``reader`` while a writer changes the list in place.
  @inlinable static var writing: UInt { 1 }
  /// ``reader`` while a sender runs handed-over work (storage addresses are aligned, so no
  /// storage is at 1 or 2).
  @inlinable static var draining: UInt { 2 }
  /// In ``handOver``: work waits in ``Guarded/handedOver``.
  @inlinable static var pending: UInt { 2 }

  @inlinable init() {}

  // MARK: Sending

  /// Tries to take ``reader`` for the current storage, for the sender on thread `thread`,
  /// without the lock.
  @inlinable @inline(__always)
  func claim(by thread: UInt) -> Claim {
    let address = current.load(ordering: .acquiring)
    guard address != 0 else { return .nobody }
    let exchanged = reader.compareExchange(
      expected: 0, desired: address, ordering: .sequentiallyConsistent
    ).exchanged
    // Taken: decided under the lock (this thread's own turn, or another's).
    guard exchanged else { return .busy }
    readerThread.store(thread, ordering: .relaxed)
    // A writer changed the list between the load and the claim: its storage may be gone.
    guard current.load(ordering: .sequentiallyConsistent) == address else { return .stale }
    // Handed-over work waits: it goes first.
    guard handOver.load(ordering: .sequentiallyConsistent) & Self.pending == 0 else {
      return .claimedBehind(address)
    }
    return .claimed(address)
  }

  /// Under the subject's lock (writers hold it, so the storage stays current): takes
  /// ``reader`` if it is free and nothing handed over waits (``Claim/claimed(_:)``); else
  /// queues `work()` (made with the list as it is now) for the turn in progress — this
  /// thread's own (a send from inside a delivery), or another thread's (``handOff(_:_:by:)``,
  /// which may make this thread wait).
  @inlinable
  func claimOrHandOff(
    by thread: UInt, _ guarded: inout Guarded, _ work: (SlotArray<Entry>) -> HandedOver
  ) -> Claim {
    let address = current.load(ordering: .relaxed)
    guard address != 0 else { return .nobody }
    let holder = reader.load(ordering: .sequentiallyConsistent)
    if holder == 0, guarded.isIdle,
      reader.compareExchange(expected: 0, desired: address, ordering: .sequentiallyConsistent)
        .exchanged
    {
      readerThread.store(thread, ordering: .relaxed)
      beginTurn(&guarded)
      return .claimed(address)
    }
    if holder != 0, isThisThreads(holder, thread) {
      queueBehind(work(guarded.list.slots), &guarded)
      return .busy
    }
    return handOff(work(guarded.list.slots), &guarded, by: thread, needsGrant: true)
  }

  /// Under the lock, by the holder of ``reader``: queues `work` for this turn (after what
  /// waits), and sets ``pending`` so that ``leave()`` runs it.
  @inlinable
  func queueBehind(_ work: HandedOver, _ guarded: inout Guarded) {
    if case .value = work { guarded.valuesQueued += 1 }
    guarded.handedOver.append(work)
    handOver.store(Self.pending, ordering: .relaxed)
  }

  /// Under the lock: queues `work` for the holder of ``reader`` — a value (`needsGrant`) only
  /// while this turn has grants left, else a ``TurnWaiter`` in its place (``Claim/wait(_:)``);
  /// if nobody holds ``reader`` (any more), takes it to run the queue (``Claim/draining``).
  /// Otherwise ``Claim/busy``: the holder sees ``pending`` as it leaves.
  @inlinable
  func handOff(_ work: HandedOver, _ guarded: inout Guarded, by thread: UInt, needsGrant: Bool)
    -> Claim
  {
    let waiter: TurnWaiter?
    if needsGrant, guarded.grants == 0, case .value(let value, let list) = work {
      waiter = TurnWaiter(thread: thread)
      guarded.handedOver.append(.waiter(waiter.unsafelyUnwrapped, value, list))
    } else {
      if needsGrant { guarded.grants -= 1 }
      if case .value = work { guarded.valuesQueued += 1 }
      guarded.handedOver.append(work)
      waiter = nil
    }
    _ = handOver.bitwiseOr(Self.pending, ordering: .sequentiallyConsistent)
    guard reader.load(ordering: .sequentiallyConsistent) == 0,
      reader.compareExchange(expected: 0, desired: Self.draining, ordering: .sequentiallyConsistent)
        .exchanged
    else {
      // A sender holds it (or took it after `pending` was set): it sees the work.
      if let waiter { return .wait(waiter) }
      return .busy
    }
    readerThread.store(thread, ordering: .relaxed)
    beginTurn(&guarded)
    // This thread runs the queue now: its value needs no waiter.
    if waiter != nil {
      guarded.handedOver[guarded.handedOver.count - 1] = work
      guarded.valuesQueued += 1
    }
    return .draining
  }

  /// Under the lock: a turn begins (``reader`` taken under the lock or to drain, or handed to a
  /// waiter): its grants are what ``TurnWaiter/grantsPerTurn`` leaves after the values already
  /// queued, so that a call runs at most that many values of others (plus one: see the model,
  /// `Models/SubjectTurn.pml`). A sender that takes ``reader`` without the lock and one that
  /// takes it back after a raced leave (``claimToDrain(_:by:)``, the same call) begin none.
  @inlinable
  func beginTurn(_ guarded: inout Guarded) {
    guarded.grants = max(0, TurnWaiter.grantsPerTurn - guarded.valuesQueued)
    guarded.budget = TurnWaiter.grantsPerTurn
  }

  @inlinable
  func isThisThreads(_ holder: UInt, _ thread: UInt) -> Bool {
    holder != Self.writing && readerThread.load(ordering: .relaxed) == thread
  }

  /// Calls `body` with each subscription of the storage at `address` (a claimed one, or one a
  /// handed-over value keeps alive), in attachment order and in place, noting each in
  /// ``position``.
  @inlinable @inline(__always)
  func forEach(inStorageAt address: UInt, _ body: (Entry) -> Void) {
    SlotArray<Entry>.forEach(inStorageAt: address) { conduit in
      position.store(
        UInt(bitPattern: Unmanaged.passUnretained(conduit).toOpaque()), ordering: .relaxed)
      body(conduit)
    }
    position.store(0, ordering: .relaxed)
  }

  /// What ``leave()`` did.
  @usableFromInline
  enum Leaving {
    /// ``reader`` is given back; nothing waits.
    case left
    /// Work was handed over: ``reader`` is kept, run the work (``nextHandedOver(_:)``) and
    /// try again.
    case kept
    /// ``reader`` is given back, but work was handed over meanwhile: ``claimToDrain(_:by:)``.
    case raced
  }

  /// Gives back ``reader``, unless handed-over work waits (a sequentially consistent store,
  /// then a sequentially consistent load of ``handOver``: see the type's documentation).
  @inlinable @inline(__always)
  func leave() -> Leaving {
    if handOver.load(ordering: .relaxed) & Self.pending != 0 { return .kept }
    readerThread.store(0, ordering: .relaxed)
    reader.store(0, ordering: .sequentiallyConsistent)
    return handOver.load(ordering: .sequentiallyConsistent) & Self.pending == 0 ? .left : .raced
  }

  /// Under the lock, after ``leave()`` returned ``Leaving/raced``: takes ``reader`` (as
  /// ``draining``) if work still waits and no sender holds it. `false`: nothing waits, or the
  /// sender holding ``reader`` runs it as it leaves.
  @inlinable
  func claimToDrain(_ guarded: inout Guarded, by thread: UInt) -> Bool {
    guard !guarded.isIdle,
      reader.compareExchange(expected: 0, desired: Self.draining, ordering: .sequentiallyConsistent)
        .exchanged
    else { return false }
    readerThread.store(thread, ordering: .relaxed)
    return true  // the same call's turn goes on: no new grants
  }

  /// Under the lock, by the holder of ``reader``: the oldest work queued; the turn handed to
  /// the oldest waiter if that comes first (``reader`` stays taken, as ``draining``, for it);
  /// or ``Next/done`` when the queue is empty (``pending`` is then cleared, and the holder
  /// leaves).
  @inlinable
  func nextHandedOver(_ guarded: inout Guarded) -> Next {
    guard !guarded.isIdle else {
      handOver.store(0, ordering: .relaxed)  // nothing waits now
      return .done
    }
    let work = guarded.handedOver[guarded.handedOverHead]
    guarded.handedOverHead += 1
    if case .value = work { guarded.valuesQueued -= 1 }
    if guarded.isIdle {
      guarded.handedOver.removeAll(keepingCapacity: true)
      guarded.handedOverHead = 0
    }
    guard case .waiter(let waiter, _, _) = work else { return .run(work) }
    if guarded.budget > 0 {
      guarded.budget -= 1
      return .run(work)  // delivered for the waiting sender, which is then dismissed
    }
    position.store(0, ordering: .relaxed)
    reader.store(Self.draining, ordering: .relaxed)
    readerThread.store(waiter.thread, ordering: .relaxed)
    beginTurn(&guarded)
    return .passed(waiter)
  }

  /// Whether this thread is the sender and is delivering to `conduit` now (so an event for
  /// `conduit` from this thread comes from inside that delivery).
  @inlinable
  func isDelivering(to conduit: AnyObject) -> Bool {
    position.load(ordering: .relaxed)
      == UInt(bitPattern: Unmanaged.passUnretained(conduit).toOpaque())
      && readerThread.load(ordering: .relaxed) == currentThreadIdentity()
  }

  /// After a conduit stopped fast deliveries (a sequentially consistent store to its word):
  /// whether a sender of another thread may be delivering to it now.
  @inlinable
  func foreignSenderMayBeDelivering() -> Bool {
    let holder = reader.load(ordering: .sequentiallyConsistent)
    return holder != 0 && holder != Self.writing
      && readerThread.load(ordering: .relaxed) != currentThreadIdentity()
  }

  // MARK: Writing (under the subject's lock)

  /// Changes the list with `body`. Returns `body`'s result and what to drop after unlocking.
  @inlinable
  func update<Result>(_ guarded: inout Guarded, _ body: (inout List) -> Result) -> (
    Result, Garbage
  ) {
    var garbage = Garbage()
    if reader.compareExchange(expected: 0, desired: Self.writing, ordering: .acquiring).exchanged {
      let result = body(&guarded.list)
      current.store(guarded.list.slots.storageAddress, ordering: .releasing)
      reader.store(0, ordering: .releasing)
      garbage.exclusive = true
      if !guarded.retired.isEmpty { swap(&garbage.storages, &guarded.retired) }
      return (result, garbage)
    }
    // A sender reads this storage or a retired one: this one stays as it is, the change goes
    // to a copy.
    if let storage = guarded.list.slots.storage { guarded.retired.append(storage) }
    let result = body(&guarded.list)
    current.store(guarded.list.slots.storageAddress, ordering: .sequentiallyConsistent)
    let read = reader.load(ordering: .sequentiallyConsistent)
    guarded.retired.removeAll { storage in
      guard UInt(bitPattern: Unmanaged.passUnretained(storage).toOpaque()) != read else {
        return false
      }
      garbage.storages.append(storage)
      return true
    }
    return (result, garbage)
  }

  /// Under the lock: hands `work` (a conduit's drain) to the turn in progress — this thread's
  /// own (queued behind what it delivers), or another thread's — or, if nobody holds it, takes
  /// the turn to run it (``Claim/draining``). Never ``Claim/nested``: the work must run while no
  /// sender can offer.
  @inlinable
  func handOffToTurn(_ work: HandedOver, _ guarded: inout Guarded, by thread: UInt) -> Claim {
    let holder = reader.load(ordering: .sequentiallyConsistent)
    if holder != 0, isThisThreads(holder, thread) {
      queueBehind(work, &guarded)
      return .busy
    }
    return handOff(work, &guarded, by: thread, needsGrant: false)
  }

  /// Under the lock, after an ``update(_:_:)``: hands `work` (a completion or a release) to
  /// the turn in progress, or — `inOrder`: it goes after work queued before it — to whoever
  /// runs the work that waits. ``Claim/nested``: nobody else holds the turn and nothing must
  /// go first (or, for a release, this thread holds it); the caller does the work itself now.
  /// A completion from inside a delivery (this thread holds the turn) is queued behind the
  /// value being delivered (``Claim/busy``).
  @inlinable
  func handOffToReader(
    _ work: HandedOver, inOrder: Bool, _ guarded: inout Guarded, by thread: UInt
  ) -> Claim {
    let holder = reader.load(ordering: .sequentiallyConsistent)
    if holder == 0 {
      if !inOrder || guarded.isIdle { return .nested }
    } else if isThisThreads(holder, thread) {
      guard inOrder else { return .nested }
      queueBehind(work, &guarded)
      return .busy
    }
    return handOff(work, &guarded, by: thread, needsGrant: false)
  }
}
