import Foundation
import SluiceTestSupport
import SluiceTesting
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

  /// Documented difference (DocC): a run loop keeps Sluice's wake-up timer for that mode once
  /// it has been scheduled on, so the mode is never empty again — `run(mode:before:)` waits for
  /// its date instead of returning `false` at once. (Combine's one-shot timers leave the run
  /// loop when they fire; swift-corelibs-foundation keeps ~350 bytes of each.)
  @Test("a run loop once scheduled on keeps its wake-up timer: the mode is not empty again")
  func aRunLoopKeepsItsWakeUpTimer() {
    let results = Box<[Bool]>([])
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      let runLoop = RunLoop.current
      let empty = runLoop.run(mode: .default, before: Date(timeIntervalSinceNow: 0.01))
      let ran = Box<Bool>(false)
      runLoop.schedule(after: .init(Date())) { ran.set(true) }
      let deadline = Date(timeIntervalSinceNow: 600)
      while ran.value != true, Date() < deadline {
        _ = runLoop.run(mode: .default, before: Date(timeIntervalSinceNow: 0.05))
      }
      let afterwards = runLoop.run(mode: .default, before: Date(timeIntervalSinceNow: 0.01))
      results.set([empty, ran.value == true, afterwards])
      done.signal()
    }
    #expect(done.wait(timeout: .now() + 600) == .success)
    #expect(results.value == [false, true, true], "[empty at first, ran, not empty afterwards]")
  }
}
