import Synchronization

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#endif

/// Runs every task of the process on the thread that asks, one job at a time, in the order they
/// were enqueued: the diagrams of async operators are drawn from real runs, and this makes those
/// runs deterministic (the same pictures, byte for byte, on every machine and under any load).
///
/// ``install()`` sets the concurrency runtime's global-enqueue hook
/// (`swift_task_enqueueGlobal_hook`, the hook test tools such as Point-Free's
/// `withMainSerialExecutor` use) so that jobs for the global concurrent executor — tasks,
/// child tasks, default actors — are queued here instead; ``runUntilIdle()`` runs them until
/// every task waits for something (the lab's clock). Only the diagram generator installs it:
/// never in a test process or an app, where it would serialise everything.
public final class StepExecutor: SerialExecutor, @unchecked Sendable {
  // Safety: the queue is in a Mutex; jobs are run after it is unlocked.
  static let shared = StepExecutor()
  private static let installed = Atomic<Bool>(false)
  private let queue = Mutex<[UnownedJob]>([])

  public func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    queue.withLock { $0.append(job) }
  }

  func enqueue(unowned job: UnownedJob) {
    queue.withLock { $0.append(job) }
  }

  public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
    UnownedSerialExecutor(ordinary: self)
  }

  private typealias Original = @convention(thin) (UnownedJob) -> Void
  private typealias Hook = @convention(thin) (UnownedJob, Original) -> Void

  /// Routes the global executor's jobs to the step executor, for the rest of the process.
  /// Fails with a message when the runtime has no such hook.
  public static func install() {
    guard
      let runtime = dlopen("libswift_Concurrency.so", RTLD_LAZY | RTLD_NOLOAD)
        ?? dlopen(nil, RTLD_LAZY),
      let symbol = dlsym(runtime, "swift_task_enqueueGlobal_hook")
    else {
      fatalError(
        "StepExecutor: this Swift runtime has no swift_task_enqueueGlobal_hook; async diagrams "
          + "cannot be drawn deterministically")
    }
    symbol.assumingMemoryBound(to: Hook?.self).pointee = { job, _ in
      StepExecutor.shared.enqueue(unowned: job)
    }
    installed.store(true, ordering: .sequentiallyConsistent)
  }

  /// Whether ``install()`` ran in this process.
  public static var isInstalled: Bool { installed.load(ordering: .sequentiallyConsistent) }

  /// Runs queued jobs, and the jobs they enqueue, until none is left (no-op when not
  /// installed).
  static func runUntilIdle() {
    guard isInstalled else { return }
    let executor = shared.asUnownedSerialExecutor()
    var count = 0
    while let job = shared.queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
      count += 1
      precondition(count < 1_000_000, "StepExecutor: a task never waits (a busy loop?)")
      job.runSynchronously(on: executor)
    }
  }
}
