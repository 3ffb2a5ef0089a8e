public import Synchronization

/// A subject's ``SubscriberList``, changed under the subject's lock and read by one sender at a
/// time without the lock and without retaining anything: a `send` takes ``reader`` with one
/// compare-and-swap and gives it back with another, however many subscribers there are.
/// Because only that sender delivers without a lock, the conduits it delivers to need none of
/// their own (see ``Conduit``).
///
/// **The turn word.** ``reader`` holds who reads the list — 0 (nobody), the address of the slot
/// storage a sender reads, ``draining`` or ``writing`` — and, in its lowest bit, ``pending``:
/// work was handed over to that reader (storage addresses are 16-byte aligned, so the bit is
/// free). The holder of a nonzero word has *the turn*: it alone delivers.
///
/// **Reading.** ``current`` is the address of the list's slot storage (``SlotArray``). A sender
/// takes the turn by a compare-and-swap of ``reader`` from 0 (free, nothing pending) to that
/// address, checks that it is still current, notes its thread in ``readerThread``, calls each
/// subscription in place (noting which in ``position``) and gives the turn back by a
/// compare-and-swap from the address to 0 (``leave(held:thread:)``). That one compare-and-swap
/// fails exactly when work was handed over meanwhile: the holder keeps the turn and runs the
/// queue (``Leaving/kept``). So work waits only while a turn is held, a free turn always has
/// an empty queue, and no one can take the turn over work queued for another (the race a
/// give-back by store and load left open, found by the model).
///
/// **Handing over, bounded** (``DeliveryContext``). A send that finds another thread's turn in
/// progress, and a completion or a cancel's release that must not overlap it, are queued under
/// the lock with the list as it is then (``Guarded/handedOver``), setting ``pending``; the
/// holder runs the queue, oldest first, before it gives the turn back — granted values queued
/// with nothing else it takes in one lock round (a batch, delivered outside the lock), the rest
/// one item a round. A value is queued
/// without waiting only while the turn offers *grants* (``grants``: reserved from the holder's
/// call's allowance as the turn begins) and no waiter is queued; otherwise the sending thread
/// queues a ``TurnWaiter`` in its value's place and waits — or, inside a delivery of its own,
/// defers the wait to the end of its outermost turn. The holder delivers a waiting sender's
/// value for it (dismissing the waiter: its `send` returns) while its call's allowance lasts;
/// past that it hands that waiter the turn (``Next/passed``): the waiter delivers its value
/// itself and runs what follows, on an allowance of its own.
///
/// While a waiter is queued nothing is queued without one — no grant, and not even a send from
/// inside the holder's own delivery (it waits, deferred, like anyone's) — so everything behind a
/// waiter can be handed on and a turn handed to a waiter inherits nothing it must deliver. So
/// one call delivers at most ``DeliveryContext/allowancePerCall`` values of other threads in
/// all the turns it holds (grants it offered and values it delivered for waiting threads come
/// from that one allowance); a thread that never stops sending feels the deliverer's pace
/// instead of filling an unbounded queue; the queue holds at most the granted values plus one
/// value per waiting thread. The allowance keeps many concurrent senders fast: the turn passes
/// once per allowance of waiting senders' values, not once per value.
///
/// **Proved, not only tested.** `Models/SubjectTurn.pml` models these steps for spin, with the
/// completion, a cancel's release and a re-entrant send (see `Models/README.md` for what it
/// covers and what it leaves out).
///
/// **Order.** The queue is the order in which sends were serialised (under the lock, or by
/// taking ``reader``): every subscriber receives the values in that one order, each thread's in
/// the order it sent them. A send from inside a delivery (this thread holds the turn) is queued
/// too, so it reaches every subscriber after the value being delivered, never nested — and a
/// `CurrentValueSubject` whose subscriber sets `value` from inside `receive` ends with every
/// subscriber having received that value last. A completion from inside a delivery is queued
/// the same way.
///
/// | a sender finds ``reader`` | it |
/// |---|---|
/// | 0 | takes it and reads in place (``Claim/claimed(_:)``) |
/// | held by this thread, delivering | queues its value behind the one being delivered (``Claim/busy``) — or, while a waiter is queued, a waiter of its own (deferred) |
/// | held by another thread | under the lock: queues its value on a grant (``Claim/busy``) or a waiter (``Claim/wait(_:)``) — a `send` that sees no grant offered (``offersNoGrant``) first yields and tries the claim again, twice at most |
/// | 0 again by the time it locks | takes it to run its own value (``Claim/draining``) |
///
/// **Writing** (attach, detach, completion; under the subject's lock, through
/// ``update(_:_:)``): if no sender reads, the writer takes ``reader`` itself (``writing``, so
/// none can start), changes the list in place and publishes its storage's address; otherwise
/// it keeps the current storage alive and unchanged (*retired*: one more reference, so the
/// change goes to a copy) and publishes the copy. A completion made while another thread's
/// sender reads is handed over too, after the work queued before it.
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
/// ``current`` (and of each conduit's fast-path word); writer that finds a sender: store of
/// ``current``, then load of ``reader``; a cancel: store of the conduit's word, then load of
/// ``reader``; all sequentially consistent. So either the writer (or the cancel) sees the
/// sender and keeps its storage (or hands the release over), or the sender sees the new
/// address (or the cancelled conduit's word) and falls back. A storage is changed in place only
/// while the writer holds ``reader``.
///
/// **Relaxed accesses, and why they suffice.** ``readerThread`` and ``position`` are written
/// only by the holder (or, for a pass, by the holder handing over, before
/// ``TurnWaiter/grant()``, whose release/acquire pair orders it before the waiter runs) and read
/// by other threads only to learn that they are not the sender: a thread always sees its own
/// last writes, and no other thread writes its identity. ``grants`` is stored by the holder
/// after it took ``reader`` and before it publishes ``readerThread`` (release); a hand-off takes
/// one only under the lock, after its read-modify-write of ``reader`` found that holder (which
/// synchronizes with the holder's claim, so it sees 0 or that holder's identity, never an
/// earlier one) and only if it then reads the identity (acquire), so it reads that turn's
/// grants; and since it set ``pending`` first, the holder's give-back fails and the holder
/// delivers what it granted. The count only bounds how much; the turn word alone decides who
/// delivers. ``current`` is loaded relaxed only under the lock, where writers (which hold the
/// lock) are excluded.
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
    /// oldest first, from ``handedOverHead`` on (taken one at a time, or — only granted values
    /// queued — all at once, ``takeValues(_:)``; the buffers keep their capacity).
    /// (Each item is moved out as it is taken, so the buffer never holds the last reference to
    /// a value: it would be released under the lock, and its `deinit` may call the subject.)
    @usableFromInline var handedOver: [HandedOver?] = []
    @usableFromInline var handedOverHead = 0
    /// An empty buffer (keeping its capacity) swapped in for ``handedOver`` when the holder takes
    /// a batch of values (``Next/runValues(_:from:)``), and given back by it afterwards.
    @usableFromInline var spareBuffer: [HandedOver?] = []
    /// How many queued items are not granted values (``HandedOver/value(_:_:)``): a batch is
    /// taken only while there is none (so that nothing the holder must decide on under the lock
    /// — a waiter, a replay, a completion — leaves with it).
    @usableFromInline var otherWork = 0
    /// How many waiters the queue holds: while any does, no grants are taken (the items behind
    /// a waiter are waiters' own, so a turn handed to one inherits no granted value).
    @usableFromInline var waitersQueued = 0
    /// Where the turn stops while a subscriber it delivered to attaches (``TurnParking``).
    @usableFromInline var parking = TurnParking()

    @inlinable init() {}

    @inlinable var isIdle: Bool { handedOverHead == handedOver.count }

    /// Queues `work` last.
    @inlinable mutating func enqueue(_ work: HandedOver) {
      if !work.isValue { otherWork += 1 }
      handedOver.append(work)
    }

    /// Puts `work` back first (or inserts it there): the next item taken.
    @inlinable mutating func requeueFirst(_ work: HandedOver) {
      if !work.isValue { otherWork += 1 }
      if handedOverHead > 0 {
        handedOverHead -= 1
        handedOver[handedOverHead] = work
      } else {
        handedOver.insert(work, at: 0)
      }
    }

    /// Takes the oldest item (the queue is not idle).
    @inlinable mutating func dequeue() -> HandedOver {
      guard let work = handedOver[handedOverHead].take() else {
        Violation.internalInconsistency("a subject's handed-over work was taken twice")
      }
      if !work.isValue { otherWork -= 1 }
      handedOverHead += 1
      if isIdle {
        assert(otherWork == 0, "a subject's count of queued work drifted")
        handedOver.removeAll(keepingCapacity: true)
        handedOverHead = 0
      }
      return work
    }
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
    /// its holder's call has allowance left (``DeliveryContext/spendOne()``; then dismisses the
    /// waiter: its `send` returns); past that, the turn passes to the sender, which delivers it
    /// itself.
    case waiter(TurnWaiter, Output, SlotArray<Entry>)
    /// A conduit's drain that ran long on another thread (a request, a replay), continued by
    /// the turn so that no sender adds to the conduit's queue meanwhile
    /// (``AnyConduit/continueDrain()``).
    case drain(Entry)
    /// A subscriber's replay runs on another thread without the turn (see
    /// ``claimTurn(by:_:)``): when reached, the holder waits for it to be done
    /// (``ReplayWaiter``), unless it was withdrawn (skipped).
    case replay(ReplayWaiter)

    /// Whether this is a granted value (``value(_:_:)``).
    @inlinable var isValue: Bool {
      if case .value = self { return true }
      return false
    }
  }

  /// What the holder of ``reader`` does next (``nextHandedOver(_:)``).
  @usableFromInline
  enum Next {
    /// Run this work, then ask again.
    case run(HandedOver)
    /// Deliver these granted values, from this index on, oldest first, then give the buffer
    /// back and ask again (all the work queued, taken in one lock round).
    case runValues([HandedOver?], from: Int)
    /// The turn is this waiter's now: grant it (after unlocking) and return at once.
    case passed(TurnWaiter)
    /// A replay runs on another thread: wait for it (after unlocking,
    /// ``ReplayWaiter/waitForReplay()``), still holding the turn, then ask again.
    case paused(ReplayWaiter)
    /// The turn is parked for an attaching subscriber (``TurnParking``): return at once, and
    /// touch the list no more (the call takes the turn back as the attach's gate opens).
    case parked
    /// Nothing waits: leave (``leave(held:thread:)``).
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
    /// ``reader`` is this sender's: read the storage at this address, then leave.
    case claimed(UInt)
    /// ``reader`` is this sender's (held as this address), but the list changed meanwhile:
    /// read nothing, leave and try again under the lock.
    case stale(UInt)
    /// The work is for the caller to do now: nobody else holds the turn (a completion, a
    /// release), or — a release — this thread holds it.
    case nested
    /// The work is queued for the turn in progress (another thread's, or this thread's own:
    /// a send from inside a delivery).
    case busy
    /// The work is queued, and ``reader`` is this thread's (as ``draining``): run the queue
    /// (leaving does).
    case draining
    /// No grants were left: this thread waits for its turn (``TurnWaiter/wait()``, or defers
    /// the wait inside a delivery), then delivers its value itself and leaves.
    case wait(TurnWaiter)
  }

  /// The address of the list's slot storage; 0 while it has none.
  @usableFromInline let current = Atomic<UInt>(0)
  /// The turn word: the reader (0, a storage address, ``draining`` or ``writing``) with the
  /// ``pending`` bit.
  @usableFromInline let reader = Atomic<UInt>(0)
  /// How many more values other threads may hand to the turn in progress without waiting
  /// (see the type's documentation: relaxed accesses).
  @usableFromInline let grants = Atomic<Int>(0)
  /// The thread of the sender holding ``reader`` (``currentThreadIdentity()``), 0 if none.
  @usableFromInline let readerThread = Atomic<UInt>(0)
  /// The conduit that sender is delivering to (its address), 0 between conduits.
  @usableFromInline let position = Atomic<UInt>(0)

  /// In ``reader``: work waits in ``Guarded/handedOver`` for the holder.
  @inlinable static var pending: UInt { 1 }
  /// ``reader``'s holder while a writer changes the list in place (no storage is at 16).
  @inlinable static var writing: UInt { 0x10 }
  /// ``reader``'s holder while a sender runs handed-over work, or a waiter was handed the turn
  /// (no storage is at 32).
  @inlinable static var draining: UInt { 0x20 }

  @inlinable init() {}

  /// The holder part of a turn word.
  @inlinable static func holder(_ word: UInt) -> UInt { word & ~pending }

  // MARK: Sending

  /// Tries to take ``reader`` for the current storage, for the sender on thread `thread`,
  /// without the lock: one compare-and-swap from 0 (free, nothing pending).
  @inlinable @inline(__always)
  func claim(by thread: UInt) -> Claim {
    let address = current.load(ordering: .acquiring)
    guard address != 0 else { return .nobody }
    let exchanged = reader.compareExchange(
      expected: 0, desired: address, ordering: .sequentiallyConsistent
    ).exchanged
    // Taken: decided under the lock (this thread's own turn, or another's).
    guard exchanged else { return .busy }
    // (``readerThread`` is published by ``beginTurn(_:)``, after the grants.)
    // A writer changed the list between the load and the claim: its storage may be gone.
    guard current.load(ordering: .sequentiallyConsistent) == address else {
      return .stale(address)
    }
    return .claimed(address)
  }

  /// The thread of `context`, having taken ``reader`` (without the lock, under it, or to run
  /// the work it queued on a free turn), begins a turn and holds it until it calls
  /// ``DeliveryContext/exit()``: it offers ``TurnWaiter/grantsPerTurn`` grants reserved from its
  /// allowance. (Nothing else is queued then — work waits only while a turn is held — so the
  /// turn inherits nothing it must deliver.) A waiter handed the turn does the same as it takes
  /// it: only waiters are queued behind it then, so it inherits nothing it must deliver either.
  @inlinable @inline(__always)
  func beginTurn(_ context: DeliveryContext) {
    context.enter()
    grants.store(context.reserve(TurnWaiter.grantsPerTurn), ordering: .relaxed)
    // After the grants, with release: a hand-off that reads this identity reads this turn's
    // grants (``takeGrant()``).
    readerThread.store(context.identity, ordering: .releasing)
  }

  /// Whether the turn in progress offers no grant: a value handed to it now would make its
  /// sender wait. A relaxed read without the lock, so a hint (the turn may end, or a new one
  /// begin, at once): ``SubjectCore/send(_:storingAfterCompletion:)`` uses it only to decide
  /// whether to try the claim again before it locks.
  @inlinable var offersNoGrant: Bool { grants.load(ordering: .relaxed) == 0 }

  /// Under the lock, by a thread handing a value over, after setting ``pending`` found a
  /// holder: takes one of the turn's grants — only once the holder has published its
  /// identity (its grants before it), so never a grant left over from an earlier turn.
  @inlinable
  func takeGrant() -> Bool {
    guard readerThread.load(ordering: .acquiring) != 0 else { return false }
    var available = grants.load(ordering: .relaxed)
    while available > 0 {
      let (exchanged, original) = grants.compareExchange(
        expected: available, desired: available - 1, ordering: .relaxed)
      if exchanged { return true }
      available = original
    }
    return false
  }

  /// Under the lock, by the holder of ``reader``: withdraws the grants its turn still offers
  /// and gives them back to its allowance (hand-offs take grants only under the lock, so none
  /// is taken meanwhile).
  @inlinable
  func withdrawGrants(_ context: DeliveryContext) {
    context.giveBack(grants.load(ordering: .relaxed))
    grants.store(0, ordering: .relaxed)
  }

  /// Under the subject's lock (writers hold it, so the storage stays current): takes
  /// ``reader`` if it is free (``Claim/claimed(_:)``); else queues `work()` (made with the list
  /// as it is now) for the turn in progress — this thread's own, if it is delivering (a send
  /// from inside a delivery), or another thread's (``handOff(_:_:by:needsGrant:)``, which may
  /// make this thread wait).
  @inlinable
  func claimOrHandOff(
    by context: DeliveryContext, _ guarded: inout Guarded,
    _ work: (SlotArray<Entry>) -> HandedOver
  ) -> Claim {
    let thread = context.identity
    let address = current.load(ordering: .relaxed)
    guard address != 0 else { return .nobody }
    let (exchanged, word) = reader.compareExchange(
      expected: 0, desired: address, ordering: .sequentiallyConsistent)
    if exchanged {
      beginTurn(context)
      return .claimed(address)
    }
    // From inside this thread's own delivery: queued behind it — unless a waiter is queued,
    // then as a waiter (deferred) like anyone's, so that nothing the holder could not hand on
    // is ever queued behind a waiter for the next holder to inherit.
    if guarded.waitersQueued == 0, isThisThreads(Self.holder(word), thread) {
      queueBehind(work(guarded.list.slots), &guarded)
      return .busy
    }
    return handOff(work(guarded.list.slots), &guarded, by: context, needsGrant: true)
  }

  /// Under the lock, by the holder of ``reader``: queues `work` for this turn (after what
  /// waits), and sets ``pending`` so that it runs before the turn is given back.
  @inlinable
  func queueBehind(_ work: HandedOver, _ guarded: inout Guarded) {
    guarded.enqueue(work)
    _ = reader.bitwiseOr(Self.pending, ordering: .sequentiallyConsistent)
  }

  /// Under the lock: sets ``pending`` and, if nobody holds ``reader`` (so nothing waits),
  /// takes it to run `work` (``Claim/draining``); otherwise queues `work` for the holder — a
  /// value (`needsGrant`) only while the turn has grants left and no waiter is queued, else a
  /// ``TurnWaiter`` in its place (``Claim/wait(_:)``) — and the holder's give-back fails on
  /// ``pending``, so it runs the work (``Claim/busy``).
  @inlinable
  func handOff(
    _ work: HandedOver, _ guarded: inout Guarded, by context: DeliveryContext, needsGrant: Bool
  ) -> Claim {
    let word = reader.bitwiseOr(Self.pending, ordering: .sequentiallyConsistent).oldValue
    if Self.holder(word) == 0 {
      // Free: nothing is queued (work waits only while a turn is held) and, with `pending`
      // set, no sender can take it; this thread runs its work.
      reader.store(Self.draining | Self.pending, ordering: .sequentiallyConsistent)
      guarded.enqueue(work)
      beginTurn(context)
      return .draining
    }
    if needsGrant, case .value(let value, let list) = work,
      guarded.waitersQueued > 0 || !takeGrant()
    {
      let waiter = TurnWaiter(for: context)
      guarded.enqueue(.waiter(waiter, value, list))
      guarded.waitersQueued += 1
      return .wait(waiter)
    }
    guarded.enqueue(work)
    return .busy
  }

  @inlinable
  func isThisThreads(_ holder: UInt, _ thread: UInt) -> Bool {
    holder != 0 && holder != Self.writing && readerThread.load(ordering: .relaxed) == thread
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

  /// What ``leave(held:thread:)`` did.
  @usableFromInline
  enum Leaving {
    /// ``reader`` is given back; nothing waits.
    case left
    /// Work was handed over: ``reader`` is kept; run the work (``nextHandedOver(_:_:)``) and
    /// try again.
    case kept
  }

  /// Gives back ``reader`` — held as `held` (the storage address claimed, or ``draining``) —
  /// unless work was handed over (``pending``): one compare-and-swap, which fails exactly then.
  /// The grants are left as they are: a kept turn goes on offering them, and the next holder
  /// publishes its own before its identity (``takeGrant()``).
  @inlinable @inline(__always)
  func leave(held: UInt, thread: UInt) -> Leaving {
    readerThread.store(0, ordering: .relaxed)  // published by the release below
    if reader.compareExchange(expected: held, desired: 0, ordering: .sequentiallyConsistent)
      .exchanged
    {
      return .left
    }
    readerThread.store(thread, ordering: .relaxed)
    return .kept
  }

  /// Under the lock, by the holder of ``reader`` (the thread of `context`): the oldest work
  /// queued; the turn handed to the oldest waiter if that comes first and the holder's call has
  /// no allowance left for it (``reader`` stays taken, as ``draining``, for the waiter); or
  /// ``Next/done`` when the queue is empty (``pending`` is then cleared, the unused grants go
  /// back, and the holder leaves); a replay running on another thread reached first
  /// (``Next/paused``: the holder waits for it, keeping the turn).
  @inlinable
  func nextHandedOver(_ guarded: inout Guarded, _ context: DeliveryContext) -> Next {
    var waiter: TurnWaiter
    if let batch = takeValues(&guarded) { return .runValues(batch.0, from: batch.1) }
    repeat {
      guard !guarded.isIdle else {
        if guarded.parking.park() { return parkTurn(context) }
        _ = reader.bitwiseAnd(~Self.pending, ordering: .sequentiallyConsistent)
        withdrawGrants(context)  // the turn ends: later hand-offs wait, or find it free
        return .done
      }
      let work = guarded.dequeue()
      switch work {
      case .waiter(let sender, _, _):
        guarded.waitersQueued -= 1
        if sender.thread == context.identity || context.spendOne() {
          return .run(work)  // delivered for the waiting sender, which is then dismissed
        }
        // About to hand the turn on: a replay still running beside this turn may stop with
        // values this turn delivered into its conduit and hand them back to the turn — they
        // must come back to this holder, which took them on, not to the waiter (whose call
        // would deliver them beyond its allowance). So wait for it here, then come back to
        // this waiter.
        if let replay = pauseAtPendingReplay(&guarded) {
          guarded.requeueFirst(work)  // the queue is not idle: the replay was behind
          guarded.waitersQueued += 1
          position.store(0, ordering: .relaxed)
          return .paused(replay)
        }
        // Armed for an attaching subscriber: parked, not handed on (the waiter stays first).
        if guarded.parking.park() {
          guarded.requeueFirst(work)
          guarded.waitersQueued += 1
          return parkTurn(context)
        }
        waiter = sender
      case .replay(let replay):
        // The replay runs on its own thread: the holder waits for it, keeping the turn (so no
        // sender adds to the replaying conduit meanwhile) — unless it was done and withdrew.
        // Paused, it still counts as queued (``endReplay`` uncounts it): no grant is taken
        // meanwhile, so a send from inside the replay waits for its value's delivery (deferred)
        // as behind any waiter, instead of leaving it to the holder after its call returned.
        guard replay.pause() else {
          guarded.waitersQueued -= 1
          continue
        }
        position.store(0, ordering: .relaxed)
        return .paused(replay)
      default:
        return .run(work)
      }
      break
    } while true
    position.store(0, ordering: .relaxed)
    withdrawGrants(context)
    // Under the lock, only the holder changes the word's holder part: keep `pending`.
    let word = reader.load(ordering: .relaxed)
    reader.store(Self.draining | (word & Self.pending), ordering: .sequentiallyConsistent)
    readerThread.store(waiter.thread, ordering: .relaxed)
    return .passed(waiter)
  }

  /// Under the lock, by the holder of ``reader`` whose turn has just parked
  /// (``TurnParking/park()``): withdraws its grants and keeps ``reader`` as ``draining`` with
  /// ``pending`` set and no thread's identity, so that nobody takes the turn or a grant, a
  /// hand-off queues (a value with a waiter), and the call that takes the turn back runs the
  /// queue as it leaves.
  @inlinable
  func parkTurn(_ context: DeliveryContext) -> Next {
    position.store(0, ordering: .relaxed)
    withdrawGrants(context)
    reader.store(Self.draining | Self.pending, ordering: .sequentiallyConsistent)
    readerThread.store(0, ordering: .relaxed)
    return .parked
  }

  /// Under the lock, by the holder of ``reader``, which has just queued a waiter at an
  /// attaching subscriber's gate: arms the turn to park where it would end or be handed on,
  /// and sets ``pending`` so that its give-back fails and it reaches that point under the lock
  /// (``nextHandedOver(_:_:)``).
  @inlinable
  func armParking(_ guarded: inout Guarded) {
    guarded.parking.arm()
    _ = reader.bitwiseOr(Self.pending, ordering: .sequentiallyConsistent)
  }

  /// Under the lock, by the holder of ``reader``: when two or more items wait and all are
  /// granted values, all of them at once — the queue's buffer, replaced by the spare one — and
  /// the index of the first; otherwise `nil`.
  @inlinable
  func takeValues(_ guarded: inout Guarded) -> ([HandedOver?], Int)? {
    let head = guarded.handedOverHead
    guard guarded.otherWork == 0, guarded.handedOver.count - head > 1 else { return nil }
    var batch: [HandedOver?] = []
    swap(&batch, &guarded.spareBuffer)
    swap(&batch, &guarded.handedOver)
    guarded.handedOverHead = 0
    return (batch, head)
  }

  /// Under the lock, by the holder about to hand the turn on: the first replay queued behind
  /// that still runs, now paused (``ReplayWaiter/pause()``) and taken out of the queue (it
  /// stays counted in ``Guarded/waitersQueued`` until ``endReplay(_:handingBack:_:)``), or
  /// `nil`.
  @inlinable
  func pauseAtPendingReplay(_ guarded: inout Guarded) -> ReplayWaiter? {
    var index = guarded.handedOverHead
    while index < guarded.handedOver.count {
      if case .replay(let replay)? = guarded.handedOver[index], replay.pause() {
        guarded.handedOver.remove(at: index)
        guarded.otherWork -= 1
        return replay
      }
      index += 1
    }
    return nil
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
    let holder = Self.holder(reader.load(ordering: .sequentiallyConsistent))
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
    let read = reader.load(ordering: .sequentiallyConsistent) & ~Self.pending
    guarded.retired.removeAll { storage in
      guard UInt(bitPattern: Unmanaged.passUnretained(storage).toOpaque()) != read else {
        return false
      }
      garbage.storages.append(storage)
      return true
    }
    return (result, garbage)
  }

  /// How a replay runs (``claimTurn(by:_:)``).
  @usableFromInline
  enum ReplayClaim {
    /// This thread holds the turn already (a request from inside a delivery of the subject).
    case nested
    /// The turn was free and is this thread's now (held as ``draining``; leaving gives it back).
    case draining
    /// Another thread holds the turn; this replay's waiter is queued for it.
    case beside(ReplayWaiter)
  }

  /// Under the lock: takes the turn for work that runs on this thread (a subscriber's replay:
  /// see ``Conduit``) — ``ReplayClaim/nested`` if this thread holds it already,
  /// ``ReplayClaim/draining`` if it was free — or, if another thread holds it, queues a
  /// ``ReplayWaiter`` (``ReplayClaim/beside(_:)``): the thread does its work at once, without
  /// the turn, and then withdraws the waiter (``endReplay(_:handingBack:_:)``). The holder
  /// reaches the waiter after the work queued before it and waits there until the replay is
  /// done, so no sender adds to the replaying subscriber's queue meanwhile. The waiter counts
  /// as queued, so values queued behind it are waiters' own, as behind a waiting sender.
  @inlinable
  func claimTurn(by context: DeliveryContext, _ guarded: inout Guarded) -> ReplayClaim {
    if isThisThreads(Self.holder(reader.load(ordering: .sequentiallyConsistent)), context.identity)
    {
      return .nested
    }
    let word = reader.bitwiseOr(Self.pending, ordering: .sequentiallyConsistent).oldValue
    if Self.holder(word) == 0 {
      // Free: nothing is queued (work waits only while a turn is held).
      reader.store(Self.draining, ordering: .sequentiallyConsistent)
      beginTurn(context)
      return .draining
    }
    let waiter = ReplayWaiter()
    guarded.enqueue(.replay(waiter))
    guarded.waitersQueued += 1
    return .beside(waiter)
  }

  /// Under the lock, by the thread whose replay ran beside another thread's turn: withdraws
  /// its waiter and, if the replay's drain stopped with values left (`handingBack`), queues
  /// the rest of that drain first for the holder — who still holds the turn either way: the
  /// waiter is still queued (withdrawn), or the holder waits at it. Returns `true` if the
  /// holder waits (resume it after unlocking: ``ReplayWaiter/resume()``).
  @inlinable
  func endReplay(
    _ waiter: ReplayWaiter, handingBack drain: Entry?, _ guarded: inout Guarded
  ) -> Bool {
    let holderWaits = !waiter.withdraw()
    if holderWaits { guarded.waitersQueued -= 1 }  // counted while the holder waited at it
    if let drain {
      // First: what follows may be handed to a waiter, which must not inherit it.
      guarded.requeueFirst(.drain(drain))
      _ = reader.bitwiseOr(Self.pending, ordering: .sequentiallyConsistent)
    }
    return holderWaits
  }

  /// Under the lock: hands `work` (a conduit's drain) to the turn in progress — this thread's
  /// own (queued behind what it delivers), or another thread's — or, if nobody holds it, takes
  /// the turn to run it (``Claim/draining``). Never ``Claim/nested``: the work must run while no
  /// sender can offer.
  @inlinable
  func handOffToTurn(_ work: HandedOver, _ guarded: inout Guarded, by context: DeliveryContext)
    -> Claim
  {
    let holder = Self.holder(reader.load(ordering: .sequentiallyConsistent))
    if isThisThreads(holder, context.identity) {
      queueBehind(work, &guarded)
      return .busy
    }
    return handOff(work, &guarded, by: context, needsGrant: false)
  }

  /// Under the lock, after an ``update(_:_:)``: hands `work` (a completion or a release) to
  /// the turn in progress. ``Claim/nested``: nobody holds the turn (so nothing waits), or — a
  /// release (not `inOrder`) — this thread holds it; the caller does the work itself now. A
  /// completion from inside a delivery (this thread holds the turn) is queued behind the value
  /// being delivered (``Claim/busy``).
  @inlinable
  func handOffToReader(
    _ work: HandedOver, inOrder: Bool, _ guarded: inout Guarded, by context: DeliveryContext
  ) -> Claim {
    let holder = Self.holder(reader.load(ordering: .sequentiallyConsistent))
    if holder == 0 { return .nested }
    if isThisThreads(holder, context.identity) {
      guard inOrder else { return .nested }
      queueBehind(work, &guarded)
      return .busy
    }
    return handOff(work, &guarded, by: context, needsGrant: false)
  }
}
