public import Synchronization

/// A subject's ``SubscriberList``, changed under the subject's lock and read by one sender at a
/// time without the lock and without retaining anything. A `send` costs two atomic
/// read-modify-writes here (taking ``reader`` and giving it back), however many subscribers
/// there are, and — because only that sender delivers without a lock — the conduits it
/// delivers to need none of their own (see ``Conduit``).
///
/// **Reading.** ``current`` is the address of the list's slot storage (``SlotArray``). A
/// sender takes ``reader`` by writing that address into it (compare-and-swap from 0), checks
/// that it is still current, notes its thread in ``readerThread``, calls each subscription in
/// place (noting which in ``position``) and gives ``reader`` back (compare-and-swap to 0).
/// ``claim(by:)`` tells the sender what it found:
///
/// | ``reader`` | the sender |
/// |---|---|
/// | 0 | takes it and reads in place |
/// | taken by this thread (a send from inside one of its deliveries) | *nested*: copies the list under the lock and offers the value through the conduits' locks |
/// | taken by another thread | under the lock, hands the value over (``claimOrHandOff(by:_:_:)``): queues it with the list as it is now, and sets ``handedOverFlag`` in ``reader`` |
///
/// **Handing over.** The sender holding ``reader`` cannot give it back while
/// ``handedOverFlag`` is set (the compare-and-swap fails): it takes what was queued one item at
/// a time under the lock (``nextHandedOver(_:_:by:)``, which clears the flag once the queue is
/// empty), runs each after unlocking — values (delivered in place to the list they were sent
/// to), a completion, releases — and tries again. So no thread ever waits for another's
/// delivery, each thread's sends reach each subscriber in the order made, and a value handed
/// over is delivered before the sender holding ``reader`` leaves.
///
/// **Writing** (attach, detach, completion; under the subject's lock, through
/// ``update(_:_:)``): if no sender reads, the writer takes ``reader`` itself (``writing``, so
/// none can start), changes the list in place and publishes its storage's address; otherwise
/// it keeps the current storage alive and unchanged (*retired*: one more reference, so the
/// change goes to a copy) and publishes the copy. A completion made while another thread's
/// sender reads is handed over too, after the values queued before it.
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
/// **Why it is safe.** Sender: compare-and-swap of ``reader``, then load of ``current`` (and of
/// each conduit's fast-path word); writer that finds a sender: exchange of ``current``, then
/// load of ``reader``; a cancel: store of the conduit's word, then load of ``reader``; all
/// sequentially consistent. So either the writer (or the cancel) sees the sender and keeps its
/// storage (or hands the release over), or the sender sees the new address (or the cancelled
/// conduit's word) and falls back. A storage is changed in place only while the writer holds
/// ``reader``. ``readerThread`` and ``position`` are read by other threads only to learn that
/// they are not the sender: a thread sees its own last writes to them, and no other thread
/// writes its identity.
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
    /// ``reader`` is this sender's: read the storage at this address, then ``leave(_:)``.
    case claimed(UInt)
    /// ``reader`` is this sender's, but the list changed meanwhile: read nothing, ``leave(_:)``
    /// (something may have been handed over) and try again.
    case stale(UInt)
    /// This thread is the sender already (a send from inside a delivery).
    case nested
    /// Another thread's sender holds ``reader`` (``claim(by:)``), or now has what was handed
    /// over (``claimOrHandOff(by:_:_:)``).
    case busy
  }

  /// The address of the list's slot storage; 0 while it has none.
  @usableFromInline let current = Atomic<UInt>(0)
  /// 0, the address of the storage a sender is reading (with ``handedOverFlag`` when
  /// something waits for it), or ``writing``.
  @usableFromInline let reader = Atomic<UInt>(0)
  /// The thread of the sender holding ``reader`` (``currentThreadIdentity()``), 0 if none.
  @usableFromInline let readerThread = Atomic<UInt>(0)
  /// The conduit that sender is delivering to (its address), 0 between conduits.
  @usableFromInline let position = Atomic<UInt>(0)

  /// ``reader`` while a writer changes the list in place.
  @inlinable static var writing: UInt { 1 }
  /// Set in ``reader`` while ``Guarded/handedOver`` holds work (storage addresses are aligned,
  /// so their low bits are free).
  @inlinable static var handedOverFlag: UInt { 2 }

  @inlinable init() {}

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
    guard current.load(ordering: .sequentiallyConsistent) == address else {
      return .stale(address)
    }
    return .claimed(address)
  }

  /// Under the subject's lock (writers hold it, so the storage stays current): takes
  /// ``reader`` if it is free; else, if another thread holds it, hands it `work()` (made with
  /// the list as it is now) and returns ``Claim/busy``.
  @inlinable
  func claimOrHandOff(
    by thread: UInt, _ guarded: inout Guarded, _ work: (SlotArray<Entry>) -> HandedOver
  ) -> Claim {
    let address = current.load(ordering: .relaxed)
    guard address != 0 else { return .nobody }
    var holder = reader.load(ordering: .relaxed)
    while true {
      if holder == 0 {
        let (exchanged, original) = reader.compareExchange(
          expected: 0, desired: address, ordering: .acquiring)
        if exchanged {
          readerThread.store(thread, ordering: .relaxed)
          return .claimed(address)
        }
        holder = original
      } else if isThisThreads(holder, thread) {
        return .nested
      } else if handOff(work(guarded.list.slots), &guarded, holder: &holder) {
        return .busy
      }
    }
  }

  /// Under the lock: hands `work` to the sender holding ``reader`` (`holder` is what was
  /// read there). `false` (and `holder` updated) if ``reader`` changed meanwhile.
  @inlinable
  func handOff(_ work: HandedOver, _ guarded: inout Guarded, holder: inout UInt) -> Bool {
    let (exchanged, original) = reader.compareExchange(
      expected: holder, desired: holder | Self.handedOverFlag, ordering: .acquiringAndReleasing)
    guard exchanged else {
      holder = original
      return false
    }
    guarded.handedOver.append(work)
    return true
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

  /// Gives back ``reader``, claimed at `address`, unless something was handed over: then
  /// `false`, and the caller runs it (``nextHandedOver(_:_:by:)``) and tries again.
  @inlinable @inline(__always)
  func leave(_ address: UInt) -> Bool {
    readerThread.store(0, ordering: .relaxed)
    return reader.compareExchange(expected: address, desired: 0, ordering: .releasing).exchanged
  }

  /// Under the lock, by the sender holding ``reader`` at `address` after ``leave(_:)``
  /// failed: the oldest work handed over, or `nil` when none is left (the flag is then
  /// cleared, and the sender tries ``leave(_:)`` again).
  @inlinable
  func nextHandedOver(_ address: UInt, _ guarded: inout Guarded, by thread: UInt)
    -> HandedOver?
  {
    readerThread.store(thread, ordering: .relaxed)
    guard guarded.handedOverHead < guarded.handedOver.count else {
      reader.store(address, ordering: .relaxed)  // the flag off: nothing waits now
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
    let read = reader.load(ordering: .sequentiallyConsistent) & ~Self.handedOverFlag
    guarded.retired.removeAll { storage in
      guard UInt(bitPattern: Unmanaged.passUnretained(storage).toOpaque()) != read else {
        return false
      }
      garbage.storages.append(storage)
      return true
    }
    return (result, garbage)
  }

  /// After an ``update(_:_:)`` that found a sender: hands it `work` if it is another thread's
  /// and still reads. `false`: no sender of another thread reads now; the caller does the work
  /// itself.
  @inlinable
  func handOffToReader(_ work: HandedOver, _ guarded: inout Guarded, by thread: UInt) -> Bool {
    var holder = reader.load(ordering: .sequentiallyConsistent)
    while holder != 0, !isThisThreads(holder, thread) {
      if handOff(work, &guarded, holder: &holder) { return true }
    }
    return false
  }
}
