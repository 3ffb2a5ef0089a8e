/// A subject's subscriptions in attachment order, with attach and detach in constant time
/// (amortised) however many there are.
///
/// A detached subscription leaves a vacant slot (`nil`), and the others keep their places (and
/// their order) without moving; vacant slots at the end are dropped at once, and the list is
/// compacted when more than half of it is vacant. Up to ``indexThreshold`` slots, detach finds
/// its slot by a scan (cheaper than hashing for a few subscribers, and no allocation); past it, a
/// dictionary from each subscription to its slot is kept, so cancelling many subscribers of one
/// subject is not quadratic. Not thread-safe: it lives in ``SubjectCore``'s locked state, and
/// senders read its slots through ``SharedSubscriberList``.
@usableFromInline
struct SubscriberList<Output, Failure: Error> {
  @usableFromInline typealias Entry = AnyConduit<Output, Failure>

  /// Slots in attachment order; `nil` where a subscription was detached.
  @usableFromInline var slots = SlotArray<Entry>()
  /// How many slots hold a subscription.
  @usableFromInline var count = 0
  /// Each subscription's slot, kept once the list has grown past ``indexThreshold``.
  @usableFromInline var positions: [ObjectIdentifier: Int]?

  /// Past this many slots, detach looks its slot up instead of scanning.
  @inlinable static var indexThreshold: Int { 32 }

  @inlinable init() {}

  /// Adds `entry` after the others.
  @inlinable @inline(__always) mutating func append(_ entry: Entry) {
    slots.append(entry)
    count += 1
    if positions != nil {
      positions![ObjectIdentifier(entry)] = slots.count - 1
    } else if slots.count > Self.indexThreshold {
      index()
    }
  }

  /// Removes the subscription `conduit`; returns it (for the caller to release after
  /// unlocking), or `nil` if it is not here.
  @inlinable mutating func remove(_ conduit: AnyObject) -> Entry? {
    let slot: Int
    if positions != nil {
      guard let found = positions!.removeValue(forKey: ObjectIdentifier(conduit)) else {
        return nil
      }
      slot = found
    } else {
      guard let found = slots.firstIndex(where: { $0 === conduit }) else { return nil }
      slot = found
    }
    count -= 1
    let removed: Entry?
    if slot == slots.count - 1 {
      // The last one (the common case: one subscriber, or the latest): no vacant slot is left.
      removed = slots.removeLast()
      while !slots.isEmpty, slots[slots.count - 1] == nil { slots.removeLast() }
    } else {
      removed = slots.take(at: slot)
    }
    if slots.count > 2 * count + Self.indexThreshold { compact() }
    return removed
  }

  /// Empties the list, returning what it held (in order) for the caller to use after unlocking.
  @inlinable mutating func removeAll() -> SlotArray<Entry> {
    defer {
      count = 0
      positions = nil
    }
    var taken = SlotArray<Entry>()
    swap(&taken, &slots)
    return taken
  }

  /// Drops the empty slots (order kept) and renumbers the index.
  @inlinable mutating func compact() {
    var packed = SlotArray<Entry>()
    packed.makeUnique(minimumCapacity: count)
    slots.forEach { packed.append($0) }
    slots = packed
    positions = nil
    if slots.count > Self.indexThreshold { index() }
  }

  /// Builds the slot index.
  @inlinable mutating func index() {
    var positions = [ObjectIdentifier: Int](minimumCapacity: slots.count)
    for slot in 0..<slots.count {
      if let entry = slots[slot] { positions[ObjectIdentifier(entry)] = slot }
    }
    self.positions = positions
  }
}
