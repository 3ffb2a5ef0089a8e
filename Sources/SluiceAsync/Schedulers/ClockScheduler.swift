/// A scheduler driven by a Swift `Clock` (`ContinuousClock`, `SuspendingClock`, or a test clock),
/// whose actions run one at a time, in order, optionally isolated to an actor.
///
/// **Ordering**: actions run in time order; actions due at the same instant run in the order
/// they were scheduled, from whatever threads they were scheduled; never two at once. (The
/// worker takes up to 64 due actions at a time: an action scheduled while they run, for an
/// instant already past, runs after them.)
/// **Where actions run**: on `actor` if given (pass `MainActor.shared` for the main actor), else
/// on the global concurrent executor, one at a time. **Timing**: the scheduler sleeps on its
/// clock until the earliest action is due, and wakes early when an earlier one is scheduled; with
/// a test clock, time moves when the test advances it. **Cancellation**: the value returned by a
/// repeating schedule stops it, even while an occurrence is running. **Cost**: one worker task
/// per scheduler, started by the first action; while nothing is scheduled it stays suspended
/// (no thread), so bursts of actions start no new task; it ends once the scheduler is released
/// and every action already scheduled has run.
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

  /// The clock that drives the scheduler.
  public let clock: C
  /// The actor actions run on, if any.
  public let actor: (any Actor)?
  private let core: ClockWorker
  /// The instant the worker measures time from (it keeps instants as durations since this one,
  /// so its queue is not generic over the clock).
  private let origin: C.Instant

  /// Creates a scheduler on `clock` whose actions run on `actor` (or, if `nil`, on the global
  /// concurrent executor, one at a time).
  public init(clock: C, actor: (any Actor)? = nil) {
    self.clock = clock
    self.actor = actor
    let origin = clock.now
    self.origin = origin
    core = ClockWorker(
      actor: actor, now: { origin.duration(to: clock.now) },
      sleep: { try await clock.sleep(until: origin.advanced(by: $0), tolerance: nil) })
  }

  deinit { core.stop() }

  public var now: SchedulerTimeType { SchedulerTimeType(clock.now) }

  public var minimumTolerance: SchedulerDuration { SchedulerDuration(clock.minimumResolution) }

  public func schedule(options: Never?, _ action: @escaping () -> Void) {
    core.enqueueSoon(action)
  }

  public func schedule(
    after date: SchedulerTimeType, tolerance: SchedulerDuration, options: Never?,
    _ action: @escaping () -> Void
  ) {
    core.enqueue(at: origin.duration(to: date.instant), interval: nil, action)
  }

  public func schedule(
    after date: SchedulerTimeType, interval: SchedulerDuration, tolerance: SchedulerDuration,
    options: Never?, _ action: @escaping () -> Void
  ) -> any Cancellable {
    let token = core.enqueue(
      at: origin.duration(to: date.instant), interval: interval.duration, action)
    return AnyCancellable { [weak core] in core?.cancel(token: token) }
  }
}

/// The state and the one worker task of a ``ClockScheduler``. The task holds this object, not
/// the scheduler, so the scheduler's `deinit` can stop a parked worker.
///
/// States of the worker: `none` (no task) → `running` ⇄ `sleeping(until:)` (a sleeper task
/// wakes it when the earliest action is due, or is cancelled for an earlier one) ⇄ `parked`
/// (nothing scheduled: suspended on a continuation, no thread). Once the scheduler is released
/// (`released`), the worker still runs every action already scheduled, then returns instead of
/// parking.
///
/// | event | none | running | sleeping | parked |
/// |---|---|---|---|---|
/// | `enqueue` / `enqueueSoon` | start the task: running | queue | queue; earlier than the deadline (soon: always): cancel the sleeper, running | queue; resume: running |
/// | queue empty (worker) | — | parked; released: none, the task returns | — | — |
/// | `stop` (scheduler released) | released | released | released | released, none; resume (the task returns) |
final class ClockWorker: @unchecked Sendable {
  // Safety: all mutable state is in `state`'s lock; actions run after unlocking, on the one
  // worker task (so never concurrently), which is what Combine's non-Sendable action closures
  // require.
  /// A point in time: the duration since the scheduler's origin instant.
  typealias Time = Duration

  private enum Worker {
    case none
    case running
    case sleeping(until: Time, Task<Void, Never>)
    case parked(UnsafeContinuation<Void, Never>)
  }

  /// An action scheduled to run as soon as possible, stamped with the time it was scheduled
  /// and a sequence number from the timed actions' counter (so that the two kinds run in the
  /// order of their dates, and at equal dates in the order they were scheduled).
  struct Soon {
    let date: Time
    let sequence: Int
    let action: () -> Void

    func precedes(_ item: ScheduledActions<Time, Duration>.Item) -> Bool {
      date < item.date || (date == item.date && sequence < item.sequence)
    }
  }

  /// What an enqueue must do, after unlocking, to get the worker going.
  private enum Wake {
    case nothing
    case start
    case cancelSleeper(Task<Void, Never>)
    case resume(UnsafeContinuation<Void, Never>)
  }

  private struct State {
    /// Actions scheduled for an instant (and repeating ones).
    var actions = ScheduledActions<Time, Duration>()
    /// Actions scheduled as soon as possible, in the order they were scheduled: the worker takes
    /// them all at once by swapping arrays, so a sender and the worker hold the lock only for
    /// an append or a swap.
    var soon: [Soon] = []
    var worker = Worker.none
    /// The scheduler was released: no more actions can be scheduled except by those queued.
    var released = false

    /// An action was queued for `date`: how to get the worker to it.
    mutating func wake(for date: Time) -> Wake {
      switch worker {
      case .none:
        worker = .running
        return .start
      case .parked(let continuation):
        worker = .running
        return .resume(continuation)
      case .sleeping(let deadline, let sleeper) where date < deadline:
        worker = .running
        return .cancelSleeper(sleeper)
      case .running, .sleeping:
        return .nothing
      }
    }

    /// The worker's sleep to cut short, if it sleeps for an action no longer scheduled (the
    /// earliest left is later, or nothing is left): it then sleeps until the earliest, parks,
    /// or ends, instead of holding on until a cancelled heartbeat's date.
    mutating func sleeperToWake() -> Task<Void, Never>? {
      guard case .sleeping(let until, let sleeper) = worker else { return nil }
      if let earliest = actions.earliestDate, earliest <= until { return nil }
      worker = .running
      return sleeper
    }
  }

  private let actor: (any Actor)?
  /// The clock's current time.
  private let now: @Sendable () -> Time
  /// Sleeps on the clock until the time given (throws when cancelled).
  private let sleep: @Sendable (Time) async throws -> Void
  private let state = Lock(State())

  init(
    actor: (any Actor)?, now: @escaping @Sendable () -> Time,
    sleep: @escaping @Sendable (Time) async throws -> Void
  ) {
    self.actor = actor
    self.now = now
    self.sleep = sleep
  }

  @discardableResult
  func enqueue(
    at date: Time, interval: Duration?, _ action: @escaping () -> Void
  ) -> Int {
    let (token, wake) = state.withLock { state -> (Int, Wake) in
      let token = state.actions.add(at: date, repeatingEvery: interval, action)
      return (token, state.wake(for: date))
    }
    perform(wake)
    return token
  }

  /// Schedules `action` as soon as possible (stamped with the current time, so that it runs
  /// after actions already due).
  func enqueueSoon(_ action: @escaping () -> Void) {
    let date = now()
    let wake = state.withLock { state -> Wake in
      let sequence = state.actions.takeSequence()
      state.soon.append(Soon(date: date, sequence: sequence, action: action))
      return state.wake(for: date)
    }
    perform(wake)
  }

  private func perform(_ wake: Wake) {
    switch wake {
    case .nothing: break
    case .start: Task { [actor] in await self.work(on: actor) }
    case .cancelSleeper(let sleeper): sleeper.cancel()
    case .resume(let continuation): continuation.resume()
    }
  }

  func cancel(token: Int) {
    let (removed, sleeper) = state.withLock { state in
      (state.actions.cancel(token: token), state.sleeperToWake())
    }
    sleeper?.cancel()
    withExtendedLifetime(removed) {}
  }

  /// The scheduler was released: the worker runs what is already scheduled, then ends
  /// instead of parking (a worker asleep with nothing left to run wakes to end).
  func stop() {
    let (parked, sleeper) = state.withLock {
      state -> (UnsafeContinuation<Void, Never>?, Task<Void, Never>?) in
      state.released = true
      guard case .parked(let continuation) = state.worker else {
        return (nil, state.sleeperToWake())
      }
      state.worker = .none
      return (continuation, nil)
    }
    parked?.resume()
    sleeper?.cancel()
  }

  private enum Step {
    case run
    case sleep(until: Time)
    case park
    case stop
  }

  /// The worker: runs due actions in order, sleeps until the next is due, parks when none is
  /// left (returns instead once the scheduler is released). Exactly one runs at a time.
  func work(on actor: isolated (any Actor)?) async {
    // The due timed actions taken under one lock (up to 64; a repeating one ends the batch, so
    // that a cancel made while the ones before it run still stops it), and every action
    // scheduled as soon as possible, taken by swapping arrays: a burst costs the worker one lock
    // round trip per batch, not per action, and a sender never waits for the worker to copy a
    // batch. Both arrays are reused between batches.
    var batch: [ScheduledActions<Time, Duration>.Item] = []
    batch.reserveCapacity(64)
    var soon: [Soon] = []
    var nextSoon = 0
    while true {
      let now = self.now()
      if nextSoon > 0 {
        // Left from a batch cut short: drop the ones that ran, so that their closures are
        // released now, and before locking (a closure's captures may schedule on this
        // scheduler, or release it, from their `deinit`).
        soon.removeFirst(nextSoon)
        nextSoon = 0
      }
      let step = state.withLock { state -> Step in
        if soon.isEmpty {
          swap(&soon, &state.soon)  // `soon` was emptied after the round that ran it
        } else {
          // Left from a batch cut short: the new ones follow them (rare; copied).
          soon.append(contentsOf: state.soon)
          state.soon.removeAll(keepingCapacity: true)
        }
        while batch.count < 64, let item = state.actions.takeNext(dueBy: now) {
          batch.append(item)
          if item.interval != nil { break }
        }
        if !batch.isEmpty || nextSoon < soon.count { return .run }
        guard let earliest = state.actions.earliestDate else {
          guard state.released else { return .park }
          state.worker = .none
          return .stop
        }
        return .sleep(until: earliest)
      }
      switch step {
      case .run:
        // Timed and soon actions merged in time order. If the timed batch was cut short (more
        // timed actions may be due), soon actions later than its last one wait for the next
        // round, after those.
        let cutShort = batch.count == 64 || batch.last?.interval != nil
        let lastTimed = cutShort ? batch.last : nil
        var nextTimed = 0
        while true {
          if nextTimed < batch.count,
            nextSoon == soon.count || !soon[nextSoon].precedes(batch[nextTimed])
          {
            let item = batch[nextTimed]
            nextTimed += 1
            item.action()
            if let interval = item.interval {
              state.withLock { $0.actions.reschedule(item, at: item.date + interval) }
            }
          } else if nextSoon < soon.count, lastTimed.map({ soon[nextSoon].precedes($0) }) ?? true {
            let action = soon[nextSoon].action
            nextSoon += 1
            action()
          } else {
            break
          }
        }
        batch.removeAll(keepingCapacity: true)
        // Release the closures that ran (they may hold subscriptions) before parking.
        if nextSoon == soon.count {
          soon.removeAll(keepingCapacity: true)
          nextSoon = 0
        }
      case .park:
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
          let parked = state.withLock { state -> Bool in
            // Something may have been scheduled (or the scheduler released) since the check.
            guard !state.released, state.actions.count == 0, state.soon.isEmpty else {
              return false
            }
            state.worker = .parked(continuation)
            return true
          }
          if !parked { continuation.resume() }
        }
      case .sleep(let deadline):
        let sleeper = Task { [sleep] in _ = try? await sleep(deadline) }
        let keepSleeping = state.withLock { state -> Bool in
          // Something earlier may have been scheduled while the sleeper was being made, or
          // the action it is for cancelled (then it sleeps until the next, parks, or ends).
          if !state.soon.isEmpty { return false }
          guard state.actions.earliestDate == deadline else { return false }
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
