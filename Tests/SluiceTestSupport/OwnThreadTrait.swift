import Foundation
package import Testing

/// A test trait that runs the test (or every test of a suite) on a thread of its own instead of
/// the cooperative pool: for tests that block — wait on semaphores, spread work over threads
/// with `concurrentPerform`, fuzz or stress for seconds. The pool has one thread per core, so a
/// test blocking one stalls every other test while the machine's cores are busy; on a thread of
/// its own, a blocking test only competes for the cores.
///
/// The test keeps its task (its `#expect`s are recorded as usual): the trait sets a task
/// executor preference, so the test's synchronous code, its nonisolated `async` code and its
/// structured child tasks run on an ``OwnThreadExecutor`` made for the test and ended after it.
/// (Code isolated to an actor — the main actor — still runs there; unstructured tasks the test
/// starts run on the pool, as usual.)
package struct OwnThreadTrait: TestTrait, SuiteTrait, TestScoping {
  package var isRecursive: Bool { true }

  package func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    // A suite: its tests scope themselves. A test already scoped (called once for the test and
    // once for its case): one executor is enough.
    guard !test.isSuite, !Self.active else { return try await function() }
    // As many such tests at once as there are cores (as the pool allowed them before): more
    // would only slow each other down, and the timing-bound ones among them fail.
    await OwnThreadSlots.shared.acquire()
    defer { OwnThreadSlots.shared.release() }
    let executor = OwnThreadExecutor()
    defer { executor.stop() }
    try await Self.$active.withValue(true) {
      try await withTaskExecutorPreference(executor) { try await function() }
    }
  }

  /// The current test already runs on an ``OwnThreadExecutor``.
  @TaskLocal static var active = false
}

extension Trait where Self == OwnThreadTrait {
  /// Runs the test on a thread of its own, never blocking a cooperative-pool thread.
  package static var onThreadsOfTheirOwn: Self { OwnThreadTrait() }
}

/// Slots for tests on threads of their own, one per core: waiting for one suspends (blocks no
/// thread).
final class OwnThreadSlots: @unchecked Sendable {
  // Safety: `free` and `waiting` are read and written only under `lock` (an `NSLock`, whose
  // hand-overs the thread sanitizer sees, unlike a contended `Mutex`'s on Linux).
  static let shared = OwnThreadSlots(count: max(2, ProcessInfo.processInfo.activeProcessorCount))

  private let lock = NSLock()
  private var free: Int
  private var waiting: [CheckedContinuation<Void, Never>] = []

  init(count: Int) { free = count }

  func acquire() async {
    await withCheckedContinuation { continuation in
      let now = lock.withLock { () -> Bool in
        guard free > 0 else {
          waiting.append(continuation)
          return false
        }
        free -= 1
        return true
      }
      if now { continuation.resume() }
    }
  }

  func release() {
    let next = lock.withLock { () -> CheckedContinuation<Void, Never>? in
      guard !waiting.isEmpty else {
        free += 1
        return nil
      }
      return waiting.removeFirst()  // the slot passes to it
    }
    next?.resume()
  }
}

/// A task executor with one thread of its own that runs its jobs in the order they were
/// enqueued, until ``stop()``.
package final class OwnThreadExecutor: TaskExecutor, @unchecked Sendable {
  // Safety: `queue` and `stopped` are read and written only under `lock` (an `NSLock`, whose
  // hand-overs the thread sanitizer sees).
  /// Whether the calling thread is an ``OwnThreadExecutor``'s, for a test that checks where it
  /// runs.
  package static var isCurrentThread: Bool { Thread.current.threadDictionary[marker] != nil }
  private static let marker = "sluice.test.OwnThreadExecutor"

  private let lock = NSLock()
  private var queue: [UnownedJob] = []
  private var stopped = false
  private let available = DispatchSemaphore(value: 0)

  package init() {
    Thread.detachNewThread { [self] in
      Thread.current.threadDictionary[Self.marker] = true
      run()
    }
  }

  package func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    lock.withLock { queue.append(job) }
    available.signal()
  }

  /// Ends the thread once the jobs enqueued so far have run.
  package func stop() {
    lock.withLock { stopped = true }
    available.signal()
  }

  private func run() {
    let executor = asUnownedTaskExecutor()
    while true {
      available.wait()
      let next = lock.withLock { () -> UnownedJob?? in
        if queue.isEmpty { return stopped ? .none : .some(nil) }
        return queue.removeFirst()
      }
      guard let job = next else { return }
      job?.runSynchronously(on: executor)
    }
  }
}
