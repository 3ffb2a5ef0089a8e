import GRPCCore
import Sluice

// Per-value paths (`takeDemand`, `deliver`, the state machine, the lock) are `@inlinable`, so
// that a client's module specializes them for its subscriber and message types; cold paths
// (messages of misuse) are not.

/// What the task behind an ``RPCPullSubscription`` pulls with, without seeing the subscriber's
/// type.
@usableFromInline
protocol PullFeed<Output>: Sendable {
  associatedtype Output

  /// Takes one unit of demand if there is some, without suspending: `true` (pull), `false`
  /// (stop), or `nil` when there is none (then call ``takeDemand()``). Synchronous, so the
  /// common case costs no async call.
  func takeDemandNow() -> Bool?

  /// Takes one unit of demand, suspending while there is none. `false` once the subscription
  /// is cancelled or the calling task is: the puller must stop (and not pull).
  func takeDemand() async -> Bool

  /// Delivers a value pulled after taking demand; `false` if cancelled meanwhile (the value is
  /// dropped).
  @discardableResult
  func deliver(_ value: Output) -> Bool
}

extension PullFeed {
  /// One unit of demand: at once when there is some, otherwise parked. `false`: stop.
  @inlinable @inline(__always)
  func demand() async -> Bool {
    if let now = takeDemandNow() { return now }
    return await takeDemand()
  }
}

/// What a pulling task runs, and what its cancellation handler calls: reached through an
/// existential, so that neither closure captures the subscriber's type.
@usableFromInline
protocol PullRunner: Sendable {
  func run() async
  func pullerCancelled()
}

/// A subscription whose values a `Task` pulls from an RPC's stream as the subscriber demands
/// them: the engine of ``RPCResponsePublisher`` (a client's responses) and
/// ``RPCRequestPublisher`` (a server's requests). See ``RPCPullState``.
///
/// **Demand**: nothing runs until the first request, which starts the task; the task takes one
/// unit of demand before each delivery of the message it read ahead (see ``RPCPullState``) and
/// parks at zero demand (on a continuation, without spinning); demand returned from
/// `receive(_:)` counts. **Ordering**:
/// every value comes from the one pulling task; the completion comes after the body returned,
/// so signals are serial. **Cancellation**: `cancel()` cancels the task (and with it the RPC,
/// on a client) and releases the subscriber at once; nothing is delivered afterwards. The
/// pulling task's own cancellation (a deadline) wakes a parked puller, which stops.
@usableFromInline
final class RPCPullSubscription<Downstream: Subscriber>: Subscription, PullFeed, PullRunner,
  CustomStringConvertible, @unchecked Sendable
where Downstream.Failure == RPCError {
  // Safety: all mutable state is in `state`'s lock; the subscriber is called from the pulling
  // task (values) or the subscription's task after the body returned (completion), always
  // after unlocking; continuations are resumed after unlocking.
  @usableFromInline typealias Output = Downstream.Input
  @usableFromInline typealias Body = @Sendable (any PullFeed<Output>) async throws -> Void

  @usableFromInline let state: StateLock<RPCPullState<Downstream>>
  @usableFromInline let body: Body
  @usableFromInline let errorMapping: @Sendable (any Error) -> RPCError
  @usableFromInline let description: String

  @inlinable
  init(
    description: String, downstream: Downstream,
    errorMapping: @escaping @Sendable (any Error) -> RPCError, body: @escaping Body
  ) {
    self.description = description
    self.body = body
    self.errorMapping = errorMapping
    state = StateLock(RPCPullState(downstream: downstream))
  }

  @inlinable
  func request(_ demand: Subscribers.Demand) {
    if demand == .none { GRPCViolation.zeroDemand(description) }
    switch state.withLock({ $0.requested(demand) }) {
    case .start:
      // Through an existential, so that the task captures no metatype of the subscriber's.
      let runner: any PullRunner = self
      let task = Task { await runner.run() }
      state.withLock { $0.taskStarted(task) }?.cancel()
    case .resume(let parked):
      parked.resume(returning: true)
    case .none:
      break
    }
  }

  @inlinable
  func cancel() {
    let (downstream, task, parked) = state.withLock { $0.cancelled() }
    task?.cancel()
    parked?.resume(returning: false)
    withExtendedLifetime(downstream) {}
  }

  /// The task's body: runs `body`, then completes the subscriber with its outcome (unless it
  /// cancelled meanwhile).
  @inlinable
  func run() async {
    let completion: Subscribers.Completion<RPCError>
    do {
      try await body(self)
      completion = .finished
    } catch {
      completion = .failure(errorMapping(error))
    }
    state.withLock { $0.finishing() }?.receive(completion: completion)
  }

  // MARK: PullFeed

  @inlinable
  func takeDemandNow() -> Bool? {
    switch state.withLock({ $0.nextPull() }) {
    case .pull: true
    case .stop: false
    case .park: nil
    }
  }

  @inlinable
  func takeDemand() async -> Bool {
    if let now = takeDemandNow() { return now }
    let runner: any PullRunner = self
    return await withTaskCancellationHandler {
      await withUnsafeContinuation { continuation in
        if let (continuation, proceed) = state.withLock({ $0.parking(continuation) }) {
          continuation.resume(returning: proceed)
        }
      }
    } onCancel: {
      runner.pullerCancelled()
    }
  }

  /// The pulling task was cancelled: wakes it if it is parked, and keeps it from parking again.
  @inlinable
  func pullerCancelled() {
    state.withLock { $0.pullerCancelled() }?.resume(returning: false)
  }

  @inlinable
  func deliver(_ value: Output) -> Bool {
    guard let downstream = state.withLock({ $0.willDeliver() }) else { return false }
    let more = downstream.receive(value)
    if more > 0 { state.withLock { $0.returned(more) } }
    return true
  }
}
