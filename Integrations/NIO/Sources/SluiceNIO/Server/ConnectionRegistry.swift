import NIOCore
import Synchronization

/// The connections a server serves, and its admission rule: at most `limit` at once.
///
/// **States**: `serving(open)` → `shutDown` (by ``shutDown()``, once). `admit` adds a channel
/// while fewer than `limit` are open and the server is serving; `remove` (a channel's close)
/// takes one out. The count is exact: a channel is counted from its admission until its close
/// future completes.
final class ConnectionRegistry: Sendable {
  private struct State {
    var open: [ObjectIdentifier: any Channel] = [:]
    var shutDown = false
  }

  let limit: Int
  private let state = Mutex(State())

  init(limit: Int) {
    self.limit = limit
  }

  /// Counts `channel` in, unless `limit` connections are open or the server is shutting
  /// down. Whether it was admitted.
  func admit(_ channel: any Channel) -> Bool {
    state.withLock { state in
      guard !state.shutDown, state.open.count < limit else { return false }
      state.open[ObjectIdentifier(channel)] = channel
      return true
    }
  }

  /// Counts a closed `channel` out.
  func remove(_ channel: any Channel) {
    _ = state.withLock { $0.open.removeValue(forKey: ObjectIdentifier(channel)) }
  }

  /// The connections open now.
  var count: Int { state.withLock { $0.open.count } }

  /// Admits no more connections; the ones open now, for the caller to close.
  func shutDown() -> [any Channel] {
    state.withLock { state in
      state.shutDown = true
      return Array(state.open.values)
    }
  }
}
