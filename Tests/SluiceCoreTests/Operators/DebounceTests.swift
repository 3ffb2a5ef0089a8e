import Dispatch
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Synchronization
import Testing

/// `debounce(for:scheduler:)` on virtual time.
@Suite("debounce", .onThreadsOfTheirOwn)
struct DebounceTests {
  @Test func publishesTheLastValueOfABurstOnceItIsQuiet() throws {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    source.debounce(for: .milliseconds(300), scheduler: scheduler).subscribe(recorder)
    #expect(source.subscriptions[0].requests == [.unlimited])
    let subscription = try #require(recorder.subscription)
    #expect(String(describing: subscription) == "Debounce")
    #expect(mirrorLabels(subscription) == ["downstream", "downstreamDemand", "currentValue"])
    source.send(1)
    scheduler.advance(by: .milliseconds(200))
    source.send(2)
    scheduler.advance(by: .milliseconds(200))
    source.send(3)
    #expect(recorder.values.isEmpty)
    scheduler.advance(by: .milliseconds(299))
    #expect(recorder.values.isEmpty)
    scheduler.advance(by: .milliseconds(1))
    #expect(recorder.values == [3])
    source.send(4)
    scheduler.advance(by: .seconds(1))
    #expect(recorder.values == [3, 4])
    #expect(scheduler.pendingActionCount == 0, "fired timers are cancelled")
    recorder.cancel()
  }

  @Test func aBurstKeepsOneTimerAndReArmsItForTheLastValue() {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    let counting = ObservedScheduler(scheduler)
    source.debounce(for: .milliseconds(300), scheduler: counting).subscribe(recorder)
    // Ten values 100 ms apart: one timer at a time, moved forward, never one per value.
    for value in 1...10 {
      source.send(value)
      #expect(scheduler.pendingActionCount == 1)
      scheduler.advance(by: .milliseconds(100))
    }
    // Armed at 0 ms for 300; re-armed when it fires for the latest deadline it finds: at 300
    // for 500, at 500 for 700, at 700 for 900, at 900 for 1100 (Combine: one per value).
    #expect(counting.timers == 5)
    #expect(recorder.values.isEmpty, "no 300 ms gap yet")
    // The last value came at 900 ms (the clock now reads 1000 ms): due at 1200 ms.
    scheduler.advance(by: .milliseconds(199))
    #expect(recorder.values.isEmpty)
    scheduler.advance(by: .milliseconds(1))
    #expect(recorder.values == [10])
    #expect(counting.timers == 6, "re-armed at 1100 for 1200")
    #expect(scheduler.pendingActionCount == 0)
    // Values at the same instant: the latest one comes out, once.
    source.send(11)
    source.send(12)
    scheduler.advance(by: .milliseconds(300))
    #expect(recorder.values == [10, 12])
    recorder.cancel()
  }

  @Test func onTheImmediateSchedulerEveryValueIsDueAtOnce() {
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    source.debounce(for: .seconds(1), scheduler: ImmediateScheduler.shared).subscribe(recorder)
    for value in 1...5 { source.send(value) }
    #expect(recorder.values == [1, 2, 3, 4, 5])
    source.send(completion: .finished)
    #expect(recorder.completion == .finished)
  }

  @Test func aValueSentByTheDownstreamWhileReceivingIsDebouncedToo() {
    let source = PassthroughSubject<Int, Never>()
    var received: [Int] = []
    let cancellable = source.debounce(for: .zero, scheduler: ImmediateScheduler.shared).sink {
      received.append($0)
      if $0 < 3 { source.send($0 + 1) }
    }
    source.send(1)
    #expect(received == [1, 2, 3])
    withExtendedLifetime(cancellable) {}
  }

  @Test func aValueThatComesDueWithoutDemandIsDropped() {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    source.debounce(for: .seconds(1), scheduler: scheduler).subscribe(recorder)
    source.send(1)
    scheduler.advance(by: .seconds(1))
    source.send(2)
    scheduler.advance(by: .seconds(1))
    #expect(recorder.values == [1])
    recorder.request(.max(1))
    source.send(3)
    scheduler.advance(by: .seconds(1))
    #expect(recorder.values == [1, 3])
    recorder.cancel()
  }

  @Test func completionIsScheduledAndAWaitingValueIsDroppedAsInCombine() {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>()
    source.debounce(for: .seconds(1), scheduler: scheduler).subscribe(recorder)
    source.send(1)
    source.send(completion: .finished)
    #expect(recorder.completion == nil, "the completion waits for the scheduler")
    scheduler.advance()
    #expect(recorder.values.isEmpty)
    #expect(recorder.completion == .finished)
    scheduler.advance(by: .seconds(2))
    #expect(recorder.values.isEmpty)
  }

  @Test func cancelStopsTheTimerAndTheUpstream() {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    source.debounce(for: .seconds(1), scheduler: scheduler).subscribe(recorder)
    source.send(1)
    recorder.cancel()
    #expect(source.subscriptions[0].isCancelled)
    #expect(scheduler.pendingActionCount == 0)
    scheduler.advance(by: .seconds(5))
    #expect(recorder.values.isEmpty)
  }

  @Test func burstsFromSeveralThreadsOnARealQueueDeliverOnlyQuietValues() async {
    let subject = PassthroughSubject<Int, Never>()
    let checker = RuleChecker()
    let recorder = RecordingSubscriber<Int, Never>()
    subject.debounce(for: .milliseconds(50), scheduler: DispatchQueue.global())
      .checkingRules(checker).subscribe(recorder)
    await concurrently(8) { producer in
      for index in 0..<200 { subject.send(producer * 1_000 + index) }
    }
    _ = await recorder.waitForValues(count: 1)
    // A sentinel sent after the burst is the next value: nothing else came out of the burst.
    subject.send(-1)
    let values = await recorder.waitForValues(count: 2)
    #expect(values.count == 2)
    #expect(values.last == -1, "one burst, one value, then the sentinel")
    #expect(checker.violations.isEmpty, "\(checker.violations)")
    recorder.cancel()
  }
}
