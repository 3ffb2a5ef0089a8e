/// Where a subject's turn stops while a subscriber it delivered to is still attaching (inside
/// `receive(subscription:)` on another thread) with a full share of values queued (see
/// ``ConduitState``, **Attaching**), kept in the subject's locked state.
///
/// Values for an attaching subscriber wait in its conduit until the attach returns; past
/// ``ConduitState/attachQueueLimit`` of them, the holder of the turn that offers one queues a
/// waiter at the conduit's ``AttachGate`` and *arms* the turn (``arm()``). The holder's turn goes
/// on — everything it delivers is within its call's allowance — and, where it would end or hand
/// the turn on, it *parks* instead (``park()``): it keeps the turn word (``SharedSubscriberList``:
/// held as `draining`, offering no grants, with no thread's identity), so that no other turn
/// adds to the attaching subscriber's queue, and leaves, holding nothing; its call then waits,
/// deferred to the end of its outermost turn (see ``DeliveryContext``), for the gate. When the
/// attach ends (or the subscriber is cancelled), the gate grants its waiter, and once every gate
/// this turn stopped at has opened (``resumed()``), the same call takes the turn back and runs
/// what was queued for it, on what is left of its allowance: first the rest of an attach's
/// drain (the values its own turn queued there, which the subscribing call, draining beside
/// the parked turn within its allowance, handed back: see ``Conduit/attachEnded()``), then
/// what was queued meanwhile. So the values waiting for an attach
/// are delivered by the call that queued them — never by a later sender, whose call would
/// deliver the queues of every turn since, a number that grew with the senders (before: up to
/// 330 values of others in one `send`, four senders).
///
/// Only one turn exists at a time, and a parked turn is still the turn: so there is one
/// parking per subject. Senders meanwhile wait for their turn (or, inside a delivery, defer
/// the wait) as behind any turn; a completion, a cancel's release and a drain are queued for
/// it. The attach never waits for the parked turn: the subscribing thread runs
/// `receive(subscription:)` as inside a delivery, so it never blocks for a turn. So the parked
/// turn resumes unless `receive(subscription:)` itself blocks until a sender's call returns —
/// the rule the gate always had (``AttachGate``).
///
/// States: `idle` → `armed(gates)` → `parked(remaining)` → `idle`.
/// | event | idle | armed | parked |
/// |---|---|---|---|
/// | ``arm()`` (the holder queued a gate waiter) | armed(1) | gates + 1 | — (nobody delivers) |
/// | ``park()`` (the holder's turn would end or be handed on) | `false`: end or hand on | parked(gates): `true` | — |
/// | ``resumed()`` (a gate waiter granted, by the parked call) | — | — | remaining − 1; at 0: idle (the call takes the turn back) |
@usableFromInline
struct TurnParking {
  /// How many gates the turn in progress must wait for (armed), or waits for (parked).
  @usableFromInline var gates = 0
  /// Whether the turn is parked.
  @usableFromInline var parked = false

  @inlinable init() {}

  /// The holder queued a waiter at an attaching subscriber's gate: its turn parks at its end.
  @inlinable mutating func arm() {
    guard !parked else {
      Violation.internalInconsistency("a subject's parked turn was armed: somebody delivered")
    }
    gates += 1
  }

  /// Where the holder's turn would end or be handed on: `true` if it parks instead.
  @inlinable mutating func park() -> Bool {
    guard gates > 0, !parked else { return false }
    parked = true
    return true
  }

  /// One of the gates the turn waits for has opened (its waiter granted), by the parked call:
  /// `true` once it was the last (the turn is then the caller's again).
  @inlinable mutating func resumed() -> Bool {
    guard parked, gates > 0 else {
      Violation.internalInconsistency("a subject's turn resumed without being parked")
    }
    gates -= 1
    guard gates == 0 else { return false }
    parked = false
    return true
  }
}
