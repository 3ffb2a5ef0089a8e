import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

/// `drop(untilOutputFrom:)` and `prefix(untilOutputFrom:)`.
@Suite("untilOutputFrom", .onThreadsOfTheirOwn)
struct UntilOutputFromTests {
  @Test func dropDropsUntilTheTriggerSendsThenCancelsTheTrigger() {
    let upstream = TestPublisher<Int, Never>()
    let trigger = TestPublisher<Void, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(3))
    upstream.drop(untilOutputFrom: trigger).subscribe(recorder)
    #expect(recorder.events.first == .subscription("DropUntilOutput"))
    #expect(trigger.subscriptions[0].requests == [.max(1)])
    #expect(upstream.subscriptions[0].requests == [.max(3)])
    upstream.send(1)  // dropped; uses one unit of demand, as in Combine
    trigger.send(())
    #expect(trigger.subscriptions[0].isCancelled)
    upstream.send(2)
    upstream.send(3)
    #expect(recorder.values == [2, 3])
    upstream.send(completion: .finished)
    #expect(recorder.completion == .finished)
  }

  @Test func dropEndsWithTheTriggersCompletionWhenItNeverSent() {
    let upstream = TestPublisher<Int, TestError>()
    let trigger = TestPublisher<Void, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>()
    upstream.drop(untilOutputFrom: trigger).subscribe(recorder)
    trigger.send(completion: .failure(TestError(code: 2)))
    #expect(recorder.completion == .failure(TestError(code: 2)))
    #expect(upstream.subscriptions[0].isCancelled)
    let finished = RecordingSubscriber<Int, Never>()
    [1, 2].publisher.drop(untilOutputFrom: Empty<Void, Never>()).subscribe(finished)
    #expect(finished.values == [])
    #expect(finished.completion == .finished)
  }

  @Test func prefixRepublishesUntilTheTriggerSendsThenFinishes() {
    let upstream = TestPublisher<Int, Never>()
    let trigger = TestPublisher<Void, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    upstream.prefix(untilOutputFrom: trigger).subscribe(recorder)
    #expect(recorder.events.first == .subscription("PrefixUntilOutput"))
    #expect(trigger.subscriptions[0].requests == [.max(1)])
    upstream.send(1)
    upstream.send(2)
    trigger.send(())
    upstream.send(3)
    #expect(recorder.values == [1, 2])
    #expect(recorder.completion == .finished)
    #expect(upstream.subscriptions[0].isCancelled)
    #expect(trigger.subscriptions[0].isCancelled)
  }

  @Test func prefixIgnoresATriggerThatCompletesWithoutAValue() {
    let upstream = TestPublisher<Int, Never>()
    let trigger = TestPublisher<Void, TestError>()
    let recorder = RecordingSubscriber<Int, Never>()
    upstream.prefix(untilOutputFrom: trigger).subscribe(recorder)
    trigger.send(completion: .failure(TestError()))
    upstream.send(1)
    upstream.send(completion: .finished)
    #expect(recorder.values == [1])
    #expect(recorder.completion == .finished)
  }

  @Test func aTriggerFiringBeforeTheUpstreamSubscribesFinishesAfterTheSubscription() {
    let recorder = RecordingSubscriber<Int, Never>()
    [1, 2, 3].publisher.prefix(untilOutputFrom: Just(())).subscribe(recorder)
    #expect(recorder.events == [.subscription("PrefixUntilOutput"), .completion(.finished)])
    let dropped = RecordingSubscriber<Int, Never>()
    [1, 2, 3].publisher.drop(untilOutputFrom: Just(())).subscribe(dropped)
    #expect(dropped.values == [1, 2, 3])
  }

  @Test func signalsStaySerialWhenTheTriggerFiresOnAnotherThread() async {
    for _ in 0..<200 {
      let upstream = PassthroughSubject<Int, Never>()
      let trigger = PassthroughSubject<Void, Never>()
      let checker = RuleChecker()
      let recorder = RecordingSubscriber<Int, Never>()
      upstream.prefix(untilOutputFrom: trigger).checkingRules(checker).subscribe(recorder)
      await concurrently(2) { side in
        if side == 0 {
          for value in 0..<50 { upstream.send(value) }
        } else {
          trigger.send(())
        }
      }
      #expect(recorder.completion == .finished)
      #expect(recorder.values == Array(0..<recorder.values.count))
      #expect(checker.violations.isEmpty, "\(checker.violations)")
    }
  }

  @Test func aTriggerValueBeforeTheTriggersSubscriptionIsIgnored() {
    let upstream = TestPublisher<Int, Never>()
    let trigger = HeldPublisher<Void, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    upstream.prefix(untilOutputFrom: trigger).subscribe(recorder)
    _ = trigger.send(())  // before its subscription: ignored, as Combine
    upstream.send(1)
    #expect(recorder.values == [1])
    #expect(recorder.completion == nil)
    trigger.send(subscription: Subscriptions.empty)
    _ = trigger.send(())
    #expect(recorder.completion == .finished)
    let dropUpstream = TestPublisher<Int, Never>()
    let dropTrigger = HeldPublisher<Void, Never>()
    let dropped = RecordingSubscriber<Int, Never>()
    dropUpstream.drop(untilOutputFrom: dropTrigger).subscribe(dropped)
    _ = dropTrigger.send(())  // ignored: values are still dropped
    dropUpstream.send(1)
    #expect(dropped.values == [])
    dropped.cancel()
  }

  @Test func prefixIgnoresAnUpstreamCompletionBeforeItsSubscription() {
    let upstream = HeldPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    upstream.prefix(untilOutputFrom: Empty<Void, Never>(completeImmediately: false))
      .subscribe(recorder)
    upstream.send(completion: .finished)
    #expect(recorder.events.isEmpty, "no completion to a downstream without a subscription")
    upstream.send(subscription: Subscriptions.empty)
    #expect(recorder.events == [.subscription("PrefixUntilOutput")])
    recorder.cancel()
  }

  @Test func nothingIsCancelledThatHasJustCompleted() {
    for makesPrefix in [true, false] {
      let upstream = TestPublisher<Int, Never>()
      let trigger = TestPublisher<Void, Never>()
      let recorder = RecordingSubscriber<Int, Never>()
      if makesPrefix {
        upstream.prefix(untilOutputFrom: trigger).subscribe(recorder)
      } else {
        upstream.drop(untilOutputFrom: trigger).subscribe(recorder)
      }
      upstream.send(completion: .finished)
      #expect(recorder.completion == .finished)
      #expect(!upstream.subscriptions[0].isCancelled, "the upstream completed: not cancelled")
      #expect(trigger.subscriptions[0].isCancelled)
    }
    let upstream = TestPublisher<Int, Never>()
    let trigger = TestPublisher<Void, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    upstream.drop(untilOutputFrom: trigger).subscribe(recorder)
    trigger.send(completion: .finished)
    #expect(recorder.completion == .finished)
    #expect(upstream.subscriptions[0].isCancelled)
    #expect(!trigger.subscriptions[0].isCancelled, "the trigger completed: not cancelled")
  }
}
