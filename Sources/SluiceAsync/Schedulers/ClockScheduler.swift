/// A scheduler driven by a Swift `Clock` (`ContinuousClock`, `SuspendingClock`, or a test clock),
/// whose actions run one at a time, in order, optionally isolated to an actor.
///
/// **Ordering**: actions run in time order; actions due at the same instant run in the order
/// they were scheduled, from whatever threads they were scheduled; never two at once.
/// **Where actions run**: on `actor` if given (pass `MainActor.shared` for the main actor), else
/// on the global concurrent executor, one at a time. **Timing**: the scheduler sleeps on its
/// clock until the earliest action is due, and wakes early when an earlier one is scheduled; with
/// a test clock, time moves when the test advances it. **Cancellation**: the value returned by a
/// repeating schedule stops it, even while an occurrence is running. Idle schedulers hold no
/// task.
///
/// ```swift
/// let scheduler = ClockScheduler(clock: ContinuousClock())
/// scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(10))) { print("later") }
/// scheduler.schedule { print("first") }   // prints "first", then "later"
///
/// let onMain = ActorScheduler(MainActor.shared)   // actions run on the main actor, in order
/// ```
public final class ClockScheduler<C: Clock>: Scheduler, @unchecked Sendable
where C.Duration == Duration {
  // Safety: all mutable state is in `state`'s lock; actions run after unlocking, on the one
  // worker task (so never concurrently), which is what Combine's non-Sendable action closures
  // require.
  public typealias SchedulerOptions = Never

  /// An instant of the scheduler's clock.
  public struct SchedulerTimeType: Strideable, Hashable, Sendable {
    /// The clock's instant.
    public let instant: C.Instant

    /// Wraps an instant of the clock.
    public init(_ instant: C.Instant) {
      self.instant = instant
    }

    public func distance(to other: SchedulerTimeType) -> SchedulerDuration {
      SchedulerDuration(instant.duration(to: other.instant))
    }

    public func advanced(by n: SchedulerDuration) -> SchedulerTimeType {
      SchedulerTimeType(instant.advanced(by: n.duration))
    }
  }

  private enum Worker {
    case idle
    case running
    case sleeping(until: C.Instant, Task<Void, Never>)
  }

  private struct State {
    var actions = ScheduledActions<SchedulerTimeType, SchedulerDuration>()
    var worker = Worker.idle
  }

  /// The clock that drives the scheduler.
  public let clock: C
  /// The actor actions run on, if any.
  public let actor: (any Actor)?
  private let state = Lock(State())

  /// Creates a scheduler on `clock` whose actions run on `actor` (or, if `nil`, on the global
  /// concurrent executor, one at a time).
  public init(clock: C, actor: (any Actor)? = nil) {
    self.clock = clock
    self.actor = actor
  }

  public var now: SchedulerTimeType { SchedulerTimeType(clock.now) }

  public var minimumTolerance: SchedulerDuration { SchedulerDuration(clock.minimumResolution) }

  public func schedule(options: Never?, _ action: @escaping () -> Void) {
    enqueue(at: now, interval: nil, action)
  }

  public func schedule(
    after date: SchedulerTimeType, tolerance: SchedulerDuration, options: Never?,
    _ action: @escaping () -> Void
  ) {
    enqueue(at: date, interval: nil, action)
  }

  public func schedule(
    after date: SchedulerTimeType, interval: SchedulerDuration, tolerance: SchedulerDuration,
    options: Never?, _ action: @escaping () -> Void
  ) -> any Cancellable {
    let token = enqueue(at: date, interval: interval, action)
    return AnyCancellable { [weak self] in
      let removed = self?.state.withLock { $0.actions.cancel(token: token) }
      withExtendedLifetime(removed) {}
    }
  }

  @discardableResult
  private func enqueue(
    at date: SchedulerTimeType, interval: SchedulerDuration?, _ action: @escaping () -> Void
  ) -> Int {
    let (token, startWorker, wakeSleeper) = state.withLock {
      state -> (Int, Bool, Task<Void, Never>?) in
      let token = state.actions.add(at: date, repeatingEvery: interval, action)
      switch state.worker {
      case .idle:
        state.worker = .running
        return (token, true, nil)
      case .sleeping(let deadline, let sleeper) where date.instant < deadline:
        state.worker = .running
        return (token, false, sleeper)
      case .running, .sleeping:
        return (token, false, nil)
      }
    }
    wakeSleeper?.cancel()
    if startWorker {
      let worker: any SchedulerWorker = self  // erases `C` for the task
      Task { [actor] in await worker.work(on: actor) }
    }
    return token
  }

  private enum Step {
    case run(ScheduledActions<SchedulerTimeType, SchedulerDuration>.Item)
    case sleep(until: C.Instant)
    case stop
  }

  /// The worker: runs due actions in order, sleeps until the next is due, stops when none is
  /// left. Exactly one runs at a time (`Worker.idle` → `.running` starts it).
  func work(on actor: isolated (any Actor)?) async {
    while true {
      let now = clock.now
      let step = state.withLock { state -> Step in
        if let item = state.actions.takeNext(dueBy: SchedulerTimeType(now)) { return .run(item) }
        guard let earliest = state.actions.earliestDate else {
          state.worker = .idle
          return .stop
        }
        return .sleep(until: earliest.instant)
      }
      switch step {
      case .run(let item):
        item.action()
        if let interval = item.interval {
          state.withLock { $0.actions.reschedule(item, at: item.date.advanced(by: interval)) }
        }
      case .sleep(let deadline):
        let sleeper = Task { [clock] in _ = try? await clock.sleep(until: deadline, tolerance: nil)
        }
        let keepSleeping = state.withLock { state -> Bool in
          // Something earlier may have been scheduled while the sleeper was being made.
          if let earliest = state.actions.earliestDate, earliest.instant < deadline {
            return false
          }
          state.worker = .sleeping(until: deadline, sleeper)
          return true
        }
        if keepSleeping { await sleeper.value } else { sleeper.cancel() }
        state.withLock { $0.worker = .running }
      case .stop:
        return
      }
    }
  }
}

/// The worker of a ``ClockScheduler``, seen without the clock's type.
protocol SchedulerWorker: Sendable {
  func work(on actor: isolated (any Actor)?) async
}

extension ClockScheduler: SchedulerWorker {}

/// A ``ClockScheduler`` on the continuous clock whose actions run on an actor, in the order
/// they were scheduled.
public typealias ActorScheduler = ClockScheduler<ContinuousClock>

extension ClockScheduler where C == ContinuousClock {
  /// A scheduler whose actions run on `actor` (for example `MainActor.shared`), one at a time,
  /// in the order they were scheduled, timed by the continuous clock.
  public convenience init(_ actor: any Actor) {
    self.init(clock: ContinuousClock(), actor: actor)
  }
}

/// A span of time of a `Duration`-based clock, as a scheduler stride.
public struct SchedulerDuration: SchedulerTimeIntervalConvertible, Comparable, SignedNumeric,
  Hashable, Sendable
{
  /// The span of time.
  public var duration: Duration

  /// Wraps `duration`.
  public init(_ duration: Duration) {
    self.duration = duration
  }

  /// A span of `value` seconds.
  public init(integerLiteral value: Int) {
    duration = .seconds(value)
  }

  public init?<T: BinaryInteger>(exactly source: T) {
    guard let seconds = Int(exactly: source) else { return nil }
    duration = .seconds(seconds)
  }

  /// The absolute span.
  public var magnitude: SchedulerDuration {
    duration < .zero ? SchedulerDuration(.zero - duration) : self
  }

  public static func < (lhs: Self, rhs: Self) -> Bool { lhs.duration < rhs.duration }
  public static func + (lhs: Self, rhs: Self) -> Self { Self(lhs.duration + rhs.duration) }
  public static func - (lhs: Self, rhs: Self) -> Self { Self(lhs.duration - rhs.duration) }
  public static func += (lhs: inout Self, rhs: Self) { lhs = lhs + rhs }
  public static func -= (lhs: inout Self, rhs: Self) { lhs = lhs - rhs }

  /// Scales by the other span counted in seconds (a stride times a stride has no unit).
  public static func * (lhs: Self, rhs: Self) -> Self {
    let (seconds, attoseconds) = rhs.duration.components
    return Self(lhs.duration * (Double(seconds) + Double(attoseconds) / 1e18))
  }

  public static func *= (lhs: inout Self, rhs: Self) { lhs = lhs * rhs }

  public static func seconds(_ s: Int) -> Self { Self(.seconds(s)) }
  public static func seconds(_ s: Double) -> Self { Self(.seconds(s)) }
  public static func milliseconds(_ ms: Int) -> Self { Self(.milliseconds(ms)) }
  public static func microseconds(_ us: Int) -> Self { Self(.microseconds(us)) }
  public static func nanoseconds(_ ns: Int) -> Self { Self(.nanoseconds(ns)) }
}
