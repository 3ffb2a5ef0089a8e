public import Foundation

extension RunLoop: Scheduler {
  /// Options that affect the operation of the run loop scheduler (none, as in Combine).
  public struct SchedulerOptions: Sendable {}

  public var minimumTolerance: SchedulerTimeType.Stride { 0.0 }

  public var now: SchedulerTimeType { SchedulerTimeType(Date()) }

  /// Runs `action` on this run loop's thread the next time the run loop runs, after the
  /// actions scheduled before it. Scheduled from another thread, it wakes the run loop if it
  /// sleeps (as Combine's does): `perform` only queues the block, so on Linux a run loop
  /// waiting for its next timer or source would otherwise leave it there until then.
  public func schedule(options: SchedulerOptions?, _ action: @escaping () -> Void) {
    // Safety: the block runs exactly once, on this run loop's thread.
    let action = UncheckedSendable(action)
    perform { action.value() }
    guard RunLoop.current !== self else { return }  // this thread runs it: awake
    // Waking the loop takes a source it watches: a timer due now (it runs the queued blocks,
    // this one included, on the same pass). The run loop's own wake-up call is not public here.
    add(Timer(fire: Date(), interval: 0, repeats: false) { _ in }, forMode: .default)
  }

  /// Runs `action` on this run loop's thread at `date` (default mode).
  public func schedule(
    after date: SchedulerTimeType, tolerance: SchedulerTimeType.Stride,
    options: SchedulerOptions?, _ action: @escaping () -> Void
  ) {
    let timer = makeTimer(at: date, interval: 0, tolerance: tolerance, repeats: false, action)
    add(timer, forMode: .default)
  }

  /// Runs `action` on this run loop's thread at `date` and every `interval` after, until
  /// cancelled (default mode).
  public func schedule(
    after date: SchedulerTimeType, interval: SchedulerTimeType.Stride,
    tolerance: SchedulerTimeType.Stride, options: SchedulerOptions?,
    _ action: @escaping () -> Void
  ) -> any Cancellable {
    let timer = makeTimer(
      at: date, interval: interval.timeInterval, tolerance: tolerance, repeats: true, action)
    add(timer, forMode: .default)
    return AnyCancellable { timer.invalidate() }
  }

  private func makeTimer(
    at date: SchedulerTimeType, interval: TimeInterval, tolerance: SchedulerTimeType.Stride,
    repeats: Bool, _ action: @escaping () -> Void
  ) -> Timer {
    // Safety: a timer's block runs on the thread of the run loop it was added to, serially.
    let action = UncheckedSendable(action)
    let timer = Timer(fire: date.date, interval: interval, repeats: repeats) { _ in
      action.value()
    }
    timer.tolerance = tolerance.timeInterval
    return timer
  }
}
