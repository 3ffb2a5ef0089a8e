import Dispatch
import SluiceCore
import SluiceTesting
import Synchronization

/// A virtual-time test scheduler (`DispatchQueue.test`) that records how an operator uses it:
/// reads of `now`, the timers it schedules, whether each immediate action came with options,
/// and whether a repeating (timer) action is running — what a test scheduler that logs its
/// calls, a common testing pattern, would see.
final class ObservedScheduler: Scheduler, @unchecked Sendable {
  // Safety: the counters are atomic, the options log is in a `Lock`, and `base` is
  // thread-safe.
  typealias SchedulerTimeType = DispatchQueue.SchedulerTimeType
  typealias SchedulerOptions = DispatchQueue.SchedulerOptions

  let base: TestSchedulerOf<DispatchQueue>
  let nowReads = Atomic<Int>(0)
  /// `schedule(after:…)` calls, one-shot and repeating.
  let timersScheduled = Atomic<Int>(0)
  /// For each `schedule(options:_:)`: whether options were passed.
  let immediateOptions = Lock<[Bool]>([])
  /// A repeating action is running now.
  let inTimer = Atomic<Bool>(false)

  init(_ base: TestSchedulerOf<DispatchQueue> = DispatchQueue.test) { self.base = base }

  var reads: Int { nowReads.load(ordering: .relaxed) }
  var timers: Int { timersScheduled.load(ordering: .relaxed) }

  var now: SchedulerTimeType {
    nowReads.add(1, ordering: .relaxed)
    return base.now
  }
  var minimumTolerance: SchedulerTimeType.Stride { base.minimumTolerance }

  func schedule(options: SchedulerOptions?, _ action: @escaping () -> Void) {
    immediateOptions.withLock { $0.append(options != nil) }
    base.schedule(options: options, action)
  }

  func schedule(
    after date: SchedulerTimeType, tolerance: SchedulerTimeType.Stride,
    options: SchedulerOptions?, _ action: @escaping () -> Void
  ) {
    timersScheduled.add(1, ordering: .relaxed)
    base.schedule(after: date, tolerance: tolerance, options: options, action)
  }

  func schedule(
    after date: SchedulerTimeType, interval: SchedulerTimeType.Stride,
    tolerance: SchedulerTimeType.Stride, options: SchedulerOptions?,
    _ action: @escaping () -> Void
  ) -> any Cancellable {
    timersScheduled.add(1, ordering: .relaxed)
    return base.schedule(
      after: date, interval: interval, tolerance: tolerance, options: options
    ) { [self] in
      inTimer.store(true, ordering: .relaxed)
      action()
      inTimer.store(false, ordering: .relaxed)
    }
  }
}
