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

/// How far the calls under test got: each call that returned ticks it.
package final class CallProgress: Sendable {
  let ticks = Atomic<Int>(0)

  package init() {}

  /// A call returned.
  package func tick() { ticks.add(1, ordering: .relaxed) }
}

/// Runs `calls` on a thread of its own while `producer` keeps producing, and returns whether
/// `calls` returned while the producer was still running (then stops it).
///
/// The property is liveness: no call is held while the producer runs. So what fails is a
/// *stall* — `stall` passing with no call returning (no ``CallProgress/tick()``) — not a slow
/// machine: on a loaded machine (a test run keeps many threads busy on few cores) a sequence of
/// calls may take long, each of them returning. `limit` bounds the whole. No timing is
/// asserted beyond that. The waiting happens on a thread of its own too, so that no
/// cooperative-pool thread is blocked.
package func callsReturn(
  whileRunning producer: RacingProducer, stall: Duration = .seconds(60),
  limit: Duration = .seconds(600), _ calls: @escaping @Sendable (CallProgress) -> Void
) async -> Bool {
  let progress = CallProgress()
  return await withCheckedContinuation { continuation in
    Thread.detachNewThread {
      let returned = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        calls(progress)
        returned.signal()
      }
      let deadline = DispatchTime.now() + Double(limit.components.seconds)
      let window = Double(stall.components.seconds)
      var seen = 0
      var inTime = false
      while DispatchTime.now() < deadline {
        if returned.wait(timeout: .now() + window) == .success {
          inTime = true
          break
        }
        let ticks = progress.ticks.load(ordering: .relaxed)
        if ticks == seen { break }  // stalled: no call returned in the window
        seen = ticks
      }
      let stillRunning = !producer.stopped.load(ordering: .relaxed)
      producer.stop()
      if !inTime { returned.wait() }  // the producer stopped: a call held by it can return now
      continuation.resume(returning: inTime && stillRunning)
    }
  }
}

/// ``callsReturn(whileRunning:stall:limit:_:)`` for one call (or calls that report no
/// progress): it must return within `stall`.
package func callsReturn(
  whileRunning producer: RacingProducer, stall: Duration = .seconds(120),
  _ calls: @escaping @Sendable () -> Void
) async -> Bool {
  await callsReturn(whileRunning: producer, stall: stall) { _ in calls() }
}
