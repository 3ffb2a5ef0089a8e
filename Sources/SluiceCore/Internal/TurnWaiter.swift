import Dispatch
import Synchronization

/// A thread waiting for its turn to deliver: the thread delivering now hands it the role
/// (``grant()``) once the work queued before it is done, and the waiting thread, which blocked
/// in ``wait()``, goes on with its own delivery.
///
/// This is how the engines where one thread delivers what others hand over (``SubjectCore``'s
/// ``SharedSubscriberList``, ``MergeCore``) keep every call bounded: a thread hands over at most
/// ``grantsPerTurn`` values per turn without waiting; past that it queues a waiter instead and
/// delivers itself when its turn comes, so a thread that never stops sending feels the
/// deliverer's pace (as with a lock) instead of filling an unbounded queue, and the deliverer
/// returns after its own work plus a bounded batch.
///
/// A thread that holds a turn of its own (inside a delivery) never blocks here: it defers the
/// wait to the end of its outermost turn (see ``DeliveryContext``), so turns that feed each
/// other cannot deadlock.
///
/// The wait yields the processor a few times (``yieldsBeforeSleep``) before it blocks on the
/// thread's semaphore: a waiter resolved meanwhile costs neither side a system call (the signal
/// finds no sleeper, the wait takes the count at once), and each yield gives the processor to
/// whoever can run — the deliverer first, on a machine with fewer cores than senders. Spinning
/// without yielding took the cores from the thread delivering (8 senders on 2 cores: half the
/// throughput, measured); yielding does not. Exactly one of ``grant()`` (the turn is the waiter's: it delivers) and
/// ``dismiss()`` (no turn is needed any more: a subject's turn delivered the waiter's value for
/// it, or an engine whose deliverer stopped for lack of
/// demand keeps the waiter's value buffered) is called, once, after the calling thread has
/// given up the role.
@usableFromInline
final class TurnWaiter: Sendable {
  /// The waiting thread (``currentThreadIdentity()``): the role's holder once granted.
  @usableFromInline let thread: UInt
  /// ``waiting``, ``granted`` or ``dismissed``.
  let outcome = Atomic<UInt8>(0)
  static var waiting: UInt8 { 0 }
  static var granted: UInt8 { 1 }
  static var dismissed: UInt8 { 2 }
  /// The waiting thread's semaphore (``DeliveryContext/wakeUp``): signalled once, at the end.
  let wakeUp: DispatchSemaphore

  /// How many values other threads may hand over to one turn of the role without waiting:
  /// the bound on what a deliverer runs for others, beyond its own work, per call.
  @inlinable static var grantsPerTurn: Int { 32 }

  // Not inlinable: waiting is the slow path, and the fields stay internal.
  /// A waiter for the thread whose context `context` is (the calling thread).
  @usableFromInline
  init(for context: DeliveryContext) {
    thread = context.identity
    wakeUp = context.wakeUp
  }

  /// Blocks until ``grant()`` or ``dismiss()`` has been called; `true` for ``grant()``. Only a
  /// thread that holds no turn waits (one inside a delivery defers: ``DeliveryContext``).
  @usableFromInline
  @discardableResult
  func wait() -> Bool {
    var yields = Self.yieldsBeforeSleep
    while yields > 0, outcome.load(ordering: .acquiring) == Self.waiting {
      yieldProcessor()
      yields -= 1
    }
    wakeUp.wait()  // at once if resolved: the signal came, or comes right after the outcome
    return outcome.load(ordering: .acquiring) == Self.granted
  }

  /// How many times ``wait()`` yields the processor before it sleeps. Four, measured
  /// (Benchmarks/README.md, issue 38): with 16 threads sending into a subject whose sink works
  /// ~1 µs a value, 0.78–0.87× OpenCombine's throughput without yields, 1.06–1.26× with four
  /// (two: 1.09–1.17×); 8 threads, and fast sinks, no worse.
  static var yieldsBeforeSleep: Int { 4 }

  /// Gives the waiting thread its turn (once).
  @usableFromInline
  func grant() { end(Self.granted) }

  /// Lets the waiting thread go without a turn (once).
  @usableFromInline
  func dismiss() { end(Self.dismissed) }

  func end(_ outcome: UInt8) {
    self.outcome.store(outcome, ordering: .releasing)
    wakeUp.signal()
  }

  /// Whether ``grant()`` has been called.
  @usableFromInline
  var isGranted: Bool { outcome.load(ordering: .acquiring) == Self.granted }

  /// Whether ``grant()`` or ``dismiss()`` has been called.
  @usableFromInline
  var isResolved: Bool {
    let outcome = outcome.load(ordering: .acquiring)
    return outcome == Self.granted || outcome == Self.dismissed
  }
}

extension TurnWaiter: Equatable {
  @inlinable
  static func == (lhs: TurnWaiter, rhs: TurnWaiter) -> Bool { lhs === rhs }
}
