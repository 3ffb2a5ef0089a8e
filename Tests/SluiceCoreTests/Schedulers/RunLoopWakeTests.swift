import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// `RunLoop`'s scheduler wakes the run loop it schedules on: a run loop that sleeps until a far
/// timer runs an action scheduled from another thread at once, not when the timer fires.
@Suite(
  "RunLoop scheduler: actions from another thread wake a sleeping run loop", .onThreadsOfTheirOwn)
struct RunLoopWakeTests {
  /// A thread of its own running a run loop whose only timer is ten minutes away.
  final class SleepingRunLoop: @unchecked Sendable {
    // Safety: `runLoop` is written once before `ready` is signalled and only read after.
    var runLoop: RunLoop!
    let ready = DispatchSemaphore(value: 0)
    let stopped = Atomic<Bool>(false)

    init() {
      Thread.detachNewThread { [self] in
        runLoop = RunLoop.current
        let far = Timer(fire: Date(timeIntervalSinceNow: 600), interval: 600, repeats: true) {
          _ in
        }
        runLoop.add(far, forMode: .default)
        ready.signal()
        while !stopped.load(ordering: .relaxed) {
          _ = runLoop.run(mode: .default, before: Date(timeIntervalSinceNow: 600))
        }
        far.invalidate()
      }
      ready.wait()
    }

    func stop() {
      stopped.store(true, ordering: .relaxed)
      runLoop.schedule {}  // wakes it to see the flag
    }
  }

  @Test("schedule(_:) from another thread runs on the sleeping run loop's next pass")
  func scheduleWakesTheRunLoop() {
    let sleeping = SleepingRunLoop()
    let ran = DispatchSemaphore(value: 0)
    sleeping.runLoop.schedule { ran.signal() }
    // Far less than the timer's ten minutes: only a woken run loop runs it in time.
    #expect(ran.wait(timeout: .now() + 120) == .success)
    sleeping.stop()
  }

  @Test("receive(on: runLoop) fed from another thread delivers every value, in order")
  func receiveOnWakesTheRunLoop() {
    let sleeping = SleepingRunLoop()
    let subject = PassthroughSubject<Int, Never>()
    let received = Mutex<[Int]>([])
    let all = DispatchSemaphore(value: 0)
    let sink = subject.receive(on: sleeping.runLoop).sink { value in
      received.withLock { $0.append(value) }
      if value == 999 { all.signal() }
    }
    for value in 0..<1_000 { subject.send(value) }
    #expect(all.wait(timeout: .now() + 120) == .success)
    #expect(received.withLock { $0 } == Array(0..<1_000))
    sink.cancel()
    sleeping.stop()
  }
}
