import Dispatch
import Foundation
import SluiceCore
import SluiceTesting
import Testing

@Suite("Schedulers")
struct SchedulerTests {
  @Test func immediateSchedulerRunsAtOnce() {
    let scheduler = ImmediateScheduler.shared
    let log = Box<[Int]>([])
    scheduler.schedule { log.update { $0?.append(1) } }
    scheduler.schedule(after: scheduler.now.advanced(by: .seconds(10))) {
      log.update { $0?.append(2) }
    }
    _ = scheduler.schedule(after: scheduler.now, interval: .seconds(1)) {
      log.update { $0?.append(3) }
    }
    #expect(log.value == [1, 2, 3])
    #expect(scheduler.now.distance(to: scheduler.now.advanced(by: 5)) == .zero)
  }

  @Test func dispatchQueueStrideConversions() {
    typealias Stride = DispatchQueue.SchedulerTimeType.Stride
    #expect(Stride.seconds(2).magnitude == 2_000_000_000)
    #expect(Stride.seconds(1.5).magnitude == 1_500_000_000)
    #expect(Stride.milliseconds(3).magnitude == 3_000_000)
    #expect(Stride.microseconds(4).magnitude == 4_000)
    #expect(Stride.nanoseconds(5).magnitude == 5)
    #expect((1 as Stride).magnitude == 1_000_000_000, "literals are seconds, as in Combine")
    #expect((0.25 as Stride).magnitude == 250_000_000)
    let start = DispatchQueue.SchedulerTimeType(DispatchTime(uptimeNanoseconds: 1_000))
    #expect(start.advanced(by: .nanoseconds(500)).dispatchTime.uptimeNanoseconds == 1_500)
    #expect(start.distance(to: start.advanced(by: .milliseconds(1))) == .milliseconds(1))
  }

  @Test func dateStrideConversions() {
    typealias Stride = RunLoop.SchedulerTimeType.Stride
    #expect(Stride.milliseconds(1500).magnitude == 1.5)
    #expect(Stride.seconds(2).timeInterval == 2)
    let start = RunLoop.SchedulerTimeType(Date(timeIntervalSinceReferenceDate: 0))
    #expect(start.advanced(by: .seconds(3)).date == Date(timeIntervalSinceReferenceDate: 3))
    #expect(start.distance(to: start.advanced(by: .seconds(3))) == .seconds(3))
  }

  @Test func dispatchQueueRunsActionsInOrder() async {
    let queue = DispatchQueue(label: "sluice.test.serial")
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    let yield = Shared(continuation)
    for value in 0..<100 { queue.schedule { yield.value.yield(value) } }
    queue.schedule(after: queue.now.advanced(by: .milliseconds(1))) { yield.value.finish() }
    var received: [Int] = []
    for await value in stream { received.append(value) }
    #expect(received == Array(0..<100))
  }

  @Test func dispatchQueueRepeatingScheduleStopsWhenCancelled() async {
    let queue = DispatchQueue(label: "sluice.test.repeat")
    let (stream, continuation) = AsyncStream<Void>.makeStream()
    let yield = Shared(continuation)
    let ticks = Box<Int>(0)
    let cancellable = queue.schedule(after: queue.now, interval: .milliseconds(1)) {
      ticks.update { $0! += 1 }
      yield.value.yield()
    }
    var seen = 0
    for await _ in stream {
      seen += 1
      if seen == 3 { break }
    }
    cancellable.cancel()
    let afterCancel = queue.sync { ticks.value! }
    #expect(afterCancel >= 3)
    // After cancel (and a queue drain), the count no longer moves.
    queue.sync {}
    #expect(queue.sync { ticks.value! } == afterCancel)
  }

  @Test func operationQueueRunsScheduledActions() async {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    let yield = Shared(continuation)
    queue.schedule { yield.value.yield(1) }
    queue.schedule(after: queue.now.advanced(by: .milliseconds(2))) {
      yield.value.yield(2)
      yield.value.finish()
    }
    var received: [Int] = []
    for await value in stream { received.append(value) }
    #expect(received == [1, 2])
  }

  @Test func operationQueueCancelledDelayedActionNeverRuns() async {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    let ran = Box<Bool>(false)
    let cancellable = queue.schedule(
      after: queue.now.advanced(by: .milliseconds(20)), interval: .milliseconds(20)
    ) { ran.set(true) }
    cancellable.cancel()
    let (stream, continuation) = AsyncStream<Void>.makeStream()
    let finish = Shared(continuation)
    queue.schedule(after: queue.now.advanced(by: .milliseconds(60))) { finish.value.finish() }
    for await _ in stream {}
    #expect(ran.value == false)
  }

  @Test func runLoopRunsScheduledActionsOnItsThread() async {
    let (stream, continuation) = AsyncStream<String>.makeStream()
    let yield = Shared(continuation)
    let thread = Thread {
      let runLoop = RunLoop.current
      runLoop.schedule { yield.value.yield("perform") }
      runLoop.schedule(after: runLoop.now.advanced(by: .milliseconds(1))) {
        yield.value.yield("timer")
        yield.value.finish()
      }
      let deadline = Date().addingTimeInterval(10)
      while Date() < deadline, runLoop.run(mode: .default, before: Date().addingTimeInterval(0.05))
      {
        if Thread.current.isCancelled { break }
      }
    }
    thread.start()
    var received: [String] = []
    for await value in stream { received.append(value) }
    thread.cancel()
    #expect(received == ["perform", "timer"])
  }
}
