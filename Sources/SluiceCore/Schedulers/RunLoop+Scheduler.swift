public import Foundation

extension RunLoop: Scheduler {
  /// Options that affect the operation of the run loop scheduler (none, as in Combine).
  public struct SchedulerOptions: Sendable {}

  public var minimumTolerance: SchedulerTimeType.Stride { 0.0 }

  public var now: SchedulerTimeType { SchedulerTimeType(Date()) }

  /// Runs `action` on this run loop's thread the next time the run loop runs, after the
  /// actions scheduled before it. Scheduled from another thread, it wakes the run loop if it
  /// sleeps (as Combine's does): `perform` only queues the block, so a run loop waiting for its
  /// next timer or source would otherwise leave it there until then. The wake-up moves the fire
  /// date of the run loop's one wake-up timer (its `RunLoopWaker`): no `Timer` per action.
  public func schedule(options: SchedulerOptions?, _ action: @escaping () -> Void) {
    // Safety: the block runs exactly once, on this run loop's thread.
    let action = UncheckedSendable(action)
    perform { action.value() }
    guard RunLoop.current !== self else { return }  // this thread runs it: awake
    RunLoopWaker.of(self).wake()
  }

  /// Runs `action` on this run loop's thread at `date` (default mode). The run loop's one
  /// wake-up timer fires for it (its `RunLoopWaker`), up to `tolerance` late when it is the only
  /// action waiting.
  public func schedule(
    after date: SchedulerTimeType, tolerance: SchedulerTimeType.Stride,
    options: SchedulerOptions?, _ action: @escaping () -> Void
  ) {
    RunLoopWaker.of(self).add(at: date.date, tolerance: tolerance.timeInterval, action)
  }

  /// Runs `action` on this run loop's thread at `date` and every `interval` after, until
  /// cancelled (default mode); ticks the run loop missed are skipped, as a repeating `Timer`'s.
  public func schedule(
    after date: SchedulerTimeType, interval: SchedulerTimeType.Stride,
    tolerance: SchedulerTimeType.Stride, options: SchedulerOptions?,
    _ action: @escaping () -> Void
  ) -> any Cancellable {
    let waker = RunLoopWaker.of(self)
    let token = waker.add(
      at: date.date, every: interval.timeInterval, tolerance: tolerance.timeInterval, action)
    return AnyCancellable { waker.cancel(token) }
  }
}

extension RunLoop: RepeatedActionScheduling {
  /// Finds the run loop's waker once: each call queues `action` and, from another thread, wakes
  /// the run loop, as `schedule(options:_:)` does.
  @usableFromInline
  package func prepareRepeatedAction(_ action: @escaping () -> Void) -> () -> Void {
    // Safety: each call runs the action once, on this run loop's thread, as `schedule` does; the
    // owner (receive(on:)) makes the runs perform its signals one at a time.
    let action = UncheckedSendable(action)
    let block: @Sendable () -> Void = { action.value() }
    let waker = RunLoopWaker.of(self)
    return {
      self.perform(block)
      if RunLoop.current !== self { waker.wake() }
    }
  }
}
