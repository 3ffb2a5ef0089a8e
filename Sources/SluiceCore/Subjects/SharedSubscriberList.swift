public import Synchronization

/// A subject's ``SubscriberList``, changed under the subject's lock and read by one sender at a
/// time without the lock and without retaining anything. A `send` costs one atomic
/// read-modify-write here (taking ``reader``), however many subscribers there are, until
/// another thread first hands work to a sender of this subject; from then on two (giving
/// ``reader`` back becomes a sequentially consistent store). Because only that sender delivers
/// without a lock, the conduits it delivers to need none of their own (see ``Conduit``).
///
/// **Reading.** ``current`` is the address of the list's slot storage (``SlotArray``). A
/// sender takes ``reader`` by writing that address into it (compare-and-swap from 0), checks
/// that it is still current and that nothing handed over waits, notes its thread in
/// ``readerThread``, calls each subscription in place (noting which in ``position``) and gives
/// ``reader`` back (``leave()``). ``claim(by:)`` tells the sender what it found:
///
/// | ``reader`` | the sender |
/// |---|---|
/// | 0 | takes it and reads in place |
/// | taken by this thread (a send from inside one of its deliveries) | *nested*: copies the list under the lock and offers the value through the conduits' locks |
/// | taken by another thread | under the lock, hands the value over (``claimOrHandOff(by:_:_:)``): queues it with the list as it is now and sets ``pending`` in ``handOver`` |
///
/// **Handing over.** Work queued under the lock (values, with the list they were sent to; a
/// completion; releases) is run by whoever holds ``reader`` next, before anything of its own:
/// a sender that finds ``pending`` set as it claims ``reader`` (``Claim/claimedBehind(_:)``) or
/// as it leaves (``Leaving/kept``) keeps ``reader`` and runs the queue one item at a time,
/// after unlocking each (``nextHandedOver(_:)`` clears ``pending`` once the queue is empty);
/// one that finds it set only after giving ``reader`` back (``Leaving/raced``) takes ``reader``
/// again under the lock (as ``draining``) if it is still free; a thread that queues work and
/// then finds ``reader`` free takes it and runs the queue itself. Work waits only while
/// ``pending`` is set (set with each hand-off, cleared under the lock with the queue's last
/// item), so giving ``reader`` back always runs the queue first. No thread ever waits for
/// another's delivery, each thread's sends reach each subscriber in the order made, and nothing
/// handed over is left behind.
///
/// **Why one atomic per send.** Handing over is a Dekker pair: the sender stores ``reader``
/// then loads ``handOver``; the handing thread sets ``pending`` then loads ``reader``. Each
/// side needs a full fence between its store and its load, or both may miss the other. Until
/// the first hand-over, the sender's side is only a ``compilerBarrier()`` (a plain store), and
/// the handing thread, the first time, sets ``fenced`` with ``pending`` and runs
/// ``processBarrier()`` — every other thread executes a full fence — before it loads
/// ``reader``. After that, senders give ``reader`` back with a sequentially consistent store
/// (``fenced``), and handing threads need no process barrier. (Where ``processBarrier()`` is
/// not available, subjects start ``fenced``.) A sender that decided on the plain store before
/// the switch is the one holding ``reader`` during the process barrier: its store is visible to
/// the handing thread after it, or its load of ``handOver`` comes after it and sees ``pending``.
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
/// kept.
///
/// **Why reading in place is safe.** Sender: compare-and-swap of ``reader``, then load of
/// ``current`` (and of each conduit's fast-path word); writer that finds a sender: exchange of
/// ``current``, then load of ``reader``; a cancel: store of the conduit's word, then load of
/// ``reader``; all sequentially consistent. So either the writer (or the cancel) sees the
/// sender and keeps its storage (or hands the release over), or the sender sees the new
/// address (or the cancelled conduit's word) and falls back. A storage is changed in place only
/// while the writer holds ``reader``. ``readerThread`` and ``position`` are read by other
/// threads only to learn that they are not the sender: a thread sees its own last writes to
/// them, and no other thread writes its identity.
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
    /// What other threads handed to the sender holding ``reader``, oldest first, from
    /// ``handedOverHead`` on (taken one at a time; the buffer keeps its capacity).
    @usableFromInline var handedOver: [HandedOver] = []
    @usableFromInline var handedOverHead = 0

    @inlinable init() {}
  }

  /// Work another thread left to the sender holding ``reader``.
  @usableFromInline
  enum HandedOver {
    /// A value, for the subscribers attached when it was sent.
    case value(Output, SlotArray<Entry>)
    /// The subject's completion, for the subscribers attached when it was sent.
    case completion(Subscribers.Completion<Failure>, SlotArray<Entry>)
    /// A conduit cancelled while the sender may have been delivering to it: it releases its
    /// subscriber now (``AnyConduit/releaseAfterSenders()``).
    case release(Entry)
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
    /// ``reader`` is this sender's, but handed-over work waits: run it
    /// (``nextHandedOver(_:)``), then read the storage at this address and ``leave()``.
    case claimedBehind(UInt)
    /// ``reader`` is this sender's, but the list changed meanwhile: read nothing, ``leave()``
    /// and try again under the lock.
    case stale
    /// This thread is the sender already (a send from inside a delivery), or — handing over a
    /// completion or a release — nobody else is: do it now, through the conduits' locks.
    case nested
    /// Another thread's sender holds ``reader``, and has what was handed over.
    case busy
    /// ``reader`` is this thread's (as ``draining``) and the work, queued behind what waited,
    /// is for it to run (``nextHandedOver(_:)``), then ``leave()``.
    case draining
  }

  /// The address of the list's slot storage; 0 while it has none.
  @usableFromInline let current = Atomic<UInt>(0)
  /// 0, the address of the storage a sender is reading, ``draining`` or ``writing``.
  @usableFromInline let reader = Atomic<UInt>(0)
  /// The thread of the sender holding ``reader`` (``currentThreadIdentity()``), 0 if none.
  @usableFromInline let readerThread = Atomic<UInt>(0)
  /// The conduit that sender is delivering to (its address), 0 between conduits.
  @usableFromInline let position = Atomic<UInt>(0)
  /// ``fenced`` (once another thread has handed work over, or if ``processBarrier()`` is not
  /// available) and ``pending`` (while ``Guarded/handedOver`` holds work).
  @usableFromInline let handOver: Atomic<UInt>

  /// ``reader`` while a writer changes the list in place.
  @inlinable static var writing: UInt { 1 }
  /// ``reader`` while a sender runs handed-over work (storage addresses are aligned, so no
  /// storage is at 1 or 2).
  @inlinable static var draining: UInt { 2 }
  /// In ``handOver``: senders give ``reader`` back with a sequentially consistent store.
  @inlinable static var fenced: UInt { 1 }
  /// In ``handOver``: work waits in ``Guarded/handedOver``.
  @inlinable static var pending: UInt { 2 }

  @inlinable init() {
    handOver = Atomic(processBarrierIsAvailable ? 0 : Self.fenced)
  }

  // MARK: Sending

  /// Tries to take ``reader`` for the current storage, for the sender on thread `thread`,
  /// without the lock.
  @inlinable @inline(__always)
  func claim(by thread: UInt) -> Claim {
    let address = current.load(ordering: .acquiring)
    guard address != 0 else { return .nobody }
    let (exchanged, holder) = reader.compareExchange(
      expected: 0, desired: address, ordering: .sequentiallyConsistent)
    guard exchanged else { return isThisThreads(holder, thread) ? .nested : .busy }
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
  /// ``reader`` if it is free and nothing handed over waits; else, unless this thread holds
  /// it, queues `work()` (made with the list as it is now) for whoever holds it next
  /// (``handOff(_:_:by:)``).
  @inlinable
  func claimOrHandOff(
    by thread: UInt, _ guarded: inout Guarded, _ work: (SlotArray<Entry>) -> HandedOver
  ) -> Claim {
    let address = current.load(ordering: .relaxed)
    guard address != 0 else { return .nobody }
    let holder = reader.load(ordering: .sequentiallyConsistent)
    if holder == 0, guarded.handedOverHead == guarded.handedOver.count,
      reader.compareExchange(expected: 0, desired: address, ordering: .sequentiallyConsistent)
        .exchanged
    {
      readerThread.store(thread, ordering: .relaxed)
      return .claimed(address)
    }
    if holder != 0, isThisThreads(holder, thread) { return .nested }
    return handOff(work(guarded.list.slots), &guarded, by: thread)
  }

  /// Under the lock: queues `work` for the sender holding ``reader``; if none does (any more),
  /// takes ``reader`` to run the queue (``Claim/draining``). Otherwise ``Claim/busy``: that
  /// sender sees ``pending`` as it leaves (see the type's documentation: the first hand-over
  /// runs ``processBarrier()``).
  @inlinable
  func handOff(_ work: HandedOver, _ guarded: inout Guarded, by thread: UInt) -> Claim {
    guarded.handedOver.append(work)
    let before = handOver.bitwiseOr(Self.pending | Self.fenced, ordering: .sequentiallyConsistent)
      .oldValue
    if before & Self.fenced == 0 { processBarrier() }
    guard reader.load(ordering: .sequentiallyConsistent) == 0,
      reader.compareExchange(expected: 0, desired: Self.draining, ordering: .sequentiallyConsistent)
        .exchanged
    else { return .busy }  // a sender took it after `pending` was set: it sees it
    readerThread.store(thread, ordering: .relaxed)
    return .draining
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

  /// Gives back ``reader``, unless handed-over work waits. Until the first hand-over, a plain
  /// store and no fence (see the type's documentation); then a sequentially consistent store.
  @inlinable @inline(__always)
  func leave() -> Leaving {
    let mode = handOver.load(ordering: .relaxed)
    if mode & Self.pending != 0 { return .kept }
    readerThread.store(0, ordering: .relaxed)
    if mode & Self.fenced == 0 {
      reader.store(0, ordering: .releasing)
      compilerBarrier()
    } else {
      reader.store(0, ordering: .sequentiallyConsistent)
    }
    return handOver.load(ordering: .sequentiallyConsistent) & Self.pending == 0 ? .left : .raced
  }

  /// Under the lock, after ``leave()`` returned ``Leaving/raced``: takes ``reader`` (as
  /// ``draining``) if work still waits and no sender holds it. `false`: nothing waits, or the
  /// sender holding ``reader`` runs it as it leaves.
  @inlinable
  func claimToDrain(_ guarded: inout Guarded, by thread: UInt) -> Bool {
    guard guarded.handedOverHead < guarded.handedOver.count,
      reader.compareExchange(expected: 0, desired: Self.draining, ordering: .sequentiallyConsistent)
        .exchanged
    else { return false }
    readerThread.store(thread, ordering: .relaxed)
    return true
  }

  /// Under the lock, by the sender holding ``reader``: the oldest work handed over, or `nil`
  /// when none is left (``pending`` is then cleared, and the sender leaves).
  @inlinable
  func nextHandedOver(_ guarded: inout Guarded) -> HandedOver? {
    guard guarded.handedOverHead < guarded.handedOver.count else {
      handOver.store(Self.fenced, ordering: .relaxed)  // nothing waits now
      return nil
    }
    let work = guarded.handedOver[guarded.handedOverHead]
    guarded.handedOverHead += 1
    if guarded.handedOverHead == guarded.handedOver.count {
      guarded.handedOver.removeAll(keepingCapacity: true)
      guarded.handedOverHead = 0
    }
    return work
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

  /// Under the lock, after an ``update(_:_:)``: hands `work` (a completion or a release) to
  /// the sender of another thread that reads, or — `inOrder`: it goes after values handed over
  /// before it — to whoever runs the work that waits. ``Claim/nested``: nobody else reads
  /// (or this thread does); the caller does the work itself now.
  @inlinable
  func handOffToReader(
    _ work: HandedOver, inOrder: Bool, _ guarded: inout Guarded, by thread: UInt
  ) -> Claim {
    let holder = reader.load(ordering: .sequentiallyConsistent)
    if holder == 0
      ? !inOrder || guarded.handedOverHead == guarded.handedOver.count
      : isThisThreads(holder, thread)
    {
      return .nested
    }
    return handOff(work, &guarded, by: thread)
  }
}
