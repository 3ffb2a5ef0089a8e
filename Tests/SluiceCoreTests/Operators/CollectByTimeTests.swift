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
    #expect(source.subscriptions[0].requests == [.unlimited])
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
}
