/// Whose turn it is to deliver from a FIFO that several threads fill, with the bound that keeps
/// every call short: the state behind ``MergeCore`` and ``SerialDelivery``. It lives inside its
/// owner's lock, next to the owner's FIFO; the owner delivers after unlocking, and grants or
/// dismisses waiters after unlocking.
///
/// A thread that appends an item while another thread's turn is in progress leaves it to that
/// turn while the turn has *grants* and no thread waits; otherwise it queues a waiter at its
/// item (``TurnWaiter``) and waits — or, inside a delivery of its own, defers the wait to the
/// end of its outermost turn (``DeliveryContext``). The turn delivers a waiting thread's item
/// for it (and dismisses the waiter: its call returns) while the holder's call has allowance
/// left (``DeliveryContext/spendOne()``; an item of the holder's own thread costs nothing);
/// past that it hands the waiter the turn, and the waiter delivers its item itself and goes
/// on. The thread holding the turn appends without waiting (an item from inside its own
/// delivery).
///
/// **Bounded calls that compose.** A turn's grants are reserved from its holder's allowance
/// when it begins (``DeliveryContext/reserve(_:)``: at most ``TurnWaiter/grantsPerTurn``, less
/// what is already queued for nobody to wait for) and given back when it ends. While a thread
/// waits, nothing is queued without a waiter — no grant, and not even the holder's own item —
/// so everything behind a waiter can be handed on, and a turn handed to a waiter inherits
/// nothing it must deliver. So a call delivers at most its
/// allowance of other threads' items across every turn it holds (with the subjects' and
/// fan-in's turns), plus what it asked for (a `request` delivers what waited for demand). The
/// FIFO holds at most the grants plus one item per waiting thread, plus what the owner keeps
/// for lack of demand.
///
/// States: `idle` ⇄ `delivering(holder)`; waiters only while delivering.
/// | event | idle | delivering, this thread's turn | delivering, another's |
/// |---|---|---|---|
/// | `arrived` (item appended) | may start: begin the turn (reserve grants), deliver; else stays queued | no waiter: queued; else wait (defer) at its position | grants left and no waiter: queued, grants −1; else wait (or defer) at its position |
/// | `waiterNext` (before taking an item) | — | a waiter's item next: its thread's own, or allowance left: deliver it for the waiter (dismiss it); else the turn passes to it (grants 0) | — |
/// | `resumed` (a granted waiter takes the turn) | — | reserve its grants | — |
/// | `ended` (nothing to deliver, or no demand) | — | idle; unused grants given back; every waiter dismissed (its item stays queued) | — |
@usableFromInline
struct DeliveryTurn {
  /// The thread whose turn it is (``currentThreadIdentity()``), 0 while idle.
  @usableFromInline var holder: UInt = 0
  /// How many more items other threads may leave to this turn without waiting (reserved from
  /// the holder's allowance).
  @usableFromInline var grants = 0
  /// Threads waiting for the turn, each with its item's position in the owner's FIFO (counted
  /// in items ever appended), oldest first.
  @usableFromInline var waiters: [(position: Int, waiter: TurnWaiter)] = []
  /// How many items were ever appended to and taken from the owner's FIFO.
  @usableFromInline var appended = 0
  @usableFromInline var taken = 0

  @inlinable init() {}

  @inlinable var isDelivering: Bool { holder != 0 }

  /// Items queued that no thread waits for (granted, or kept for lack of demand).
  @inlinable var unwaited: Int { appended - taken - waiters.count }

  /// What the thread that appended an item does next.
  @usableFromInline
  enum Arrival {
    /// Its turn: deliver (from the FIFO's oldest item, which may be older than its own).
    case deliver
    /// Left to the turn in progress (or kept for lack of demand).
    case queued
    /// Wait for the turn (``TurnWaiter/wait()``), or defer the wait inside a delivery;
    /// granted: deliver, dismissed: it stays queued.
    case wait(TurnWaiter)
  }

  /// The owner appended an item from the thread of `context`. `mayStart`: an idle owner may
  /// deliver now (it has demand).
  @inlinable
  mutating func arrived(from context: DeliveryContext, mayStart: Bool) -> Arrival {
    let position = appended
    appended += 1
    if isDelivering {
      // Its own item, from inside its delivery: queued — unless a thread waits, then it waits
      // (deferred) like anyone, so that nothing the holder could not hand on is ever queued
      // behind a waiter for the next holder to inherit.
      if holder == context.identity, waiters.isEmpty { return .queued }
      if grants > 0, waiters.isEmpty {
        grants -= 1
        return .queued
      }
      let waiter = TurnWaiter(for: context)
      waiters.append((position, waiter))
      return .wait(waiter)
    }
    guard mayStart else { return .queued }
    begin(context, owning: 1)
    return .deliver
  }

  /// The thread of `context` takes the turn (idle, to deliver what is queued, e.g. after a
  /// request), and holds it until it calls ``DeliveryContext/exit()`` after delivering.
  /// `owning`: how many of the queued items are its own (not counted against its grants). Its
  /// grants are reserved from its allowance: what ``TurnWaiter/grantsPerTurn`` leaves after the
  /// items already queued for others.
  @inlinable
  mutating func begin(_ context: DeliveryContext, owning: Int = 0) {
    context.enter()
    holder = context.identity
    grants = context.reserve(TurnWaiter.grantsPerTurn - (unwaited - owning))
  }

  /// A waiter that was handed the turn (``WaiterNext/pass(_:)``) takes it (and holds it until
  /// ``DeliveryContext/exit()``): its grants are reserved from its own allowance.
  @inlinable
  mutating func resumed(_ context: DeliveryContext) {
    context.enter()
    grants = context.reserve(TurnWaiter.grantsPerTurn - unwaited)
  }

  /// What the holder does about a waiting thread before it takes the FIFO's oldest item.
  @usableFromInline
  enum WaiterNext {
    /// No waiter's item is next: take it (``took()``).
    case none
    /// The next item is this waiter's, delivered for it: take it, and dismiss the waiter
    /// after unlocking.
    case deliverFor(TurnWaiter)
    /// The turn is this waiter's now (the holder's allowance is spent): grant it after
    /// unlocking and return.
    case pass(TurnWaiter)
  }

  /// Before the holder (the thread of `context`) takes the FIFO's oldest item: whether it
  /// belongs to a waiter, and what becomes of that waiter.
  @inlinable
  mutating func waiterNext(_ context: DeliveryContext) -> WaiterNext {
    guard let first = waiters.first, first.position == taken else { return .none }
    waiters.removeFirst()
    if first.waiter.thread == holder || context.spendOne() {
      return .deliverFor(first.waiter)
    }
    holder = first.waiter.thread
    context.giveBack(grants)
    grants = 0  // the waiter reserves its own (``resumed(_:)``)
    return .pass(first.waiter)
  }

  /// The holder took the FIFO's oldest item.
  @inlinable
  mutating func took() { taken += 1 }

  /// The owner dropped its FIFO's items (`count` of them; an end or a completion).
  @inlinable
  mutating func dropped(_ count: Int) { taken += count }

  /// ``ended(_:)`` when no thread waits (nothing to return).
  @inlinable
  mutating func endedWithoutWaiters(_ context: DeliveryContext) {
    holder = 0
    context.giveBack(grants)
    grants = 0
  }

  /// The turn ends (by its holder, the thread of `context`): nothing (more) to deliver, or no
  /// demand. Unused grants go back to the holder's allowance. Returns the waiters to dismiss
  /// after unlocking (their items stay queued, for the next turn).
  @inlinable
  mutating func ended(_ context: DeliveryContext) -> [(position: Int, waiter: TurnWaiter)] {
    holder = 0
    context.giveBack(grants)
    grants = 0
    defer { waiters = [] }
    return waiters
  }
}
