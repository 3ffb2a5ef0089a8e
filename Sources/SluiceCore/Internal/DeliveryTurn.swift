/// Whose turn it is to deliver from a FIFO that several threads fill, with the bound that keeps
/// every call short: the state behind ``MergeCore`` and ``SerialDelivery``. It lives inside its
/// owner's lock, next to the owner's FIFO; the owner delivers after unlocking, and grants or
/// dismisses waiters after unlocking.
///
/// A thread that appends an item while another thread's turn is in progress leaves it to that
/// turn — at most ``TurnWaiter/grantsPerTurn`` items per turn; past that it waits
/// (``TurnWaiter``) until the turn reaches its item. The turn delivers a waiting thread's item
/// for it (and dismisses the waiter: its call returns) while the turn's budget lasts
/// (``TurnWaiter/grantsPerTurn`` such items); past that it hands the waiter the turn, and the
/// waiter delivers its item itself and goes on. The thread holding the turn appends without
/// waiting (an item from inside its own delivery). So a call returns after its own item plus
/// at most one turn's grants and one budget of others' items (and what its own deliveries
/// append), the FIFO holds at most the grants plus one item per waiting thread, plus what the
/// owner keeps for lack of demand, and the turn passes once per budget of waiting threads'
/// items rather than once per item (each pass waits for the next holder to be scheduled).
///
/// States: `idle` ⇄ `delivering(holder)`; waiters only while delivering.
/// | event | idle | delivering, this thread's turn | delivering, another's |
/// |---|---|---|---|
/// | `arrived` (item appended) | may start: begin the turn, deliver; else stays queued | queued | grants left: queued, grants −1; else wait at its position |
/// | `next` (before taking an item) | — | a waiter's item next: budget left: deliver it for the waiter (budget −1, dismiss it); else the turn passes to it (fresh grants and budget) | — |
/// | `ended` (nothing to deliver, or no demand) | — | idle; every waiter dismissed (its item stays queued) | — |
@usableFromInline
struct DeliveryTurn {
  /// The thread whose turn it is (``currentThreadIdentity()``), 0 while idle.
  @usableFromInline var holder: UInt = 0
  /// How many more items other threads may leave to this turn without waiting.
  @usableFromInline var grants = 0
  /// How many more waiting threads' items this turn delivers for them before it passes.
  @usableFromInline var budget = 0
  /// Threads waiting for the turn, each with its item's position in the owner's FIFO (counted
  /// in items ever appended), oldest first.
  @usableFromInline var waiters: [(position: Int, waiter: TurnWaiter)] = []
  /// How many items were ever appended to and taken from the owner's FIFO.
  @usableFromInline var appended = 0
  @usableFromInline var taken = 0

  @inlinable init() {}

  @inlinable var isDelivering: Bool { holder != 0 }

  /// What the thread that appended an item does next.
  @usableFromInline
  enum Arrival {
    /// Its turn: deliver (from the FIFO's oldest item, which may be older than its own).
    case deliver
    /// Left to the turn in progress (or kept for lack of demand).
    case queued
    /// Wait for the turn (``TurnWaiter/wait()``); granted: deliver, dismissed: it stays queued.
    case wait(TurnWaiter)
  }

  /// The owner appended an item from `thread`. `mayStart`: an idle owner may deliver now (it
  /// has demand).
  @inlinable
  mutating func arrived(from thread: UInt, mayStart: Bool) -> Arrival {
    let position = appended
    appended += 1
    if isDelivering {
      if holder == thread { return .queued }
      if grants > 0 {
        grants -= 1
        return .queued
      }
      let waiter = TurnWaiter(thread: thread)
      waiters.append((position, waiter))
      return .wait(waiter)
    }
    guard mayStart else { return .queued }
    begin(thread)
    return .deliver
  }

  /// `thread` takes the turn (idle, to deliver what is queued, e.g. after a request; or handed
  /// to it as a waiter). Its grants are what ``TurnWaiter/grantsPerTurn`` leaves after the
  /// items already queued for others, so that one call delivers at most that many of theirs.
  @inlinable
  mutating func begin(_ thread: UInt) {
    holder = thread
    grants = max(0, TurnWaiter.grantsPerTurn - (appended - taken - waiters.count))
    budget = TurnWaiter.grantsPerTurn
  }

  /// What the holder does about a waiting thread before it takes the FIFO's oldest item.
  @usableFromInline
  enum WaiterNext {
    /// No waiter's item is next: take it (``took()``).
    case none
    /// The next item is this waiter's, delivered for it: take it, and dismiss the waiter
    /// after unlocking.
    case deliverFor(TurnWaiter)
    /// The turn is this waiter's now (the budget is spent): grant it after unlocking and
    /// return.
    case pass(TurnWaiter)
  }

  /// Before the holder takes the FIFO's oldest item: whether it belongs to a waiter, and what
  /// becomes of that waiter.
  @inlinable
  mutating func waiterNext() -> WaiterNext {
    guard let first = waiters.first, first.position == taken else { return .none }
    waiters.removeFirst()
    if budget > 0 {
      budget -= 1
      return .deliverFor(first.waiter)
    }
    begin(first.waiter.thread)
    return .pass(first.waiter)
  }

  /// The holder took the FIFO's oldest item.
  @inlinable
  mutating func took() { taken += 1 }

  /// The owner dropped its FIFO's items (`count` of them; an end or a completion).
  @inlinable
  mutating func dropped(_ count: Int) { taken += count }

  /// The turn ends: nothing (more) to deliver, or no demand. Returns the waiters to dismiss
  /// after unlocking (their items stay queued, for the next turn).
  @inlinable
  mutating func ended() -> [(position: Int, waiter: TurnWaiter)] {
    holder = 0
    defer { waiters = [] }
    return waiters
  }
}
