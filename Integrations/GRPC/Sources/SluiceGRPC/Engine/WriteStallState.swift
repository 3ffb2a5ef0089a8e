/// The state of a write-stall watch, as a pure state machine (performed by ``WriteStallWatch``):
/// whether one write of an RPC's write loop has been suspended longer than `timeout`.
///
/// What is timed: each write, from the call to its return. A write to a writable stream returns
/// at once; a write suspends while the peer's flow-control window is spent and the stream's
/// outbound buffer is full, and returns as soon as the peer takes bytes again (its
/// `WINDOW_UPDATE`). So the clock runs only while the peer takes nothing: time spent waiting
/// for the publisher (between writes) is not a stall, and a reader that is slow but takes
/// something within every `timeout` is never cut, however long the stream lasts.
///
/// States: `idle` (no write in progress) ⇄ `writing(since)` → `stalled` (the watch fired) or
/// `ended` (the loop ended first). `stalled` and `ended` absorb every later event.
///
/// Transitions (event → change, action):
/// | event | idle | writing(since) | stalled / ended |
/// |---|---|---|---|
/// | `writeStarted(now)` | writing(now) | — | ignore |
/// | `writeEnded` | — | idle | ignore |
/// | `watchWoke(now)` | sleep until `now + timeout` | `now - since ≥ timeout`: stalled, **fire**; else sleep until `since + timeout` | **stop** |
/// | `loopEnded` | ended | ended | stays; reports whether it stalled |
///
/// Why the watch may sleep a whole `timeout` while idle: a write that starts during that sleep
/// is overdue only after the sleep ends, and the next wake-up sleeps until that write's own
/// deadline. The watch therefore fires at `since + timeout` (plus the scheduler's delay), and
/// wakes at most twice per `timeout`.
@usableFromInline
struct WriteStallState {
  @usableFromInline typealias Instant = ContinuousClock.Instant

  @usableFromInline enum Phase: Equatable {
    case idle
    case writing(since: Instant)
    case stalled
    case ended
  }

  @usableFromInline let timeout: Duration
  @usableFromInline var phase = Phase.idle

  @inlinable init(timeout: Duration) {
    self.timeout = timeout
  }

  @inlinable mutating func writeStarted(at now: Instant) {
    if case .idle = phase { phase = .writing(since: now) }
  }

  @inlinable mutating func writeEnded() {
    if case .writing = phase { phase = .idle }
  }

  @usableFromInline enum WatchAction: Equatable {
    /// Sleep until then, and report the next wake-up.
    case sleep(until: Instant)
    /// The write in progress is overdue: cancel the pipeline and the loop.
    case fire
    /// The loop ended (or the watch fired already): the watch ends.
    case stop
  }

  @inlinable mutating func watchWoke(at now: Instant) -> WatchAction {
    switch phase {
    case .idle:
      return .sleep(until: now.advanced(by: timeout))
    case .writing(let since):
      let deadline = since.advanced(by: timeout)
      guard now >= deadline else { return .sleep(until: deadline) }
      phase = .stalled
      return .fire
    case .stalled, .ended:
      return .stop
    }
  }

  /// The loop ended: the watch may no longer fire. Whether it fired first.
  @inlinable mutating func loopEnded() -> Bool {
    if case .stalled = phase { return true }
    phase = .ended
    return false
  }
}
