import Sluice

/// The state of a subscription whose values a task pulls from one of an RPC's streams, one
/// `next()` per unit of demand, as a pure state machine (performed by ``RPCPullSubscription``).
///
/// It differs from SluiceAsync's task-driven producers in one transition: the task that pulls
/// may be cancelled by someone other than the subscriber. On a client, gRPC runs the response
/// handler in a child task of its own and cancels it when the call's deadline passes; a puller
/// parked for demand must then wake and return, or the deadline would wait for a subscriber
/// that may never ask again.
///
/// States: `idle` (no task yet) → `running` (the task pulls; parked while demand is zero) →
/// `terminal` (completed or cancelled: the subscriber is released).
///
/// Transitions (event → change, action performed by the subscription after unlocking):
/// | event | idle | running | terminal |
/// |---|---|---|---|
/// | `requested(n)` | demand +n; start the task | demand +n; a parked puller takes 1 and is resumed | ignore |
/// | `taskStarted(t)` | — | remember `t` | cancel `t` |
/// | `nextPull` (puller) | — | puller cancelled: stop; demand > 0: take 1, pull; else park | stop |
/// | `parking(k)` (puller) | — | as `nextPull`, resuming `k` at once unless it parks | resume `k` with stop |
/// | `pullerCancelled` | — | sticky; resume a parked puller with stop | ignore |
/// | `willDeliver` (puller) | — | the subscriber | `nil`: drop the value |
/// | `returned(n)` (puller) | — | demand +n | ignore |
/// | `finishing` | — | terminal; the subscriber to complete | `nil` |
/// | `cancelled` | terminal | terminal; cancel the task, resume a parked puller with stop | nothing |
///
/// The publishers pull one message ahead of the demand (the next message or the stream's end is
/// read after each delivery, then the demand taken before it is delivered), so at most one
/// message is taken off the RPC's stream (and off HTTP/2's flow-control window) beyond what the
/// subscriber asked for, and the stream's end reaches a subscriber without demand.
@usableFromInline
struct RPCPullState<Downstream> {
  @usableFromInline typealias Parked = UnsafeContinuation<Bool, Never>

  @usableFromInline var downstream: Downstream?
  @usableFromInline var demand = Subscribers.Demand.none
  @usableFromInline var started = false
  @usableFromInline var pullerWasCancelled = false
  @usableFromInline var task: Task<Void, Never>?
  @usableFromInline var parked: Parked?

  @inlinable init(downstream: Downstream) {
    self.downstream = downstream
  }

  /// Whether the subscription has reached its terminal state.
  @inlinable var isTerminal: Bool { downstream == nil }

  @usableFromInline enum RequestAction {
    case start
    case resume(Parked)
    case none
  }

  @inlinable mutating func requested(_ more: Subscribers.Demand) -> RequestAction {
    guard downstream != nil else { return .none }
    demand += more
    if !started {
      started = true
      return .start
    }
    if let parked, demand > 0 {
      self.parked = nil
      demand -= 1
      return .resume(parked)
    }
    return .none
  }

  /// The task to cancel if the subscription ended while the task was being created.
  @inlinable mutating func taskStarted(_ task: Task<Void, Never>) -> Task<Void, Never>? {
    guard downstream != nil else { return task }
    self.task = task
    return nil
  }

  @usableFromInline enum PullDecision {
    case pull
    case park
    case stop
  }

  /// Before each pull: whether the puller may take one unit of demand.
  @inlinable mutating func nextPull() -> PullDecision {
    guard downstream != nil, !pullerWasCancelled else { return .stop }
    guard demand > 0 else { return .park }
    demand -= 1
    return .pull
  }

  /// The puller parks `continuation` until demand arrives. Returns the continuation to resume
  /// at once and with what (`true`: pull), or `nil` if it is parked.
  @inlinable mutating func parking(_ continuation: Parked) -> (Parked, Bool)? {
    switch nextPull() {
    case .pull: return (continuation, true)
    case .stop: return (continuation, false)
    case .park:
      parked = continuation
      return nil
    }
  }

  /// The puller's task was cancelled: it must not wait for demand again. The parked puller to
  /// resume with stop, if any.
  @inlinable mutating func pullerCancelled() -> Parked? {
    guard downstream != nil else { return nil }
    pullerWasCancelled = true
    defer { parked = nil }
    return parked
  }

  /// The subscriber to deliver a pulled value to, or `nil` if cancelled meanwhile.
  @inlinable func willDeliver() -> Downstream? { downstream }

  @inlinable mutating func returned(_ more: Subscribers.Demand) {
    guard downstream != nil else { return }
    demand += more
  }

  /// Terminal; the subscriber to send the completion to, or `nil` if already terminal.
  @inlinable mutating func finishing() -> Downstream? {
    defer {
      downstream = nil
      task = nil
    }
    return downstream
  }

  /// Terminal; what to cancel and resume after unlocking. Idempotent.
  @inlinable mutating func cancelled() -> (
    downstream: Downstream?, task: Task<Void, Never>?, parked: Parked?
  ) {
    let released = (downstream, task, parked)
    downstream = nil
    task = nil
    parked = nil
    return released
  }
}
