/// The state of a subscription whose values a `Task` pulls from an async source, as a pure
/// state machine shared by ``AsyncSequencePublisher`` and the async producers.
///
/// States: `attaching` (inside the subscriber's `receive(subscription:)`: demand is counted, no
/// task starts, so that no signal overlaps that call) → `idle` (no task yet) → `running` (the
/// task pulls; parked while demand is zero) → `terminal` (finished, failed or cancelled).
///
/// The subscriber is not here: ``TaskDrivenSubscription`` delivers to it through a
/// ``DeliveryGate``, without this lock, and the gate decides who releases it. The task takes
/// the demand it finds in one go (``nextPull()``) and spends it without the lock, one unit a
/// pull; what it has not spent is not here either.
///
/// The task's body (which holds the sequence or the producer's closure) waits here until the
/// task runs and takes it: a subscription cancelled before its task ran releases the body at
/// once, with whatever it holds (an `AsyncStream` whose iterator cancels its own upstream when
/// dropped), instead of when a cooperative pool kept busy gets round to the task.
///
/// Transitions (event → change, action performed after unlocking):
/// | event | attaching | idle | running | terminal |
/// |---|---|---|---|---|
/// | `requested(n)` | demand +n | demand +n; start the task | demand +n; unpark the task (taking 1) | ignore |
/// | `attached` | idle; demand > 0: start the task | — | — | nothing |
/// | `taskStarted(t)` | — | — | remember `t` | cancel `t` |
/// | `taskRuns` (task) | — | — | hand over the body | `nil`: the task ends at once |
/// | `nextPull` (task) | — | — | demand > 0: take it all (`.unlimited` stays), pull; else park | stop |
/// | `parking(k)` (task) | — | — | demand > 0: take 1, resume `k`; else park `k` | resume `k` with stop |
/// | `returned(n)` (task) | — | — | demand +n | ignore |
/// | `finishing` (task) | — | — | terminal; complete the subscriber; resume a parked `Sender` with stop | resume a parked `Sender` with stop |
/// | `cancelled` | terminal | terminal | terminal; cancel the task, resume a parked one with stop, release a body not yet taken | nothing |
@usableFromInline
struct PullState<Body> {
  @usableFromInline typealias Parked = UnsafeContinuation<Bool, Never>

  /// Not terminal yet.
  @usableFromInline var live = true
  @usableFromInline var body: Body?
  @usableFromInline var demand = Subscribers.Demand.none
  @usableFromInline var started = false
  /// Inside the subscriber's `receive(subscription:)`: a request counts, the task waits.
  @usableFromInline var attaching = true
  @usableFromInline var task: Task<Void, Never>?
  @usableFromInline var parked: Parked?

  @inlinable init(body: Body) {
    self.body = body
  }

  @usableFromInline enum RequestAction {
    case start
    case resume(Parked)
    case none
  }

  @inlinable mutating func requested(_ more: Subscribers.Demand) -> RequestAction {
    guard live else { return .none }
    demand += more
    if !started {
      if attaching { return .none }
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

  /// The subscriber's `receive(subscription:)` returned: `true` if the task is to start now
  /// (it was asked for values meanwhile).
  @inlinable mutating func attached() -> Bool {
    attaching = false
    guard live, !started, demand > 0 else { return false }
    started = true
    return true
  }

  /// The task to cancel if the subscription was cancelled while the task was being created.
  @inlinable mutating func taskStarted(_ task: Task<Void, Never>) -> Task<Void, Never>? {
    guard live else { return task }
    self.task = task
    return nil
  }

  /// The task, as it begins to run, takes the body: `nil` if cancelled meanwhile.
  @inlinable mutating func taskRuns() -> Body? {
    defer { body = nil }
    return live ? body : nil
  }

  @usableFromInline enum PullDecision {
    /// Pull: the task takes this many units of demand (`Int.max` for `.unlimited`).
    case pull(Int)
    case park
    case stop
  }

  /// The task, out of the demand it took before, asks for more: all there is.
  @inlinable mutating func nextPull() -> PullDecision {
    guard live else { return .stop }
    guard let units = demand.max else { return .pull(.max) }
    guard units > 0 else { return .park }
    demand = .none
    return .pull(units)
  }

  /// The task parks `continuation` until demand arrives; resumes it at once if demand (or the
  /// end) came meanwhile. Returns the continuation to resume and with what, or `nil` if parked.
  @inlinable mutating func parking(_ continuation: Parked) -> (Parked, Bool)? {
    guard live else { return (continuation, false) }
    if demand > 0 {
      demand -= 1
      return (continuation, true)
    }
    parked = continuation
    return nil
  }

  @inlinable mutating func returned(_ more: Subscribers.Demand) {
    guard live else { return }
    demand += more
  }

  /// Terminal; whether the subscriber is to be completed (it was not terminal), and a parked
  /// continuation to resume with stop (a `Sender` kept past the body, waiting for demand).
  @inlinable mutating func finishing() -> (complete: Bool, parked: Parked?) {
    defer {
      live = false
      task = nil
      parked = nil
    }
    return (live, parked)
  }

  /// Terminal; what to cancel and resume after unlocking. Idempotent.
  @inlinable mutating func cancelled() -> (
    task: Task<Void, Never>?, parked: Parked?, body: Body?
  ) {
    let released = (task, parked, body)
    live = false
    task = nil
    parked = nil
    body = nil
    return released
  }
}
