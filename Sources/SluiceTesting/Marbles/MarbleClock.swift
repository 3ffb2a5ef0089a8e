import SluiceCore

/// A ``TestScheduler`` seen in ticks: tick 0 is the scheduler's time when the clock was made,
/// tick `k` is `k` strides of `tick` later.
struct MarbleClock {
  /// The tick the scheduler's clock is in (an instant between two ticks counts as the earlier).
  let currentTick: () -> Int
  /// Schedules an action at a tick.
  let schedule: (Int, @escaping () -> Void) -> Void
  /// Moves the scheduler to a tick, running what is due.
  let advance: (Int) -> Void
  /// Whether the scheduler has actions waiting.
  let hasPendingActions: () -> Bool
}

extension TestScheduler {
  /// This scheduler in ticks of `tick`, from now.
  func marbleClock(tick: SchedulerTimeType.Stride) -> MarbleClock {
    precondition(tick > .zero, "Marbles: a tick must be longer than zero")
    let instants = TickInstants(origin: now, tick: tick)
    return MarbleClock(
      currentTick: { [self] in instants.tick(containing: now) },
      schedule: { [self] index, action in
        schedule(after: instants[index], tolerance: .zero, options: nil, action)
      },
      advance: { [self] index in advance(to: instants[index]) },
      hasPendingActions: { [self] in pendingActionCount > 0 })
  }
}

/// The instants of ticks 0, 1, 2, …, made by adding the tick again and again (a stride times an
/// integer is not defined the same way by every scheduler time type), kept as they are made.
private final class TickInstants<Time: Strideable>: @unchecked Sendable {
  // Safety: `instants` is only touched inside its lock.
  let tick: Time.Stride
  let instants: Lock<[Time]>

  init(origin: Time, tick: Time.Stride) {
    self.tick = tick
    instants = Lock([origin])
  }

  /// The instant of tick `index` (tick 0 for a negative index: the clock starts there).
  subscript(index: Int) -> Time {
    instants.withLock { instants in
      while instants.count <= index { instants.append(instants.last!.advanced(by: tick)) }
      return instants[max(0, index)]
    }
  }

  /// The tick whose span holds `time`: an instant between two ticks counts as the earlier.
  func tick(containing time: Time) -> Int {
    var index = 0
    while self[index + 1] <= time { index += 1 }
    return index
  }
}
