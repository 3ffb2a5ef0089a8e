import Foundation
import Synchronization

// Package test support (`package` access: not part of the public API): blocking work in tests
// runs on threads of its own, never on a cooperative-pool thread (the pool has one thread per
// core; a test that blocks one stalls every other test while the cores are busy).

/// Runs `body` on a thread of its own and returns its result; the caller suspends meanwhile,
/// blocking no cooperative-pool thread.
///
/// Everything `body` wrote happens before the caller goes on, as the thread sanitizer sees it:
/// the result passes through an `NSLock`. (A continuation resumed before its task has suspended
/// is picked up through the concurrency runtime's own atomics, which the sanitizer does not see;
/// it then reported a test reading what `body` wrote as a race.)
package func onThreadOfItsOwn<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
  let result = HandedOver<T>()
  await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
    detachThread {
      result.set(body())
    } then: {
      continuation.resume()
    }
  }
  return result.take()
}

/// Starts a thread that runs `body`, lets go of it, and then runs `then`.
///
/// A thread's closure is released only when the thread object goes, after the thread ended: had
/// it held `body` (and everything `body` captured) until then, the caller woken by `then` could
/// finish — the test, or the whole test process — while the thread still held the test's
/// objects (the leak checker then found objects alive at exit).
package func detachThread(
  _ body: @escaping @Sendable () -> Void, then: @escaping @Sendable () -> Void
) {
  let handOff = HandedOver<@Sendable () -> Void>(body)
  Thread.detachNewThread {
    do {
      let body = handOff.take()
      body()
    }
    then()
  }
}

/// A value handed from one thread to another under an `NSLock`.
private final class HandedOver<T>: @unchecked Sendable {
  // Safety: `value` is read and written only under `lock`.
  private let lock = NSLock()
  private var value: T?

  init(_ value: T? = nil) { self.value = value }

  func set(_ newValue: T) { lock.withLock { value = newValue } }
  /// The value, which this object lets go of.
  func take() -> T {
    lock.withLock {
      defer { value = nil }
      return value!
    }
  }
}

/// Runs `body(i)` for every `i` in `0..<iterations` on threads of their own — up to eight at
/// once, each taking the next `i` — and returns when every call has.
package func concurrently(_ iterations: Int, _ body: @escaping @Sendable (Int) -> Void) async {
  await onThreadOfItsOwn { runConcurrently(iterations, body) }
}

/// Runs `first` and `second` at the same time, each on a thread of its own, and returns when
/// both have.
package func simultaneously(
  _ first: @escaping @Sendable () -> Void, _ second: @escaping @Sendable () -> Void
) async {
  await concurrently(2) { $0 == 0 ? first() : second() }
}

/// `concurrently`, for a caller already on a thread of its own: blocks it until every call
/// has returned.
package func runConcurrently(_ iterations: Int, _ body: @escaping @Sendable (Int) -> Void) {
  let next = NextIndex()
  let work: @Sendable () -> Void = {
    while true {
      let index = next.counter.add(1, ordering: .relaxed).oldValue
      guard index < iterations else { return }
      body(index)
    }
  }
  let helpers = min(iterations, 8) - 1
  let done = DispatchSemaphore(value: 0)
  for _ in 0..<max(0, helpers) {
    detachThread(work) { done.signal() }
  }
  work()
  for _ in 0..<max(0, helpers) { done.wait() }
}

private final class NextIndex: Sendable {
  let counter = Atomic<Int>(0)
}

/// Runs `body(i)` for every `i` in `0..<threads`, all at once, each on a thread of its own, and
/// returns whether every call returned before `deadline`; the bodies start together. The deadline is only a net against a
/// hang (a deadlock fails the test instead of stalling the suite; its threads stay blocked):
/// no timing is asserted. The caller suspends meanwhile, blocking no cooperative-pool thread.
package func allReturn(
  threads: Int, deadline: Duration = .seconds(600), _ body: @escaping @Sendable (Int) -> Void
) async -> Bool {
  await onThreadOfItsOwn {
    let done = DispatchSemaphore(value: 0)
    // A start line: every thread begins its body once all have started, so the bodies race
    // from their first call instead of the first thread being done before the last starts.
    let ready = NextIndex()
    for index in 0..<threads {
      detachThread {
        ready.counter.add(1, ordering: .acquiringAndReleasing)
        while ready.counter.load(ordering: .acquiring) < threads { sched_yield() }
        body(index)
      } then: {
        done.signal()
      }
    }
    let end = DispatchTime.now() + .seconds(Int(deadline.components.seconds))
    for _ in 0..<threads where done.wait(timeout: end) == .timedOut { return false }
    return true
  }
}
