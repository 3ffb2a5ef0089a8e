import Dispatch
import SluiceCore
import SluiceTesting
import Testing

/// `debounce(for:scheduler:)` on virtual time.
@Suite("debounce")
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
    concurrently(8) { producer in
      for index in 0..<200 { subject.send(producer * 1_000 + index) }
    }
    _ = await recorder.waitForValues(count: 1)
    // A sentinel sent after the burst is the next value: nothing else came out of the burst.
    subject.send(-1)
    let values = await recorder.waitForValues(count: 2)
    #expect(values.count == 2)
    #expect(values.last == -1, "one burst, one value, then the sentinel")
    #expect(checker.violations.isEmpty, "\(checker.violations)")
  }
}
