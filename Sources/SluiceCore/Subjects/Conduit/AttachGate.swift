/// Where the senders of other threads wait while a subscriber they deliver to is still inside
/// `receive(subscription:)` with a full share of values queued (see ``ConduitState``,
/// **Attaching**): each sender feels the attach's pace, as it feels a slow `receive`, instead
/// of queueing values for that subscriber without bound.
///
/// The thread offering such a value holds the subject's turn (only the turn's holder delivers),
/// and a thread inside a delivery never blocks: its waiter here *parks* the turn at its end
/// (``SubjectCore/parkTurnForAttach(at:)``, ``TurnParking``), so that no later turn adds to
/// that subscriber's queue, and its call waits for the gate at the end of its outermost turn,
/// holding no turn by then (see ``DeliveryContext``). So a sender's value is queued, its call
/// goes on (its other subscribers, what it was handed) and returns only once the attach ends;
/// and two threads each attaching while sending into the other's subject cannot deadlock. A
/// thread waits here at most once per gate (its later values are queued behind it).
///
/// Made (at most once per conduit) by the first sender that must wait, under the conduit's
/// lock; opened once, by the attach's end or by a `cancel()`, which *grant* every waiter after
/// unlocking: the parked turn resumes on the call that parked it, which delivers what the
/// attach's drain left (its own values). The wait ends unless the subscriber's
/// `receive(subscription:)` itself blocks until that sender's call returns (or on anything that
/// needs its thread): the subscribing thread runs that call as inside a delivery, so a `send`
/// it makes there never blocks for a turn.
@usableFromInline
final class AttachGate: @unchecked Sendable {
  // Safety: `waiters` is read and written only under the owning conduit's lock (`open()`
  // takes it there); the waiters are thread-safe.
  @usableFromInline var waiters: [TurnWaiter] = []

  @usableFromInline init() {}

  /// Under the conduit's lock: the calling thread's waiter at this gate, or `nil` if it waits
  /// here already (its value is queued, and its call waits once).
  @usableFromInline func waiter(for context: DeliveryContext) -> TurnWaiter? {
    let thread = context.identity
    if waiters.contains(where: { $0.thread == thread }) { return nil }
    let waiter = TurnWaiter(for: context)
    waiters.append(waiter)
    return waiter
  }

  /// Under the conduit's lock: opens the gate; returns the waiters to grant after unlocking.
  @inlinable func open() -> [TurnWaiter] {
    defer { waiters = [] }
    return waiters
  }
}
