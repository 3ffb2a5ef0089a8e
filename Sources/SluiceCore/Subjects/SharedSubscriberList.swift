public import Synchronization

/// A subject's ``SubscriberList``, changed under the subject's lock and read by one sender at a
/// time without the lock and without retaining anything: a `send` costs one compare-and-swap
/// and a plain store here, however many subscribers there are, instead of a lock round and a
/// retain/release of a snapshot.
///
/// **Reading.** ``current`` is the address of the list's slot storage (``SlotArray``). A
/// sender announces the storage it reads by writing its address into ``reader``
/// (compare-and-swap from 0), checks that it is still current, calls each subscription in place
/// and writes 0 back. If ``reader`` is taken (another sender, a nested send from a subscriber,
/// a writer) or the storage changed meanwhile, ``forEachInPlace(_:)`` returns `false` and the
/// caller copies the list under the lock instead (a retain of the storage, as before).
///
/// **Writing** (attach, detach, completion; under the subject's lock, through
/// ``update(_:_:)``): if no sender reads, the writer takes ``reader`` itself (so none can
/// start), changes the list in place and publishes its storage's address; otherwise it keeps the
/// current storage alive and unchanged (*retired*: one more reference, so the change goes to a
/// copy) and publishes the copy.
///
/// | ``reader`` | a sender | a writer |
/// |---|---|---|
/// | 0 | takes it (the storage's address): reads in place, then 0 | takes it (``writing``): changes the list in place, frees every retired storage, then 0 |
/// | an address | copies the list under the lock | copy-on-write; retired storages other than the one being read are freed |
/// | ``writing`` | copies the list under the lock | — (writers hold the subject's lock) |
///
/// **Reclamation.** At most one retired storage is kept past a write (the one a sender is
/// reading); it is freed by the next write that finds no sender, or with the subject. It holds
/// subscriptions detached meanwhile; their conduits no longer hold their subscribers (cancelled
/// and completed conduits release them), so nothing the user made is kept.
///
/// **Why it is safe.** Sender: compare-and-swap of ``reader``, then load of ``current``; writer
/// that finds a sender: exchange of ``current``, then load of ``reader``; all sequentially
/// consistent. So either the writer sees the sender's address and keeps that storage, or the
/// sender sees the new address and falls back to the lock. A storage is changed in place only
/// while the writer holds ``reader``.
@usableFromInline
struct SharedSubscriberList<Output, Failure: Error>: ~Copyable, @unchecked Sendable {
  // Safety: the list is in ``Guarded``, inside the subject's lock; what senders read without
  // the lock is guarded by `reader` (see the type's documentation).
  @usableFromInline typealias List = SubscriberList<Output, Failure>
  @usableFromInline typealias Storage = SlotStorage<AnyConduit<Output, Failure>>

  /// What lives in the subject's locked state.
  @usableFromInline
  struct Guarded {
    @usableFromInline var list = List()
    /// Storages a sender may still be reading.
    @usableFromInline var retired: [Storage] = []

    @inlinable init() {}
  }

  /// The address of the list's slot storage; 0 while it has none.
  @usableFromInline let current = Atomic<UInt>(0)
  /// 0, the address of the storage a sender is reading, or ``writing``.
  @usableFromInline let reader = Atomic<UInt>(0)

  /// ``reader`` while a writer changes the list in place.
  @inlinable static var writing: UInt { 1 }

  @inlinable init() {}

  /// Calls `body` with each subscription in attachment order, read in place without retaining
  /// it, if no one else reads or writes the list now; `false` (and `body` not run) otherwise.
  @inlinable @inline(__always)
  func forEachInPlace(_ body: (AnyConduit<Output, Failure>) -> Void) -> Bool {
    let address = current.load(ordering: .acquiring)
    guard address != 0 else { return true }  // nobody attached
    guard
      reader.compareExchange(expected: 0, desired: address, ordering: .sequentiallyConsistent)
        .exchanged
    else { return false }
    defer { reader.store(0, ordering: .releasing) }
    guard current.load(ordering: .sequentiallyConsistent) == address else { return false }
    SlotArray.forEach(inStorageAt: address, body)
    return true
  }

  /// Under the subject's lock: takes ``reader`` for the current storage (a snapshot taken
  /// together with what else the lock guards); its address (0: nobody attached), or `nil` if
  /// ``reader`` is taken. A nonzero address must be given to ``forEach(reading:_:)``.
  @inlinable @inline(__always)
  func claimUnderLock() -> UInt? {
    let address = current.load(ordering: .relaxed)
    guard address != 0 else { return 0 }
    return reader.compareExchange(expected: 0, desired: address, ordering: .acquiring).exchanged
      ? address : nil
  }

  /// Calls `body` with each subscription of the storage claimed by ``claimUnderLock()``, after
  /// unlocking, then gives ``reader`` back.
  @inlinable @inline(__always)
  func forEach(reading address: UInt, _ body: (AnyConduit<Output, Failure>) -> Void) {
    guard address != 0 else { return }
    defer { reader.store(0, ordering: .releasing) }
    SlotArray.forEach(inStorageAt: address, body)
  }

  /// Changes the list with `body`; only under the subject's lock, with its `guarded` state.
  /// Returns `body`'s result and the storages now free, for the caller to release after
  /// unlocking (they may hold the last references to conduits).
  @inlinable
  func update<Result>(_ guarded: inout Guarded, _ body: (inout List) -> Result) -> (
    Result, [Storage]
  ) {
    var freed: [Storage] = []
    if reader.compareExchange(expected: 0, desired: Self.writing, ordering: .acquiring).exchanged {
      let result = body(&guarded.list)
      current.store(guarded.list.slots.storageAddress, ordering: .releasing)
      reader.store(0, ordering: .releasing)
      if !guarded.retired.isEmpty { swap(&freed, &guarded.retired) }
      return (result, freed)
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
      freed.append(storage)
      return true
    }
    return (result, freed)
  }
}
