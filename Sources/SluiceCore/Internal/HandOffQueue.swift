/// Signals handed to a scheduler, one scheduled action per signal, performed one at a time and in
/// the order they were submitted — whatever order or concurrency the scheduler runs its actions
/// with (a concurrent `DispatchQueue` may run two at once): the state behind `receive(on:)` and
/// `subscribe(on:)`. It lives inside its owner's lock; the owner performs items after unlocking.
///
/// **Bounded work per action**: one thread performs; an action that runs meanwhile on another
/// thread is *owed* to it (its item waits in the queue). The performer performs owed items, but
/// after ``batch`` items in one run, if any were owed by other threads' actions, it stops and
/// hands one owed action back to the scheduler (`yield`: the owner schedules one action); the
/// rest stay owed to whichever action runs next, which performs them in a run of its own. So a
/// producer that never pauses cannot keep one scheduler thread performing its items for ever,
/// at the cost of one extra action per batch. Order is kept: the items stay queued, and each
/// run takes the oldest.
/// Actions that run on the performer's own thread (an action run inside `schedule`, or
/// scheduled from inside a delivery) are its own work and never make it stop. A scheduler seen
/// to run a handed-back action inside `schedule` itself (the action ran on the yielding thread
/// before it was released: ``ImmediateScheduler``-like) is never yielded to again — its actions
/// would only nest deeper.
///
/// States: `idle` ⇄ `performing(thread)` (one thread performs; actions that run meanwhile are
/// owed to it, so it performs their items too, in order).
///
/// | event | idle | performing |
/// |---|---|---|
/// | `submit(item)` | queue it (the caller schedules one action) | same |
/// | `actionRan` | take the oldest item: performing (what is owed stays owed, to this run) | owed +1 (from another thread: noted), take nothing |
/// | `submitAndRun(item)` | perform it (or the oldest): performing | queue it, owed +1 |
/// | `performed` | — | an item owed and queued: take it (owed −1) — unless `batch` were performed and another thread's action is owed: idle, owed −1, `yield`; else idle |
/// | `yielded` | the owner scheduled the owed actions: forget the yielding thread | same |
/// | `clear` | drop the queue | drop the queue; the performer stops after its item |
/// | `hold` (the owner signals downstream itself) | performing | — |
/// | `release` | — | idle; returns how many actions ran meanwhile (the owner reschedules them) |
@usableFromInline
struct HandOffQueue<Item> {
  @usableFromInline var items = RingBuffer<Item>()
  /// The performing thread (``currentThreadIdentity()``), 0 while idle.
  @usableFromInline var performer: UInt = 0
  @usableFromInline var owed = 0
  /// Items performed in this run (after the first).
  @usableFromInline var run = 0
  /// An action of another thread was owed to this run.
  @usableFromInline var owedByOthers = false
  /// The thread scheduling owed actions again after a `yield`, 0 otherwise.
  @usableFromInline var yielder: UInt = 0
  /// The scheduler runs actions inside `schedule`: never yield.
  @usableFromInline var runsInline = false

  /// Items one run performs before it hands other threads' owed actions back to the scheduler.
  @inlinable static var batch: Int { 32 }

  @inlinable init() {}

  @inlinable var performing: Bool { performer != 0 }

  /// What the performer does after an item.
  @usableFromInline
  enum Next {
    /// Perform this item (owed to this run).
    case perform(Item)
    /// Nothing owed: the run ends.
    case idle
    /// The run ends with actions still owed: schedule one action again (the rest stay owed to
    /// the next run), then ``yielded()``.
    case yield
  }

  @inlinable mutating func submit(_ item: Item) { items.append(item) }

  /// `submit(item)` and `actionRan()` at once, for a scheduler that runs every action inside
  /// `schedule` (``ImmediateScheduler``): the item to perform now, or `nil` (it waits for the
  /// thread performing). An idle, empty queue hands the item straight back without storing it.
  @inlinable mutating func submitAndRun(_ item: Item, on thread: UInt) -> Item? {
    if !performing && items.isEmpty {
      start(thread)
      return item
    }
    items.append(item)
    return actionRan(on: thread)
  }

  /// A scheduled action ran on `thread`: the item it should perform now, or `nil` (another
  /// thread is performing and will perform it, or the queue was cleared).
  @inlinable mutating func actionRan(on thread: UInt) -> Item? {
    if performing {
      owed += 1
      if thread != performer { owedByOthers = true }
      return nil
    }
    if yielder == thread { runsInline = true }
    guard let item = items.popFirst() else { return nil }
    start(thread)
    return item
  }

  @inlinable mutating func start(_ thread: UInt) {
    performer = thread
    run = 0
    // Owed already: handed on by a run that yielded, for other threads' actions.
    owedByOthers = owed > 0
  }

  /// The performer finished an item: what it does next.
  @inlinable mutating func performed() -> Next {
    if owed > 0 {
      if run >= Self.batch - 1 && owedByOthers && !runsInline {
        owed -= 1
        yielder = performer
        performer = 0
        return .yield
      }
      if let item = items.popFirst() {
        owed -= 1
        run += 1
        return .perform(item)
      }
    }
    stop()
    return .idle
  }

  @inlinable mutating func stop() {
    owed = 0
    performer = 0
  }

  /// The owner scheduled the action a `yield` handed back.
  @inlinable mutating func yielded() { yielder = 0 }

  /// Marks the queue busy while the owner signals downstream itself (handing the subscription
  /// down): actions that run meanwhile leave their items queued.
  @inlinable mutating func hold(on thread: UInt) { start(thread) }

  /// Ends ``hold(on:)``: the number of actions that ran meanwhile, to schedule again (their
  /// items are still queued), so that items are still performed by the scheduler's actions.
  @inlinable mutating func release() -> Int {
    defer { stop() }
    return owed
  }

  /// Drops every queued item (the subscription ended); actions still scheduled find nothing.
  @inlinable mutating func clear() {
    items.removeAll()
    owed = 0
  }
}
