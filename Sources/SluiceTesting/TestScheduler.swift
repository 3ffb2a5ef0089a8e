public import Dispatch
public import Foundation
public import SluiceCore

/// A scheduler whose clock moves only when the test says so.
///
/// Actions scheduled for an instant run when the test advances the clock to (or past) it, in
/// time order; actions at the same instant run in the order they were scheduled (FIFO),
/// including actions scheduled by actions while advancing. Nothing runs on its own and nothing
/// sleeps, so tests of time-based pipelines are fast and deterministic. Thread-safe: actions may
/// be scheduled from any thread; they run on the thread that calls `advance`/`run`.
///
/// ```swift
/// let scheduler = DispatchQueue.test
/// scheduler.schedule(after: scheduler.now.advanced(by: .seconds(1))) { print("tick") }
/// scheduler.advance(by: .milliseconds(999))   // nothing yet
/// scheduler.advance(by: .milliseconds(1))     // prints "tick"
/// ```
public final class TestScheduler<SchedulerTimeType: Strideable, SchedulerOptions>: Scheduler,
  @unchecked Sendable
where SchedulerTimeType.Stride: SchedulerTimeIntervalConvertible {
  // Safety: all mutable state is in `state`'s lock; actions run after unlocking.
  private struct State {
    var now: SchedulerTimeType
    var actions = ScheduledActions<SchedulerTimeType, SchedulerTimeType.Stride>()

    /// The next action due by `deadline`, moving `now` to its instant.
    mutating func takeNext(until deadline: SchedulerTimeType) -> Item? {
      guard let item = actions.takeNext(dueBy: deadline) else { return nil }
      if item.date > now { now = item.date }
      return item
    }
  }

  private typealias Item = ScheduledActions<SchedulerTimeType, SchedulerTimeType.Stride>.Item

  private let state: Lock<State>

  /// Creates a test scheduler whose clock starts at `now`.
  public init(now: SchedulerTimeType) {
    state = Lock(State(now: now))
  }

  /// The scheduler's current virtual time.
  public var now: SchedulerTimeType { state.withLock { $0.now } }

  public var minimumTolerance: SchedulerTimeType.Stride { .zero }

  /// The number of actions waiting for the clock to reach them.
  public var pendingActionCount: Int { state.withLock { $0.actions.count } }

  /// Schedules `action` for the current instant; it runs on the next `advance` or `run`.
  public func schedule(options: SchedulerOptions?, _ action: @escaping () -> Void) {
    _ = state.withLock { $0.actions.add(at: $0.now, action) }
  }

  public func schedule(
    after date: SchedulerTimeType, tolerance: SchedulerTimeType.Stride,
    options: SchedulerOptions?, _ action: @escaping () -> Void
  ) {
    _ = state.withLock { $0.actions.add(at: date, action) }
  }

  public func schedule(
    after date: SchedulerTimeType, interval: SchedulerTimeType.Stride,
    tolerance: SchedulerTimeType.Stride, options: SchedulerOptions?,
    _ action: @escaping () -> Void
  ) -> any Cancellable {
    let token = state.withLock { $0.actions.add(at: date, repeatingEvery: interval, action) }
    return AnyCancellable { [weak self] in
      let removed = self?.state.withLock { $0.actions.cancel(token: token) }
      withExtendedLifetime(removed) {}
    }
  }

  /// Moves the clock forward by `stride`, running every action due by then, in order.
  public func advance(by stride: SchedulerTimeType.Stride = .zero) {
    advance(to: now.advanced(by: stride))
  }

  /// Moves the clock to `instant` (never backwards), running every action due by then.
  public func advance(to instant: SchedulerTimeType) {
    while let item = state.withLock({ $0.takeNext(until: instant) }) {
      perform(item)
    }
    state.withLock { state in
      if state.now < instant { state.now = instant }
    }
  }

  /// Runs `item`'s action, then reschedules it if it repeats and was not cancelled meanwhile.
  private func perform(_ item: Item) {
    item.action()
    guard let interval = item.interval else { return }
    state.withLock { $0.actions.reschedule(item, at: item.date.advanced(by: interval)) }
  }

  /// Runs every scheduled action, moving the clock to each in turn, until none is left.
  ///
  /// A repeating action that is never cancelled would run forever: after `limit` actions this
  /// traps, telling you to cancel it or to use `advance(by:)`.
  public func run(limit: Int = 1_000_000) {
    var count = 0
    while let item = state.withLock({ state -> Item? in
      guard let earliest = state.actions.earliestDate else { return nil }
      return state.takeNext(until: earliest)
    }) {
      count += 1
      if count > limit {
        fatalError(
          "TestScheduler.run(): more than \(limit) actions ran; a repeating action is probably "
            + "still scheduled. Cancel it, or use advance(by:) to run a bounded span of time.")
      }
      perform(item)
    }
  }
}

/// A test scheduler with the time and option types of scheduler `S`, so it can stand in for it.
public typealias TestSchedulerOf<S: Scheduler> = TestScheduler<
  S.SchedulerTimeType, S.SchedulerOptions
>

extension DispatchQueue {
  /// A test scheduler compatible with dispatch queue schedulers, starting at a fixed instant.
  public static var test: TestSchedulerOf<DispatchQueue> {
    TestScheduler(now: SchedulerTimeType(DispatchTime(uptimeNanoseconds: 1)))
  }
}

extension RunLoop {
  /// A test scheduler compatible with run loop schedulers, starting at the reference date.
  public static var test: TestSchedulerOf<RunLoop> {
    TestScheduler(now: SchedulerTimeType(Date(timeIntervalSinceReferenceDate: 0)))
  }
}

extension OperationQueue {
  /// A test scheduler compatible with operation queue schedulers, starting at the reference
  /// date.
  public static var test: TestSchedulerOf<OperationQueue> {
    TestScheduler(now: SchedulerTimeType(Date(timeIntervalSinceReferenceDate: 0)))
  }
}
