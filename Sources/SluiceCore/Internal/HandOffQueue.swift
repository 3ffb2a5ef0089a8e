/// Signals handed to a scheduler, one scheduled action per signal, performed one at a time and in
/// the order they were submitted — whatever order or concurrency the scheduler runs its actions
/// with (a concurrent `DispatchQueue` may run two at once): the state behind `receive(on:)` and
/// `subscribe(on:)`. It lives inside its owner's lock; the owner performs items after unlocking.
///
/// States: `idle` ⇄ `performing` (one thread performs; actions that run meanwhile are owed to it,
/// so it performs their items too, in order).
///
/// | event | idle | performing |
/// |---|---|---|
/// | `submit(item)` | queue it (the caller schedules one action) | same |
/// | `actionRan` | take the oldest item: performing | owed +1, take nothing |
/// | `submitAndRun(item)` | perform it (or the oldest): performing | queue it, owed +1 |
/// | `performed` | — | an item owed and queued: take it (owed −1); else idle |
/// | `clear` | drop the queue | drop the queue; the performer stops after its item |
/// | `hold` (the owner signals downstream itself) | performing | — |
/// | `release` | — | idle; returns how many actions ran meanwhile (the owner reschedules them) |
@usableFromInline
struct HandOffQueue<Item> {
  @usableFromInline var items = RingBuffer<Item>()
  @usableFromInline var performing = false
  @usableFromInline var owed = 0

  @inlinable init() {}

  @inlinable mutating func submit(_ item: Item) { items.append(item) }

  /// `submit(item)` and `actionRan()` at once, for a scheduler that runs every action inside
  /// `schedule` (``ImmediateScheduler``): the item to perform now, or `nil` (it waits for the
  /// thread performing). An idle, empty queue hands the item straight back without storing it.
  @inlinable mutating func submitAndRun(_ item: Item) -> Item? {
    if !performing && items.isEmpty {
      performing = true
      return item
    }
    items.append(item)
    return actionRan()
  }

  /// A scheduled action ran: the item it should perform now, or `nil` (another thread is
  /// performing and will perform it, or the queue was cleared).
  @inlinable mutating func actionRan() -> Item? {
    if performing {
      owed += 1
      return nil
    }
    guard let item = items.popFirst() else { return nil }
    performing = true
    return item
  }

  /// The performer finished an item: the next one it owes, or `nil` (it stops performing).
  @inlinable mutating func performed() -> Item? {
    if owed > 0, let item = items.popFirst() {
      owed -= 1
      return item
    }
    owed = 0
    performing = false
    return nil
  }

  /// Marks the queue busy while the owner signals downstream itself (handing the subscription
  /// down): actions that run meanwhile leave their items queued.
  @inlinable mutating func hold() { performing = true }

  /// Ends ``hold()``: the number of actions that ran meanwhile, to schedule again (their items
  /// are still queued), so that items are still performed by the scheduler's actions.
  @inlinable mutating func release() -> Int {
    defer {
      owed = 0
      performing = false
    }
    return owed
  }

  /// Drops every queued item (the subscription ended); actions still scheduled find nothing.
  @inlinable mutating func clear() {
    items.removeAll()
    owed = 0
  }
}
