import SluiceAsync
import SluiceTesting
import Testing

actor Counter {
  var log: [Int] = []
  func append(_ value: Int) { log.append(value) }
}

@Suite("ClockScheduler and ActorScheduler")
struct ClockSchedulerTests {
  @Test("actions run in time order, FIFO at equal instants, as the clock advances")
  func timeOrderWithAManualClock() async {
    let clock = ManualClock()
    let scheduler = ClockScheduler(clock: clock)
    let log = Box<[String]>([])
    let start = scheduler.now
    scheduler.schedule(after: start.advanced(by: .seconds(2))) { log.update { $0?.append("2s a") } }
    scheduler.schedule(after: start.advanced(by: .seconds(1))) { log.update { $0?.append("1s") } }
    scheduler.schedule(after: start.advanced(by: .seconds(2))) { log.update { $0?.append("2s b") } }
    scheduler.schedule { log.update { $0?.append("now") } }
    #expect(await eventually { log.value == ["now"] })
    #expect(await eventually { clock.sleeperCount == 1 }, "the worker sleeps until 1s")
    clock.advance(by: .seconds(1))
    #expect(await eventually { log.value == ["now", "1s"] })
    #expect(await eventually { clock.sleeperCount == 1 })
    clock.advance(by: .seconds(1))
    #expect(await eventually { log.value == ["now", "1s", "2s a", "2s b"] })
  }

  @Test("soon and due actions run in the order they were scheduled, past a batch of 64")
  func soonAndDueActionsKeepTheirOrder() async {
    let clock = ManualClock()
    let scheduler = ClockScheduler(clock: clock)
    let log = Box<[String]>([])
    var expected: [String] = []
    for index in 0..<150 {
      if index % 10 == 0 { expected.append("soon \(index)") }
      expected.append("due \(index)")
    }
    expected += ["soon late", "due late"]
    scheduler.schedule {
      // All scheduled while the worker runs this action: it finds them in one round, more due
      // actions than one batch takes, with soon actions among and after them.
      for index in 0..<150 {
        if index % 10 == 0 {
          scheduler.schedule { log.update { $0?.append("soon \(index)") } }
        }
        scheduler.schedule(after: scheduler.now) {
          log.update { $0?.append("due \(index)") }
          guard index == 10 else { return }
          // Scheduled while the first batch runs: after everything above.
          scheduler.schedule { log.update { $0?.append("soon late") } }
          scheduler.schedule(after: scheduler.now) { log.update { $0?.append("due late") } }
        }
      }
    }
    #expect(await eventually { log.value?.count == expected.count })
    #expect(log.value == expected)
  }

  @Test("an earlier action wakes a sleeping worker")
  func earlierActionWakesTheWorker() async {
    let clock = ManualClock()
    let scheduler = ClockScheduler(clock: clock)
    let log = Box<[String]>([])
    scheduler.schedule(after: scheduler.now.advanced(by: .seconds(60))) {
      log.update { $0?.append("60s") }
    }
    #expect(await eventually { clock.sleeperCount == 1 })
    scheduler.schedule { log.update { $0?.append("now") } }
    #expect(await eventually { log.value == ["now"] })
    clock.advance(by: .seconds(60))
    #expect(await eventually { log.value == ["now", "60s"] })
  }

  @Test func repeatingActionsStopWhenCancelled() async {
    let clock = ManualClock()
    let scheduler = ClockScheduler(clock: clock)
    let ticks = Box<Int>(0)
    let cancellable = scheduler.schedule(
      after: scheduler.now.advanced(by: .seconds(1)), interval: .seconds(1)
    ) { ticks.update { $0! += 1 } }
    for expected in 1...3 {
      #expect(await eventually { clock.sleeperCount == 1 })
      clock.advance(by: .seconds(1))
      #expect(await eventually { ticks.value == expected })
    }
    cancellable.cancel()
    clock.advance(by: .seconds(5))
    for _ in 0..<1_000 { await Task.yield() }
    #expect(ticks.value == 3)
  }

  @Test("100,000 actions scheduled from one thread run on the actor, in order")
  func actorSchedulerPreservesOrder() async {
    let counter = Counter()
    let scheduler = ActorScheduler(counter)
    let count = 100_000
    for value in 0..<count {
      scheduler.schedule {
        // Traps unless the action really runs isolated to `counter`.
        counter.assumeIsolated { $0.log.append(value) }
      }
    }
    #expect(await eventually { await counter.log.count == count })
    #expect(await counter.log == Array(0..<count))
  }

  @Test("bursts separated by quiet periods reuse the parked worker, in order")
  func parkedWorkerResumesForEachBurst() async {
    let counter = Counter()
    let scheduler = ActorScheduler(counter)
    for burst in 0..<50 {
      for value in 0..<20 {
        scheduler.schedule { counter.assumeIsolated { $0.log.append(burst * 20 + value) } }
      }
      // The worker empties the queue and parks before the next burst.
      #expect(await eventually { await counter.log.count == (burst + 1) * 20 })
    }
    #expect(await counter.log == Array(0..<1_000))
  }

  @Test("a released scheduler still runs what it scheduled, then its worker ends")
  func releasedSchedulerFinishesItsActionsAndEnds() async {
    weak var releasedActor: Counter?
    do {
      let counter = Counter()
      releasedActor = counter
      do {
        let scheduler = ActorScheduler(counter)
        for value in 0..<100 {
          scheduler.schedule { counter.assumeIsolated { $0.log.append(value) } }
        }
      }  // released at once, with actions still queued
      #expect(await eventually { await counter.log.count == 100 })
      #expect(await counter.log == Array(0..<100))
    }
    // The worker task held the actor; it returned instead of parking for good.
    #expect(await eventually { releasedActor == nil })
  }

  @Test("a released idle scheduler's parked worker ends")
  func releasedIdleSchedulerEndsItsParkedWorker() async {
    weak var releasedActor: Counter?
    do {
      let counter = Counter()
      releasedActor = counter
      let scheduler = ActorScheduler(counter)
      scheduler.schedule { counter.assumeIsolated { $0.log.append(1) } }
      #expect(await eventually { await counter.log == [1] })
      for _ in 0..<100 { await Task.yield() }  // the worker parks
      withExtendedLifetime(scheduler) {}
    }
    #expect(await eventually { releasedActor == nil })
  }

  @Test("a cancelled heartbeat wakes the worker asleep for it: released, the worker ends")
  func cancelledHeartbeatWakesTheSleepingWorker() async {
    weak var releasedClock: ManualClock?
    do {
      let clock = ManualClock()
      releasedClock = clock
      let scheduler = ClockScheduler(clock: clock)
      let heartbeat = scheduler.schedule(
        after: scheduler.now.advanced(by: .seconds(60)), interval: .seconds(60)
      ) {}
      // The worker sleeps until the heartbeat is due (a manual clock: never, unless woken).
      #expect(await eventually { clock.sleeperCount == 1 })
      heartbeat.cancel()
      #expect(await eventually { clock.sleeperCount == 0 }, "the worker slept on")
      withExtendedLifetime(scheduler) {}
    }
    // The worker held the clock (its sleep and `now` closures) until it ended.
    #expect(await eventually { releasedClock == nil })
  }

  @Test func mainActorScheduler() async {
    let scheduler = ActorScheduler(MainActor.shared)
    let log = Box<[Int]>([])
    for value in 0..<100 {
      scheduler.schedule {
        MainActor.assumeIsolated { log.update { $0?.append(value) } }
      }
    }
    #expect(await eventually { log.value?.count == 100 })
    #expect(log.value == Array(0..<100))
  }

  @Test func strideConversions() {
    typealias Stride = SchedulerDuration
    #expect(Stride.milliseconds(1_500) == Stride.seconds(1.5))
    #expect(Stride.seconds(2).duration == .seconds(2))
    #expect((3 as Stride).duration == .seconds(3))
    #expect(Stride.nanoseconds(-5).magnitude == .nanoseconds(5))
    let clock = ContinuousClock()
    let scheduler = ClockScheduler(clock: clock)
    let start = scheduler.now
    #expect(start.distance(to: start.advanced(by: .microseconds(7))) == .microseconds(7))
  }
}

@Suite("sink(isolatedTo:)")
struct IsolatedSinkTests {
  @Test("100,000 values reach the actor in order, then the completion")
  func ordering() async {
    let counter = Counter()
    let done = Box<Subscribers.Completion<Never>>()
    let cancellable = (0..<100_000).publisher.sink(
      isolatedTo: counter,
      receiveCompletion: { _, completion in done.set(completion) },
      receiveValue: { counter, value in counter.log.append(value) })
    #expect(await eventually { done.value != nil })
    #expect(done.value == .finished)
    #expect(await counter.log == Array(0..<100_000))
    cancellable.cancel()
  }

  @Test("a subject's values sent right after sink(isolatedTo:) returns are kept")
  func subjectsAreSubscribedAtOnce() async {
    let subject = PassthroughSubject<Int, Never>()
    let counter = Counter()
    let cancellable = subject.sink(isolatedTo: counter) { counter, value in counter.append(value) }
    for value in 0..<1_000 { subject.send(value) }
    #expect(await eventually { await counter.log.count == 1_000 })
    #expect(await counter.log == Array(0..<1_000))
    cancellable.cancel()
  }

  @Test("cancelling stops delivery and cancels the subscription")
  func cancellation() async {
    let upstream = TestPublisher<Int, Never>()
    let counter = Counter()
    let cancellable = upstream.sink(isolatedTo: counter) { counter, value in counter.append(value) }
    #expect(upstream.subscriptions[0].requests == [.max(64)])
    upstream.send(1)
    #expect(await eventually { await counter.log == [1] })
    cancellable.cancel()
    #expect(upstream.subscriptions[0].cancelCount == 1)
    upstream.send(2)
    for _ in 0..<1_000 { await Task.yield() }
    #expect(await counter.log == [1])
  }

  @Test func failureReachesTheCompletionClosure() async {
    let counter = Counter()
    let done = Box<Subscribers.Completion<TestError>>()
    let cancellable = Fail<Int, TestError>(error: TestError(code: 2)).sink(
      isolatedTo: counter, receiveCompletion: { _, completion in done.set(completion) },
      receiveValue: { _, _ in })
    #expect(await eventually { done.value != nil })
    #expect(done.value == .failure(TestError(code: 2)))
    cancellable.cancel()
  }
}
