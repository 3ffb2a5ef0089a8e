import Foundation

/// One long-lived wake-up timer per run loop and mode, and the delayed and repeating actions
/// that wait on it (`RunLoop`'s scheduler, `Timer.publish`): no Foundation `Timer` per action.
///
/// swift-corelibs-foundation keeps ~350 bytes of every one-shot `Timer` added to a run loop
/// (and ~500 of every repeating one that is invalidated) for good, so a timer per action (to
/// wake the loop for `receive(on: RunLoop)`, to fire a `schedule(after:)`, per `Timer.publish`
/// connection) made a running run loop grow with every value. Moving one repeating timer's fire
/// date costs nothing of the kind. The timer runs in its mode; its fire date is the earliest date
/// an action waits for (the distant future when none does), or now to wake the loop; its
/// tolerance is that of the action it fires for when that action is the only one waiting (so a
/// lone `Timer.publish` may still be coalesced), else zero.
///
/// **Wake-up promise**: an action scheduled from another thread runs on the run loop's next
/// pass, also when the loop sleeps (waiting for a far timer or a source): `wake()` moves the
/// timer's fire date to now, which wakes it; the actions `perform` queued run on that pass.
/// **Ordering**: delayed actions by date, then in scheduling order; a repeating action skips
/// the ticks it missed (as a repeating `Timer`). **Cancellation** removes the action and
/// releases it after unlocking (a repeating action cancelled while it runs is not put back).
/// **Lifetime**: the timer stays in its mode for as long as the run loop lives, so that mode is
/// never empty again (`run()` does not return for lack of work; see "Differences from Combine").
///
/// States / Transitions (the lock's state; `armed` is the fire date last set):
/// | event | idle (not firing) | firing (the timer's handler, until its re-arm block ran) |
/// |---|---|---|
/// | `wake()` (another thread) | `armed` past: nothing (a fire is pending); else arm now | remember `wakeRequested` |
/// | `add(at:)` | queue it; earlier than `armed` (or a tolerance armed): arm again | queue it (the re-arm reads the queue) |
/// | `cancel(token)` | remove it | remove it (or mark it, if it is running) |
/// | timer fires | firing; run what is due (by the handler's start), outside the lock; queue the re-arm block | — |
/// | re-arm block | — | idle; arm at now (`wakeRequested`) or at the earliest date |
///
/// The fire date is set outside the timer's handler (in a block `perform` runs in the timer's
/// mode right after it): Core Foundation ignores a fire date set inside the handler unless it is
/// later than the one that fired. It is set under the lock, so two threads cannot arm in the
/// wrong order; Core Foundation calls the handler and the block without holding its own locks,
/// so this cannot invert a lock order.
final class RunLoopWaker: @unchecked Sendable {
  // Safety: the mutable state is in `state`'s lock; actions run outside it, on the run loop's
  // thread (the timer's handler); the timer is thread-safe (Core Foundation locks it).
  struct State {
    var actions = ScheduledActions<Date, TimeInterval>()
    /// The tolerance of the actions that have one, by token.
    var tolerances: [Int: TimeInterval] = [:]
    var armed = Date.distantFuture
    var armedTolerance: TimeInterval = 0
    var firing = false
    var wakeRequested = false
  }

  private let state = Lock(State())
  private let timer: Timer
  private let mode: RunLoop.Mode
  private weak var runLoop: RunLoop?

  private init(runLoop: RunLoop, mode: RunLoop.Mode) {
    self.runLoop = runLoop
    self.mode = mode
    // `interval` only keeps the timer valid after it fires; its next date is always set here.
    let relay = WeakRelay()
    timer = Timer(fire: .distantFuture, interval: 1e9, repeats: true) { _ in relay.fire() }
    relay.waker = self
    runLoop.add(timer, forMode: mode)
  }

  /// Wakes the run loop, so that it runs the blocks `perform` has queued on its next pass.
  func wake() {
    state.withLock { state in
      if state.firing {
        state.wakeRequested = true
        return
      }
      let now = Date()
      guard state.armed > now else { return }  // a fire is due already
      arm(&state, at: now)
    }
  }

  /// Runs `action` on the run loop at `date`, and every `interval` after if given (firing up to
  /// `tolerance` late, when it is the only action waiting); returns the token that cancels it.
  @discardableResult
  func add(
    at date: Date, every interval: TimeInterval? = nil, tolerance: TimeInterval = 0,
    _ action: @escaping () -> Void
  ) -> Int {
    state.withLock { state in
      let token = state.actions.add(at: date, repeatingEvery: interval, action)
      if tolerance > 0 { state.tolerances[token] = tolerance }
      if !state.firing, date < state.armed || state.armedTolerance > 0 {
        arm(&state, at: min(date, state.armed))
      }
      return token
    }
  }

  /// Stops the action `token` names; releases it after unlocking.
  func cancel(_ token: Int) {
    let removed = state.withLock { state in
      state.tolerances[token] = nil
      return state.actions.cancel(token: token)
    }
    withExtendedLifetime(removed) {}
  }

  /// Sets the timer's fire date (and tolerance); under the lock.
  private func arm(_ state: inout State, at date: Date) {
    var tolerance: TimeInterval = 0
    if state.actions.count == 1, let only = state.actions.earliest {
      tolerance = state.tolerances[only.token] ?? 0
    }
    if tolerance != state.armedTolerance {
      timer.tolerance = tolerance
      state.armedTolerance = tolerance
    }
    state.armed = date
    timer.fireDate = date
  }

  /// The timer's handler, on the run loop's thread: runs the actions due by now, then has the
  /// timer re-armed right after it returns.
  fileprivate func fire() {
    let deadline = Date()
    state.withLock { $0.firing = true }
    while let item = state.withLock({ $0.actions.takeNext(dueBy: deadline) }) {
      item.action()
      state.withLock { state in
        if let interval = item.interval {
          state.actions.reschedule(item, at: Self.date(after: item.date, every: interval))
        } else {
          state.tolerances[item.token] = nil
        }
      }
    }
    runLoop?.perform(inModes: [mode]) { [weak self] in self?.rearm() }
  }

  /// Outside the timer's handler: arms the timer for what waits.
  private func rearm() {
    state.withLock { state in
      state.firing = false
      let next = state.wakeRequested ? Date() : state.actions.earliestDate ?? .distantFuture
      state.wakeRequested = false
      arm(&state, at: next)
    }
  }

  /// The first tick after `date` that is still to come: `interval` later, or the first whole
  /// interval after now.
  static func date(after date: Date, every interval: TimeInterval) -> Date {
    let now = Date()
    var next = date.addingTimeInterval(Swift.max(interval, 0))
    if next <= now, interval > 0 {
      let missed = (now.timeIntervalSince(next) / interval).rounded(.down) + 1
      next = next.addingTimeInterval(missed * interval)
    } else if next <= now {
      next = now
    }
    return next
  }

  // MARK: One per run loop and mode

  private struct Key: Hashable {
    let runLoop: ObjectIdentifier
    let mode: String
  }

  private struct Entry {
    weak var runLoop: RunLoop?
    let waker: RunLoopWaker
  }

  private static let registry = Lock<[Key: Entry]>([:])

  /// The waker of `runLoop` in `mode`, made (and its timer added) the first time it is asked
  /// for.
  static func of(_ runLoop: RunLoop, mode: RunLoop.Mode = .default) -> RunLoopWaker {
    let key = Key(runLoop: ObjectIdentifier(runLoop), mode: mode.rawValue)
    if let known = registry.withLock({ $0[key] }), known.runLoop === runLoop {
      return known.waker
    }
    let made = RunLoopWaker(runLoop: runLoop, mode: mode)
    let (waker, discarded) = registry.withLock { entries -> (RunLoopWaker, [RunLoopWaker]) in
      if let known = entries[key], known.runLoop === runLoop { return (known.waker, [made]) }
      // Forget the wakers of run loops that are gone (their threads ended).
      let gone = entries.filter { $0.value.runLoop == nil }
      for key in gone.keys { entries[key] = nil }
      entries[key] = Entry(runLoop: runLoop, waker: made)
      return (made, gone.values.map(\.waker))
    }
    for each in discarded { each.timer.invalidate() }
    return waker
  }
}

/// The timer's handler holds the waker weakly (the waker holds the timer).
private final class WeakRelay: @unchecked Sendable {
  // Safety: `waker` is written once, before the timer can fire (it is added to the run loop
  // after), and only read after.
  weak var waker: RunLoopWaker?

  func fire() { waker?.fire() }
}
