import Foundation
import Synchronization
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

/// A task executor with one thread of its own that runs its jobs in the order they were
/// enqueued, until ``stop()``.
package final class OwnThreadExecutor: TaskExecutor, Sendable {
  /// Whether the calling thread is an ``OwnThreadExecutor``'s, for a test that checks where it
  /// runs.
  package static var isCurrentThread: Bool { Thread.current.threadDictionary[marker] != nil }
  private static let marker = "sluice.test.OwnThreadExecutor"

  private let jobs = Mutex<(queue: [UnownedJob], stopped: Bool)>(([], false))
  private let available = DispatchSemaphore(value: 0)

  package init() {
    Thread.detachNewThread { [self] in
      Thread.current.threadDictionary[Self.marker] = true
      run()
    }
  }

  package func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    jobs.withLock { $0.queue.append(job) }
    available.signal()
  }

  /// Ends the thread once the jobs enqueued so far have run.
  package func stop() {
    jobs.withLock { $0.stopped = true }
    available.signal()
  }

  private func run() {
    let executor = asUnownedTaskExecutor()
    while true {
      available.wait()
      let next = jobs.withLock { jobs -> UnownedJob?? in
        if jobs.queue.isEmpty { return jobs.stopped ? .none : .some(nil) }
        return jobs.queue.removeFirst()
      }
      guard let job = next else { return }
      job?.runSynchronously(on: executor)
    }
  }
}
