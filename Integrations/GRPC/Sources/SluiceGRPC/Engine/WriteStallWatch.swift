/// Times the writes of one RPC's write loop and tells when one has been suspended longer than
/// the write-stall timeout (see ``WriteStallState`` for what is timed and the table of events).
///
/// The loop reports each write's start and end (a lock each, and a reading of the clock at
/// the start); a task of its own (``watch()``) sleeps until the write in progress is due and
/// returns `true` if it is overdue. Nothing is timed, and no task runs, unless a timeout is
/// set. After ``loopEnded()`` the watch can no longer fire: a timeout never cancels a pipeline
/// whose writing ended.
@usableFromInline
final class WriteStallWatch: Sendable {
  @usableFromInline let state: StateLock<WriteStallState>

  @inlinable init(timeout: Duration) {
    state = StateLock(WriteStallState(timeout: timeout))
  }

  @usableFromInline var timeout: Duration { state.withLock { $0.timeout } }

  @inlinable func writeStarted() {
    let now = ContinuousClock.now
    state.withLock { $0.writeStarted(at: now) }
  }

  @inlinable func writeEnded() {
    state.withLock { $0.writeEnded() }
  }

  /// Whether the watch fired before the loop ended. After this call it never fires.
  @inlinable func loopEnded() -> Bool {
    state.withLock { $0.loopEnded() }
  }

  /// Sleeps until a write is overdue (`true`), or until the loop ended or the calling task was
  /// cancelled (`false`).
  @usableFromInline func watch() async -> Bool {
    while true {
      switch state.withLock({ $0.watchWoke(at: ContinuousClock.now) }) {
      case .fire: return true
      case .stop: return false
      case .sleep(let deadline):
        do {
          try await Task.sleep(until: deadline, tolerance: .zero, clock: .continuous)
        } catch {
          return false  // the loop ended
        }
      }
    }
  }
}
