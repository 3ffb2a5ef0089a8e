import SluiceCore
import SluiceTesting
import Testing

@Suite("RecordingSubscriber")
struct RecordingSubscriberTests {
  @Test func recordsTheFullHistoryWithScriptedDemand() {
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2)) { value in
      value == 2 ? .max(1) : .none
    }
    [1, 2, 3, 4].publisher.subscribe(recorder)
    #expect(recorder.events == [.subscription("[1, 2, 3, 4]"), .value(1), .value(2), .value(3)])
    recorder.request(.max(1))
    #expect(recorder.values == [1, 2, 3, 4])
    #expect(recorder.completion == .finished)
    #expect(recorder.subscription == nil, "released on completion")
  }

  @Test func cancelsASecondSubscriptionButRecordsIt() {
    let recorder = RecordingSubscriber<Int, Never>()
    let first = TestSubscription(description: "first")
    let second = TestSubscription(description: "second")
    recorder.receive(subscription: first)
    recorder.receive(subscription: second)
    #expect(recorder.subscriptionCount == 2)
    #expect(second.cancelCount == 1 && first.cancelCount == 0)
    recorder.cancel()
    #expect(first.cancelCount == 1)
  }

  @Test func waitingReturnsAtOnceWhenAlreadySatisfied() async {
    let recorder = RecordingSubscriber<Int, Never>()
    Just(1).subscribe(recorder)
    #expect(await recorder.waitForCompletion() == .finished)
    #expect(await recorder.waitForValues(count: 1) == [1])
  }

  @Test func waitingTimesOutAsASafetyNet() async {
    let recorder = RecordingSubscriber<Int, Never>()
    Empty<Int, Never>(completeImmediately: false).subscribe(recorder)
    #expect(await recorder.waitForCompletion(timeout: .milliseconds(10)) == nil)
  }
}

@Suite("TestPublisher and TestSubscription")
struct TestPublisherTests {
  @Test func recordsRequestsDeliveriesAndCancels() {
    let publisher = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2), demandPerValue: .max(1))
    publisher.subscribe(recorder)
    let subscription = publisher.subscriptions[0]
    #expect(subscription.requests == [.max(2)])
    #expect(publisher.send(1) == 1)
    #expect(subscription.totalDemand == .max(3))
    #expect(subscription.deliveredCount == 1)
    #expect(subscription.outstandingDemand == .max(2))
    recorder.cancel()
    #expect(subscription.isCancelled)
    #expect(publisher.send(2) == 0, "cancelled subscribers receive nothing")
    #expect(recorder.values == [1])
  }

  @Test func deliversRegardlessOfDemandSoTestsCanMisbehave() {
    let publisher = TestPublisher<Int, TestingError>()
    let recorder = RecordingSubscriber<Int, TestingError>(initialDemand: .none)
    publisher.subscribe(recorder)
    publisher.send(1)
    publisher.send(completion: .failure(TestingError()))
    #expect(recorder.values == [1])
    #expect(recorder.completion == .failure(TestingError()))
  }
}

struct TestingError: Error, Equatable {}
