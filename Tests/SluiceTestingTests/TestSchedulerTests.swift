import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

@Suite("TestScheduler", .onThreadsOfTheirOwn)
struct TestSchedulerTests {
  final class Log: @unchecked Sendable {
    // Safety: test schedulers run actions on the advancing thread only.
    var entries: [String] = []
  }

  @Test func nothingRunsUntilTheClockMoves() {
    let scheduler = DispatchQueue.test
    let log = Log()
    scheduler.schedule { log.entries.append("now") }
    scheduler.schedule(after: scheduler.now.advanced(by: .seconds(1))) { log.entries.append("1s") }
    #expect(log.entries.isEmpty)
    #expect(scheduler.pendingActionCount == 2)
    scheduler.advance()
    #expect(log.entries == ["now"])
    scheduler.advance(by: .milliseconds(999))
    #expect(log.entries == ["now"])
    scheduler.advance(by: .milliseconds(1))
    #expect(log.entries == ["now", "1s"])
  }

  @Test func sameInstantRunsInSchedulingOrderAndTimeOrderOtherwise() {
    let scheduler = DispatchQueue.test
    let log = Log()
    let start = scheduler.now
    scheduler.schedule(after: start.advanced(by: .seconds(2))) { log.entries.append("b1") }
    scheduler.schedule(after: start.advanced(by: .seconds(1))) { log.entries.append("a") }
    scheduler.schedule(after: start.advanced(by: .seconds(2))) { log.entries.append("b2") }
    scheduler.schedule(after: start.advanced(by: .seconds(2))) {
      log.entries.append("b3")
      // Scheduled while advancing, for an instant already reached: runs in this advance, last.
      scheduler.schedule { log.entries.append("b4") }
    }
    scheduler.advance(by: .seconds(5))
    #expect(log.entries == ["a", "b1", "b2", "b3", "b4"])
    #expect(scheduler.now == start.advanced(by: .seconds(5)))
  }

  @Test func nowIsTheActionsInstantWhileItRuns() {
    let scheduler = DispatchQueue.test
    let start = scheduler.now
    let seen = Log()
    scheduler.schedule(after: start.advanced(by: .seconds(3))) {
      seen.entries.append("\(start.distance(to: scheduler.now).magnitude)")
    }
    scheduler.advance(by: .seconds(10))
    #expect(seen.entries == ["3000000000"])
  }

  @Test func repeatingActionsRunEachIntervalUntilCancelled() {
    let scheduler = DispatchQueue.test
    let log = Log()
    let cancellable = scheduler.schedule(
      after: scheduler.now.advanced(by: .seconds(1)), interval: .seconds(1)
    ) { log.entries.append("tick") }
    scheduler.advance(by: .seconds(3))
    #expect(log.entries.count == 3)
    cancellable.cancel()
    scheduler.advance(by: .seconds(3))
    #expect(log.entries.count == 3)
    #expect(scheduler.pendingActionCount == 0)
  }

  @Test func runExecutesEverythingAndMovesTheClock() {
    let scheduler = RunLoop.test
    let log = Log()
    let start = scheduler.now
    scheduler.schedule(after: start.advanced(by: .seconds(100))) { log.entries.append("late") }
    scheduler.schedule { log.entries.append("early") }
    scheduler.run()
    #expect(log.entries == ["early", "late"])
    #expect(scheduler.now == start.advanced(by: .seconds(100)))
  }

  @Test func runawayRepeatingActionTrapsWithAMessage() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let scheduler = DispatchQueue.test
      let cancellable = scheduler.schedule(after: scheduler.now, interval: .seconds(1)) {}
      withExtendedLifetime(cancellable) { scheduler.run(limit: 10) }
    }
    let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(message.contains("a repeating action is probably still scheduled"))
  }

  @Test func schedulingFromManyThreadsIsSafe() {
    let scheduler = DispatchQueue.test
    let counter = Log()
    DispatchQueue.concurrentPerform(iterations: 8) { _ in
      for _ in 0..<100 { scheduler.schedule { counter.entries.append("x") } }
    }
    scheduler.advance()
    #expect(counter.entries.count == 800)
  }
}
