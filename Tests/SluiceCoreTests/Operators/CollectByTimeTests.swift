import Dispatch
import SluiceCore
import SluiceTesting
import Testing

/// `collect(.byTime)` and `collect(.byTimeOrCount)` on virtual time.
@Suite("collect by time")
struct CollectByTimeTests {
  @Test func byTimePublishesWhatArrivedInEachInterval() throws {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<[Int], Never>()
    source.collect(.byTime(scheduler, .seconds(1))).subscribe(recorder)
    #expect(String(describing: try #require(recorder.subscription)) == "CollectByTime")
    // As Combine: one value per request of the downstream (here its first, .unlimited), and one
    // more per value received (the returned demand).
    #expect(source.subscriptions[0].requests == [.max(1)])
    source.send(1)
    source.send(2)
    scheduler.advance(by: .seconds(1))
    #expect(recorder.values == [[1, 2]])
    scheduler.advance(by: .seconds(1))
    #expect(recorder.values == [[1, 2]], "nothing arrived: nothing published")
    source.send(3)
    source.send(completion: .finished)
    #expect(recorder.values == [[1, 2], [3]])
    #expect(recorder.completion == .finished)
    #expect(scheduler.pendingActionCount == 0, "the timer is cancelled")
  }

  @Test func byTimeOrCountPublishesWhenFullAndAsksForCountPerArray() {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<[Int], Never>(initialDemand: .max(2))
    source.collect(.byTimeOrCount(scheduler, .seconds(1), 2)).subscribe(recorder)
    #expect(source.subscriptions[0].requests == [.max(4)])
    for value in 1...3 { source.send(value) }
    #expect(recorder.values == [[1, 2]])
    scheduler.advance(by: .seconds(1))
    #expect(recorder.values == [[1, 2], [3]])
    source.send(4)
    scheduler.advance(by: .seconds(1))
    #expect(recorder.values == [[1, 2], [3]], "no demand: the array waits")
    recorder.request(.max(1))
    #expect(recorder.values == [[1, 2], [3], [4]])
    recorder.cancel()
  }

  @Test func aFailureDropsWhatWasCollected() {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<[Int], TestError>()
    source.collect(.byTime(scheduler, .seconds(1))).subscribe(recorder)
    source.send(1)
    source.send(completion: .failure(TestError(code: 4)))
    #expect(recorder.values == [])
    #expect(recorder.completion == .failure(TestError(code: 4)))
  }

  @Test func byTimeKeepsBackpressureAsCombine() {
    let scheduler = DispatchQueue.test
    final class RequestLog: Subscription, @unchecked Sendable {
      // Safety: used from the test's thread only.
      var requests: [Subscribers.Demand] = []
      func request(_ demand: Subscribers.Demand) { requests.append(demand) }
      func cancel() {}
    }
    let source = HeldPublisher<Int, Never>()
    let recorder = RecordingSubscriber<[Int], Never>(initialDemand: .none)
    source.collect(.byTime(scheduler, .seconds(1))).subscribe(recorder)
    let log = RequestLog()
    source.send(subscription: log)
    #expect(log.requests == [], "nothing before the downstream asks")
    recorder.request(.max(2))
    #expect(log.requests == [.max(1)], "one value per request of the downstream, not .unlimited")
    #expect(source.send(1) == .max(1), "one more per value")
    recorder.request(.max(1))
    #expect(log.requests == [.max(1), .max(1)])
    recorder.cancel()
  }

  /// Issue 40: a subscriber that requests inside `receive(subscription:)` gets one request of
  /// one value upstream for it and one per value, as in Combine — 101 for 100 values (the
  /// subscription itself asked once more: 102).
  @Test func aRequestInsideReceiveSubscriptionAsksTheUpstreamOnce() {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<[Int], Never>(initialDemand: .unlimited)
    source.collect(.byTime(scheduler, .seconds(1))).subscribe(recorder)
    for value in 1...100 { source.send(value) }
    let upstream = source.subscriptions[0]
    #expect(upstream.requests == [.max(1)])
    // The request and one per value (returned from `receive(_:)`): 101 values asked for.
    #expect(upstream.totalDemand == .max(101))
    scheduler.advance(by: .seconds(1))
    #expect(recorder.values == [Array(1...100)])
    recorder.cancel()  // ends the subscription the test started (and the timer it scheduled)
  }
}
