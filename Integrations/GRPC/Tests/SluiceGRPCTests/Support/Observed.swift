import Foundation

/// State that several threads update, and that a test waits on until it satisfies a condition:
/// each update wakes the waiters whose condition now holds, so a wait ends as soon as the
/// effect happens (no polling); the timeout is a guard against hangs only.
final class Observed<State: Sendable>: @unchecked Sendable {
  // Safety: `state` and `waiters` are read and written only under `lock`; continuations are
  // resumed after unlocking.
  private let lock = NSLock()
  private var state: State
  private var waiters: [UUID: Waiter] = [:]

  private struct Waiter {
    let condition: (State) -> Bool
    let continuation: CheckedContinuation<Bool, Never>
  }

  init(_ state: State) { self.state = state }

  var value: State { lock.withLock { state } }

  /// Changes the state and wakes the waiters whose condition now holds.
  func update(_ change: (inout State) -> Void) {
    let woken: [CheckedContinuation<Bool, Never>] = lock.withLock {
      change(&state)
      let ready = waiters.filter { $0.value.condition(state) }
      for id in ready.keys { waiters[id] = nil }
      return ready.values.map(\.continuation)
    }
    for continuation in woken { continuation.resume(returning: true) }
  }

  /// Waits until `condition` holds (at once if it does), or `timeout` passes; whether it held.
  func wait(
    timeout: Duration = .seconds(60), until condition: @escaping @Sendable (State) -> Bool
  ) async -> Bool {
    let id = UUID()
    let timer = Task { [weak self] in
      try await Task.sleep(for: timeout)
      self?.expire(id)
    }
    defer { timer.cancel() }
    return await withCheckedContinuation { continuation in
      let holds = lock.withLock {
        if condition(state) { return true }
        waiters[id] = Waiter(condition: condition, continuation: continuation)
        return false
      }
      if holds { continuation.resume(returning: true) }
    }
  }

  private func expire(_ id: UUID) {
    lock.withLock { waiters.removeValue(forKey: id) }?.continuation.resume(returning: false)
  }
}
