public import Foundation
import Synchronization

extension OperationQueue: Scheduler {
  /// Options that affect the operation of the operation queue scheduler (none, as in Combine).
  public struct SchedulerOptions: Sendable {}

  public var minimumTolerance: SchedulerTimeType.Stride { 0.0 }

  public var now: SchedulerTimeType { SchedulerTimeType(Date()) }

  /// Adds `action` to this queue as a `BlockOperation`, as Combine does.
  public func schedule(options: SchedulerOptions?, _ action: @escaping () -> Void) {
    // Safety: the operation runs on this queue, as Combine's contract says.
    let action = UncheckedSendable(action)
    addOperation(BlockOperation { action.value() })
  }

  /// Adds an operation that runs `action` to this queue at once; it becomes ready at `date`.
  ///
  /// As in Combine, the operation is on the queue from now on: `operationCount` counts it,
  /// `waitUntilAllOperationsAreFinished()` waits for it and `cancelAllOperations()` cancels it.
  public func schedule(
    after date: SchedulerTimeType, tolerance: SchedulerTimeType.Stride,
    options: SchedulerOptions?, _ action: @escaping () -> Void
  ) {
    addOperation(
      DelayedOperation(action: action, due: date.date, tolerance: tolerance.timeInterval))
  }

  /// Runs `action` on this queue at `date` and every `interval` after, until cancelled.
  ///
  /// As in Combine, one operation is on the queue at a time: added at once, ready at its date;
  /// when it runs, it adds the next one, due `interval` after its own date (a date already past,
  /// when the queue fell behind, moves on by whole intervals: missed ticks are skipped, as a
  /// repeating timer's). Cancelling cancels the operation waiting on the queue.
  public func schedule(
    after date: SchedulerTimeType, interval: SchedulerTimeType.Stride,
    tolerance: SchedulerTimeType.Stride, options: SchedulerOptions?,
    _ action: @escaping () -> Void
  ) -> any Cancellable {
    let repetition = Repetition(
      queue: self, action: action, interval: interval.timeInterval,
      tolerance: tolerance.timeInterval)
    repetition.add(due: date.date)
    return AnyCancellable { repetition.cancel() }
  }
}

/// An operation that is on its queue from the start and becomes ready at a date (a dispatch
/// timer flips its readiness, announced the way `OperationQueue` observes it); it runs its action
/// once, and never after it was cancelled. Cancelling makes it ready at once, so the queue
/// removes it without waiting for the date.
final class DelayedOperation: Operation, Cancellable, @unchecked Sendable {
  // Safety: the mutable state is in `state`'s lock; the action runs (outside the lock) only in
  // `main()`, which the queue calls once.
  private struct State {
    var action: (() -> Void)?
    var due = false
    var timer: (any DispatchSourceTimer)?
  }

  private let state: Lock<State>
  /// Called after the action, on the queue (a repetition adds its next operation).
  private let after: (() -> Void)?

  init(
    action: @escaping () -> Void, due date: Date, tolerance: TimeInterval,
    after: (() -> Void)? = nil
  ) {
    state = Lock(State(action: action))
    self.after = after
    super.init()
    let timer = DispatchSource.makeTimerSource(queue: .global())
    timer.schedule(
      deadline: .now() + Swift.max(0, date.timeIntervalSinceNow),
      leeway: .nanoseconds(Int(Swift.max(0, tolerance) * 1e9)))
    timer.setEventHandler { [weak self] in self?.becomeDue() }
    state.withLock { $0.timer = timer }
    timer.resume()
  }

  override var isReady: Bool {
    guard super.isReady else { return false }
    return isCancelled || state.withLock { $0.due }
  }

  override func main() {
    guard !isCancelled, let action = state.withLock({ $0.action.take() }) else { return }
    action()
    after?()
  }

  override func cancel() {
    let released = state.withLock { state -> ((() -> Void)?, (any DispatchSourceTimer)?) in
      (state.action.take(), state.timer.take())
    }
    released.1?.cancel()
    willChangeReadiness()
    super.cancel()
    didChangeReadiness()
    withExtendedLifetime(released.0) {}
  }

  /// The date has come: ready.
  private func becomeDue() {
    let timer = state.withLock { $0.timer.take() }
    guard let timer else { return }  // cancelled meanwhile
    timer.cancel()
    willChangeReadiness()
    state.withLock { $0.due = true }
    didChangeReadiness()
  }

  // The queue watches `isReady` through key-value notifications. (swift-corelibs-foundation
  // reads smart key paths here; Darwin's Foundation the string key.)
  private func willChangeReadiness() {
    #if canImport(Darwin)
      willChangeValue(forKey: "isReady")
    #else
      willChangeValue(for: \.isReady)
    #endif
  }

  private func didChangeReadiness() {
    #if canImport(Darwin)
      didChangeValue(forKey: "isReady")
    #else
      didChangeValue(for: \.isReady)
    #endif
  }
}

/// A repeating action on an operation queue: one ``DelayedOperation`` at a time, each adding the
/// next when it runs; `cancel()` cancels the one waiting and adds no more.
private final class Repetition: @unchecked Sendable {
  // Safety: the mutable state is in `state`'s lock; the queue is thread-safe; `action` runs
  // only inside the operations, one at a time (each is added after the previous one ran).
  private struct State {
    var current: DelayedOperation?
    var cancelled = false
  }

  private let queue: OperationQueue
  private let action: () -> Void
  private let interval: TimeInterval
  private let tolerance: TimeInterval
  private let state = Lock(State())

  init(
    queue: OperationQueue, action: @escaping () -> Void, interval: TimeInterval,
    tolerance: TimeInterval
  ) {
    self.queue = queue
    self.action = action
    self.interval = interval
    self.tolerance = tolerance
  }

  /// Adds the operation due at `due`, unless cancelled.
  func add(due: Date) {
    let operation = DelayedOperation(
      action: action, due: due, tolerance: tolerance,
      after: { [weak self] in
        guard let self else { return }
        add(due: next(after: due))
      })
    let added = state.withLock { state -> Bool in
      guard !state.cancelled else { return false }
      state.current = operation
      return true
    }
    if added { queue.addOperation(operation) } else { operation.cancel() }
  }

  /// The next date after `due`: `interval` later, or the first whole interval not yet past.
  private func next(after due: Date) -> Date {
    guard interval > 0 else { return Date() }
    let now = Date()
    var next = due.addingTimeInterval(interval)
    if next < now {
      let missed = (now.timeIntervalSince(next) / interval).rounded(.up)
      next = next.addingTimeInterval(missed * interval)
    }
    return next
  }

  func cancel() {
    let current = state.withLock { state -> DelayedOperation? in
      state.cancelled = true
      return state.current.take()
    }
    current?.cancel()
  }
}
