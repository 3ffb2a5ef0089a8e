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
    // Pairs with `end()` resuming under the lock: a lock round trip after the wait, so that
    // the thread sanitizer sees the hand-off (see `end()`).
    state.withLock { _ in }
  }

  @inlinable func end() {
    // The next waiter is resumed under the lock (resuming only schedules the task; no code of
    // anyone else's runs here), and the waiter takes the lock once when it wakes. Resumed after
    // unlocking, a waiter that had not suspended yet when it was resumed continues without any
    // synchronisation the thread sanitizer can see (the concurrency runtime is not
    // instrumented), and the sanitizer reported the resume's read of the waiter's context
    // against the waiter's next use of that memory (issue 14). Only the waiting path pays: one
    // lock round trip per hand-off that had suspended anyway.
    state.withLock { state in
      guard !state.waiters.isEmpty else {
        state.held = false
        return
      }
      state.waiters.removeFirst().resume()  // the turn passes on; `held` stays true
    }
  }
}
