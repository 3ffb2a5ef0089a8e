public import Foundation
import Synchronization

extension OperationQueue: Scheduler {
  /// Options that affect the operation of the operation queue scheduler (none, as in Combine).
  public struct SchedulerOptions: Sendable {}

  public var minimumTolerance: SchedulerTimeType.Stride { 0.0 }

  public var now: SchedulerTimeType { SchedulerTimeType(Date()) }

  /// Adds `action` to this queue as an operation.
  public func schedule(options: SchedulerOptions?, _ action: @escaping () -> Void) {
    // Safety: the operation runs exactly once, on this queue, as Combine's contract says.
    let action = UncheckedSendable(action)
    addOperation { action.value() }
  }

  /// Adds `action` to this queue as an operation at `date`.
  public func schedule(
    after date: SchedulerTimeType, tolerance: SchedulerTimeType.Stride,
    options: SchedulerOptions?, _ action: @escaping () -> Void
  ) {
    // Kept alive by its own timer until it fires.
    enqueue(after: date, interval: nil, tolerance: tolerance, action)
  }

  /// Adds `action` to this queue at `date` and every `interval` after, until cancelled.
  public func schedule(
    after date: SchedulerTimeType, interval: SchedulerTimeType.Stride,
    tolerance: SchedulerTimeType.Stride, options: SchedulerOptions?,
    _ action: @escaping () -> Void
  ) -> any Cancellable {
    let delayed = enqueue(after: date, interval: interval, tolerance: tolerance, action)
    return AnyCancellable { delayed.cancel() }
  }

  /// A timer on a private dispatch queue that adds an operation to this queue each time it
  /// fires; cancelling stops the timer and skips operations not yet started.
  @discardableResult
  private func enqueue(
    after date: SchedulerTimeType, interval: SchedulerTimeType.Stride?,
    tolerance: SchedulerTimeType.Stride, _ action: @escaping () -> Void
  ) -> DelayedOperation {
    let delayed = DelayedOperation(queue: self, action: action)
    delayed.start(
      delay: Swift.max(0, date.date.timeIntervalSinceNow), interval: interval?.timeInterval,
      tolerance: tolerance.timeInterval)
    return delayed
  }
}

/// Adds an action to an operation queue when a timer fires (once, or repeatedly).
///
/// The timer's handler holds the object, so it lives until it has fired once (one-shot) or
/// until `cancel()` (repeating).
private final class DelayedOperation: @unchecked Sendable {
  // Safety: `action` only runs inside operations on `queue`; `queue` and `timer` are immutable
  // and thread-safe; `cancelled` is atomic.
  private let queue: OperationQueue
  private let action: () -> Void
  private let timer = DispatchSource.makeTimerSource(queue: .global())
  private let cancelled = Atomic<Bool>(false)

  init(queue: OperationQueue, action: @escaping () -> Void) {
    self.queue = queue
    self.action = action
  }

  func start(delay: TimeInterval, interval: TimeInterval?, tolerance: TimeInterval) {
    timer.schedule(
      deadline: .now() + delay,
      repeating: interval.map { .nanoseconds(Int($0 * 1e9)) } ?? .never,
      leeway: .nanoseconds(Int(tolerance * 1e9)))
    timer.setEventHandler { [self] in
      if interval == nil { timer.cancel() }
      queue.addOperation { [self] in
        if !cancelled.load(ordering: .acquiring) { action() }
      }
    }
    timer.resume()
  }

  func cancel() {
    cancelled.store(true, ordering: .releasing)
    timer.cancel()
  }
}
