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
    // As Combine: one value at the subscription, one per request of the downstream (here its
    // first, .unlimited), and one more per value received (the returned demand).
    #expect(source.subscriptions[0].requests == [.max(1), .max(1)])
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
    #expect(log.requests == [.max(1)], "one value at the subscription, not .unlimited")
    #expect(source.send(1) == .max(1), "one more per value")
    recorder.request(.max(2))
    #expect(log.requests == [.max(1), .max(1)], "and one more per request of the downstream")
    recorder.cancel()
  }
}
