/// Lets tasks take turns at a critical section that suspends, first come first served.
///
/// `begin()` returns at once when nobody holds the turn (no suspension on the fast path);
/// otherwise the task waits, parked on a continuation, until `end()` hands it the turn. It is
/// never held across a lock: the lock only guards the queue.
///
/// States: `free` → `held(waiters)`; `begin` in `free` → `held([])`; `begin` in `held` → append;
/// `end` → hand the turn to the first waiter, or `free`.
@usableFromInline
final class AsyncTurns: Sendable {
  @usableFromInline
  struct State {
    @usableFromInline var held = false
    @usableFromInline var waiters: [UnsafeContinuation<Void, Never>] = []
    @inlinable init() {}
  }

  @usableFromInline let state = Lock(State())

  @inlinable init() {}

  @inlinable func begin() async {
    if state.withLock({ state in
      if state.held { return false }
      state.held = true
      return true
    }) {
      return
    }
    await withUnsafeContinuation { continuation in
      let hasTurn = state.withLock { state in
        if !state.held {
          state.held = true
          return true
        }
        state.waiters.append(continuation)
        return false
      }
      if hasTurn { continuation.resume() }
    }
  }

  @inlinable func end() {
    let next = state.withLock { state -> UnsafeContinuation<Void, Never>? in
      guard !state.waiters.isEmpty else {
        state.held = false
        return nil
      }
      return state.waiters.removeFirst()  // the turn passes on; `held` stays true
    }
    next?.resume()
  }
}
