/// Whose turn it is to read a ``DirectIteration``'s sequence, as a pure state machine: one
/// caller reads at a time, the others wait in FIFO order.
///
/// States (`phase`):
/// - `idle`: no one is reading;
/// - `reading`: one caller reads;
/// - `ended`: the sequence ended or failed, or a caller's task was cancelled while no one read.
///
/// Transitions (event → change; action performed by ``DirectIteration`` after unlocking):
/// | event | idle | reading | ended |
/// |---|---|---|---|
/// | `enter` (a `next()` call) | reading; read | `wait(ticket)` | the end |
/// | `enter` in a cancelled task | ended; drop the iterator; the end | the end (this caller only) | the end |
/// | `wait(ticket, k)` (the caller parks) | reading; resume `k` to read | queue `k` (withdrawn while parking: resume `k` with the end) | resume `k` with the end |
/// | `withdraw(ticket)` (a waiting caller's task was cancelled) | — | queued: unqueue `k`, resume it with the end (this caller only); still parking: mark the ticket withdrawn | — |
/// | `begin` (a resumed caller takes its turn) | — | read (in a cancelled task: as `leave(ended: true)`) | — |
/// | `leave(ended: e)` (the read returned) | — | e: ended; drop the iterator, end the queue. Else hand the turn to the oldest queued caller, or idle | — |
///
/// A caller's cancellation ends only its own `next()` while another caller reads: the reader's
/// read is the sequence's own and cannot be ended from another task, and ending the iteration
/// under it would leave a read nobody awaits (a later iteration of the same stream would be a
/// second reader). Not generic, so that the per-value lock rounds of a generic iteration touch no
/// generic metadata.
@usableFromInline
struct ReadTurns {
  /// A caller waiting for its turn: resumed with `true` to read, `false` at the end.
  @usableFromInline typealias Caller = UnsafeContinuation<Bool, Never>

  @usableFromInline enum Phase {
    case idle
    case reading
    case ended
  }

  /// What a `next()` call does after `enter`.
  @usableFromInline enum Entry {
    case read
    case end
    /// The end, after dropping the iterator (no one reads it any more).
    case dropAndEnd
    case wait(ticket: Int)
  }

  /// What `leave` asks to be done after unlocking.
  @usableFromInline enum Action {
    case handOver(Caller)
    case end([Caller])
    case none
  }

  @usableFromInline var phase = Phase.idle
  /// Callers waiting for their turn, oldest first, each with its ticket.
  @usableFromInline var queue: [(ticket: Int, caller: Caller)] = []
  @usableFromInline var lastTicket = 0
  /// Tickets handed out by `enter` whose callers have not parked yet, and whether each was
  /// withdrawn meanwhile (its task's cancellation handler may run before the caller parks).
  @usableFromInline var parking: [Int: Bool] = [:]

  @inlinable init() {}

  /// Whether a caller is reading.
  @usableFromInline var isReading: Bool {
    guard case .reading = phase else { return false }
    return true
  }

  /// A `next()` call, in a task `cancelled` or not.
  @inlinable
  mutating func enter(cancelled: Bool) -> Entry {
    switch phase {
    case .idle:
      if cancelled {
        phase = .ended
        return .dropAndEnd
      }
      phase = .reading
      return .read
    case .reading:
      if cancelled { return .end }
      lastTicket &+= 1
      parking[lastTicket] = false
      return .wait(ticket: lastTicket)
    case .ended:
      return .end
    }
  }

  /// A caller parks: queued (`nil`), or what to resume it with now (the turn came free since
  /// it entered, or the iteration ended, or its task's cancellation withdrew the ticket).
  @usableFromInline
  mutating func wait(ticket: Int, _ caller: Caller) -> Bool? {
    let withdrawn = parking.removeValue(forKey: ticket) ?? false
    switch phase {
    case .idle:
      if withdrawn { return false }
      phase = .reading
      return true
    case .reading:
      if withdrawn { return false }
      queue.append((ticket, caller))
      return nil
    case .ended:
      return false
    }
  }

  /// A waiting caller's task was cancelled: the caller to resume with the end if it is queued;
  /// if it has not parked yet, its ticket is marked so that it does not park.
  @usableFromInline
  mutating func withdraw(ticket: Int) -> Caller? {
    if let index = queue.firstIndex(where: { $0.ticket == ticket }) {
      return queue.remove(at: index).caller
    }
    if parking[ticket] != nil { parking[ticket] = true }
    return nil
  }

  /// A caller resumed to read takes its turn: `true` to read; `false` (its task was cancelled
  /// meanwhile) ends the iteration, as `leave(ended: true)`, whose action is returned.
  @usableFromInline
  mutating func begin(cancelled: Bool) -> Action? {
    cancelled ? leave(ended: true) : nil
  }

  /// The read returned (`ended`: with the end or a failure).
  @usableFromInline
  mutating func leave(ended: Bool) -> Action {
    guard case .reading = phase else { return .none }
    if ended {
      phase = .ended
      defer { queue.removeAll() }
      return .end(queue.map(\.caller))
    }
    if !queue.isEmpty { return .handOver(queue.removeFirst().caller) }
    phase = .idle
    return .none
  }
}
