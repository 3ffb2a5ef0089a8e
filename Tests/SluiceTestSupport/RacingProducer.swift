package import Foundation
package import Synchronization

// Package test support (`package` access: not part of the public API).

/// A thread of its own that runs `produce` in a loop, without pause, until stopped: the
/// "other thread that never stops sending" of the liveness tests.
package final class RacingProducer: Sendable {
  package let stopped = Atomic<Bool>(false)
  package let iterations = Atomic<Int>(0)
  package let finished = DispatchSemaphore(value: 0)

  package init(_ produce: @escaping @Sendable (Int) -> Void) {
    Thread.detachNewThread { [self] in
      var index = 0
      while !stopped.load(ordering: .relaxed) {
        produce(index)
        index += 1
        iterations.store(index, ordering: .relaxed)
      }
      finished.signal()
    }
    // Running before the calls under test start.
    while iterations.load(ordering: .relaxed) == 0 { sched_yield() }
  }

  /// Stops the loop and waits for its last `produce` to return.
  package func stop() {
    stopped.store(true, ordering: .relaxed)
    finished.wait()
  }
}

/// Runs `calls` on a thread of its own while `producer` keeps producing, and returns whether
/// `calls` returned within `timeout` while the producer was still running (then stops it).
/// The timeout is only a safety net for a call that never returns: no timing is asserted. The
/// waiting happens on a thread of its own too, so that no cooperative-pool thread is blocked.
package func callsReturn(
  whileRunning producer: RacingProducer, timeout: Duration = .seconds(120),
  _ calls: @escaping @Sendable () -> Void
) async -> Bool {
  await withCheckedContinuation { continuation in
    Thread.detachNewThread {
      let returned = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        calls()
        returned.signal()
      }
      let seconds = Double(timeout.components.seconds)
      let inTime = returned.wait(timeout: .now() + seconds) == .success
      let stillRunning = !producer.stopped.load(ordering: .relaxed)
      producer.stop()
      if !inTime { returned.wait() }  // the producer stopped: a call held by it can return now
      continuation.resume(returning: inTime && stillRunning)
    }
  }
}
