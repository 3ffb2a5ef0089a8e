public import Synchronization

/// What the task behind a task-driven subscription uses to feed the subscriber, without seeing
/// the subscriber's type.
@usableFromInline
protocol ValueFeed<Output, Failure>: Sendable {
  associatedtype Output
  associatedtype Failure: Error

  /// The task's whole work: runs the body, unless the subscription was cancelled before the
  /// task began (then the body was already released).
  @inlinable func run() async

  /// Takes one unit of demand, suspending (parked, not spinning) while there is none.
  /// `false` once the subscription is cancelled: the task should stop.
  @inlinable func reserve() async -> Bool

  /// Takes one unit of demand if there is some, without suspending: `true` (pull a value),
  /// `false` (cancelled: stop), or `nil` when there is none (then call ``reserve()``). A
  /// synchronous call, so the common case costs no async call (no frame allocated on the task).
  @inlinable func reserveNow() -> Bool?

  /// Delivers a value reserved with `reserve()`; `false` if cancelled meanwhile (the value is
  /// dropped).
  @discardableResult
  @inlinable func deliver(_ value: Output) -> Bool

  /// Sends the completion, unless cancelled.
  @inlinable func finish(_ completion: Subscribers.Completion<Failure>)
}

extension ValueFeed {
  /// Takes one unit of demand: at once when there is some (``reserveNow()``, no async call),
  /// otherwise parked in ``reserve()``. `false` once cancelled.
  @inlinable @inline(__always)
  func takeDemand() async -> Bool {
    if let now = reserveNow() { return now }
    return await reserve()
  }
}

/// A subscription whose values come from a `Task`: the shared engine of
/// ``AsyncSequencePublisher``, ``AsyncFuture`` and ``AsyncProducer``.
///
/// **Demand**: nothing runs until the first request, which starts the task (a request made
/// inside the subscriber's `receive(subscription:)` starts it once that call returns, so no
/// signal overlaps it); the task takes one
/// unit of demand before each value and parks on a continuation at zero demand; demand returned
/// from `receive(_:)` counts. `request(.none)` traps. **Ordering**: every signal comes from the
/// one task, so they are serial. **Cancellation**: `cancel()` cancels the task, unparks it and
/// releases the subscriber at once (as the value being delivered returns, if one is), and the
/// body too if the task has not begun to run it (a task the pool has not run yet holds no
/// sequence or closure); after it returns, at most a value the task was already delivering on
/// another thread arrives. See ``PullState``.
///
/// **The per-value path takes no lock**: the task takes all the demand there is at once (one
/// lock round, then none until it is spent: ``credit``) and calls the subscriber through a
/// ``DeliveryGate`` (two uncontended atomic operations), which lets `cancel()` release the
/// subscriber without waiting for a delivery. A lock round per value remains only for demand
/// a `receive(_:)` returns.
@usableFromInline
final class TaskDrivenSubscription<Downstream: Subscriber>: Subscription, ValueFeed,
  CustomStringConvertible, @unchecked Sendable
{
  // Safety: the state machine is in `state`'s lock; continuations are resumed after
  // unlocking. `held` is read only inside `gate` (by the one task, whose signals are serial)
  // and written only by whoever the gate elects to release it (closed, nothing in flight).
  // `credit` is read and written only by the task (atomic, so that the task's steps on
  // different threads need no other ordering than the runtime's).
  @usableFromInline typealias Output = Downstream.Input
  @usableFromInline typealias Failure = Downstream.Failure
  @usableFromInline typealias Body = @Sendable (any ValueFeed<Output, Failure>) async -> Void

  @usableFromInline let state: Lock<PullState<Body>>
  @usableFromInline let gate = DeliveryGate(open: true)
  /// The subscriber, until the gate's elected releaser drops it.
  @usableFromInline @exclusivity(unchecked) var held: Downstream?
  /// Units of demand the task took from the state and has not spent (``reserveNow()``).
  @usableFromInline let credit = Atomic<Int>(0)
  /// Set once the state is terminal (`cancel()`, or the completion): the task, and a `Sender`
  /// kept past the body, stop spending credit.
  @usableFromInline let endedFlag = Atomic<Bool>(false)
  @usableFromInline let priority: TaskPriority?
  @usableFromInline let description: String

  @inlinable init(
    description: String, priority: TaskPriority?, downstream: Downstream, body: @escaping Body
  ) {
    self.description = description
    self.priority = priority
    specializedRequest = { $0.requestSpecialized($1) }
    specializedReserve = { await $0.reserveSpecialized() }
    specializedReserveNow = { $0.reserveNowSpecialized() }
    specializedDeliver = { $0.deliverSpecialized($1) }
    held = downstream
    state = Lock(PullState(body: body))
  }

  /// Hands `downstream` a new task-driven subscription whose task runs `body`.
  @inlinable
  static func attach(
    _ downstream: Downstream, description: String, priority: TaskPriority?,
    body: @escaping Body
  ) {
    let subscription = TaskDrivenSubscription(
      description: description, priority: priority, downstream: downstream, body: body)
    downstream.receive(subscription: subscription)
    // Only now may the task start: a value or completion must not overlap the subscriber's
    // `receive(subscription:)` (whose requests were counted meanwhile).
    if subscription.state.withLock({ $0.attached() }) { subscription.startTask() }
  }

  /// `request(_:)` as compiled where this subscription was created (specialized); the generic
  /// implementation reached through `any Subscription` only forwards here.
  @usableFromInline let specializedRequest: (TaskDrivenSubscription, Subscribers.Demand) -> Void
  /// The task calls `reserve()` and `deliver(_:)` through `any ValueFeed` (which erases the
  /// subscriber's type); these forward to the specialized implementations, per value.
  @usableFromInline let specializedReserve: (TaskDrivenSubscription) async -> Bool
  @usableFromInline let specializedReserveNow: (TaskDrivenSubscription) -> Bool?
  @usableFromInline let specializedDeliver: (TaskDrivenSubscription, Output) -> Bool

  @inlinable func request(_ demand: Subscribers.Demand) {
    specializedRequest(self, demand)
  }

  @inlinable func requestSpecialized(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    switch state.withLock({ $0.requested(demand) }) {
    case .start:
      startTask()
    case .resume(let parked):
      parked.resume(returning: true)
    case .none:
      break
    }
  }

  /// Starts the task that runs the body.
  @inlinable func startTask() {
    let feed: any ValueFeed<Output, Failure> = self  // erases `Downstream` for the task
    let task = Task(priority: priority) { await feed.run() }
    state.withLock { $0.taskStarted(task) }?.cancel()
  }

  @inlinable func cancel() {
    let (task, parked, body) = state.withLock { $0.cancelled() }
    // After the state is terminal: a task that stops on it finds nothing to complete.
    endedFlag.store(true, ordering: .releasing)
    if gate.close() { held = nil }
    task?.cancel()
    parked?.resume(returning: false)
    withExtendedLifetime(body) {}
  }

  // MARK: ValueFeed

  @inlinable func run() async {
    // The body waits in the state until now: a cancel before this released it at once.
    guard let body = state.withLock({ $0.taskRuns() }) else { return }
    await body(self)
  }

  @inlinable func reserve() async -> Bool {
    await specializedReserve(self)
  }

  @inlinable func reserveNow() -> Bool? {
    specializedReserveNow(self)
  }

  /// One unit of the task's credit, or, once it is spent, all the demand the state has.
  @inlinable func reserveNowSpecialized() -> Bool? {
    let units = credit.load(ordering: .relaxed)
    if units > 0 {
      guard !endedFlag.load(ordering: .relaxed) else { return false }
      credit.store(units - 1, ordering: .relaxed)
      return true
    }
    switch state.withLock({ $0.nextPull() }) {
    case .pull(let units):
      credit.store(units - 1, ordering: .relaxed)
      return true
    case .stop: return false
    case .park: return nil
    }
  }

  @inlinable func reserveSpecialized() async -> Bool {
    if let now = reserveNowSpecialized() { return now }
    return await withUnsafeContinuation { continuation in
      if let (continuation, proceed) = state.withLock({ $0.parking(continuation) }) {
        continuation.resume(returning: proceed)
      }
    }
  }

  @inlinable func deliver(_ value: Output) -> Bool {
    specializedDeliver(self, value)
  }

  @inlinable func deliverSpecialized(_ value: Output) -> Bool {
    guard
      let more = gate.pass({ held.unsafelyUnwrapped.receive(value) }, releasing: { held = nil })
    else { return false }
    if more > 0 { state.withLock { $0.returned(more) } }
    return true
  }

  @inlinable func finish(_ completion: Subscribers.Completion<Failure>) {
    let (complete, parked) = state.withLock { $0.finishing() }
    // Terminal: a `Sender` kept past the body stops spending its credit, and one parked wakes
    // with `false`.
    endedFlag.store(true, ordering: .releasing)
    parked?.resume(returning: false)
    guard complete else { return }
    // The gate closes before the completion: a value that comes meanwhile is refused, and this
    // delivery, the last to leave, releases the subscriber. (A `cancel()` that closed it
    // first released it: then nothing.)
    _ = gate.pass(
      {
        _ = gate.close()
        held.unsafelyUnwrapped.receive(completion: completion)
      }, releasing: { held = nil })
  }
}
