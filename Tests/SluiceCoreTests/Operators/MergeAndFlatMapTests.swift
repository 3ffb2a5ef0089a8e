import Dispatch
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

/// `merge`, `MergeMany` and `flatMap`.
@Suite("merge and flatMap", .onThreadsOfTheirOwn)
struct MergeAndFlatMapTests {
  @Test func mergeAsksEachUpstreamForOneAtATimeAndHoldsOneBeyondTheDemand() throws {
    let a = TestPublisher<Int, Never>()
    let b = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    a.merge(with: b).subscribe(recorder)
    #expect(recorder.events.first == .subscription("Merge"))
    #expect(a.subscriptions[0].requests == [.max(1)])
    #expect(b.subscriptions[0].requests == [.max(1)])
    #expect(a.send(1) == 1)
    #expect(a.subscriptions[0].totalDemand == .max(2), "one more after a delivered value")
    b.send(10)  // no demand left: held
    #expect(recorder.values == [1])
    recorder.request(.max(1))
    #expect(recorder.values == [1, 10])
    #expect(b.subscriptions[0].requests == [.max(1), .max(1)])
    recorder.request(.unlimited)
    #expect(a.subscriptions[0].requests.last == .unlimited)
    #expect(b.subscriptions[0].requests.last == .unlimited)
    recorder.cancel()
  }

  @Test func mergeFinishesWhenAllFinishAndFailsAtTheFirstFailure() {
    let a = TestPublisher<Int, TestError>()
    let b = TestPublisher<Int, TestError>()
    let c = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>()
    a.merge(with: b, c).subscribe(recorder)
    a.send(completion: .finished)
    b.send(1)
    #expect(recorder.completion == nil)
    b.send(completion: .failure(TestError(code: 3)))
    #expect(recorder.completion == .failure(TestError(code: 3)))
    #expect(c.subscriptions[0].isCancelled)
    let done = RecordingSubscriber<Int, Never>()
    Publishers.MergeMany([Just(1), Just(2), Just(3)]).subscribe(done)
    #expect(done.values == [1, 2, 3])
    #expect(done.completion == .finished)
    let empty = RecordingSubscriber<Int, Never>()
    Publishers.MergeMany([Just<Int>]()).subscribe(empty)
    #expect(empty.completion == .finished)
  }

  @Test func mergeOfEightSubjectsSentFromEightThreadsLosesNothingAndKeepsEachOrder() async {
    let subjects = (0..<8).map { _ in PassthroughSubject<Int, Never>() }
    let checker = RuleChecker()
    let recorder = RecordingSubscriber<Int, Never>()
    Publishers.Merge8(
      subjects[0], subjects[1], subjects[2], subjects[3], subjects[4], subjects[5], subjects[6],
      subjects[7]
    ).checkingRules(checker).subscribe(recorder)
    await concurrently(8) { producer in
      for index in 0..<1_000 { subjects[producer].send(producer * 10_000 + index) }
    }
    let values = await recorder.waitForValues(count: 8_000, timeout: .seconds(600))
    for producer in 0..<8 {
      #expect(values.filter { $0 / 10_000 == producer }.map { $0 % 10_000 } == Array(0..<1_000))
    }
    #expect(checker.violations.isEmpty, "\(checker.violations)")
    recorder.cancel()
  }

  @Test func flatMapRequestsMaxPublishersAndOneMoreWhenAnInnerFinishes() throws {
    let outer = TestPublisher<Int, Never>()
    var inners: [PassthroughSubject<Int, Never>] = []
    let recorder = RecordingSubscriber<Int, Never>()
    outer.flatMap(maxPublishers: .max(2)) { _ -> PassthroughSubject<Int, Never> in
      let inner = PassthroughSubject<Int, Never>()
      inners.append(inner)
      return inner
    }.subscribe(recorder)
    #expect(recorder.events.first == .subscription("FlatMap"))
    #expect(outer.subscriptions[0].requests == [.max(2)])
    outer.send(1)
    outer.send(2)
    inners[0].send(10)
    inners[1].send(20)
    inners[0].send(completion: .finished)
    #expect(outer.subscriptions[0].requests == [.max(2), .max(1)])
    outer.send(completion: .finished)
    #expect(recorder.completion == nil, "an inner is still going")
    inners[1].send(completion: .finished)
    #expect(recorder.values == [10, 20])
    #expect(recorder.completion == .finished)
  }

  @Test func flatMapKeepsGoingWhenReturnedDemandMakesTheDemandUnlimited() {
    let recorder = RecordingSubscriber<Int, Never>(
      initialDemand: .max(1), demandPerValue: .unlimited)
    Just(0).flatMap { _ in (1...5).publisher }.subscribe(recorder)
    #expect(recorder.values == [1, 2, 3, 4, 5])
    #expect(recorder.completion == .finished)
  }

  @Test func flatMapFailsWithoutCancellingTheFailedUpstreamButCancelsItsInners() {
    let outer = TestPublisher<Int, TestError>()
    let inner = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>()
    outer.flatMap { _ in inner }.subscribe(recorder)
    outer.send(1)
    outer.send(completion: .failure(TestError(code: 4)))
    #expect(recorder.completion == .failure(TestError(code: 4)))
    #expect(outer.subscriptions[0].cancelCount == 0, "the outer has already failed")
    #expect(inner.subscriptions[0].cancelCount == 1)
  }

  @Test func flatMapFailureAdaptingOverloads() {
    let never = PassthroughSubject<Int, Never>()
    let failing = RecordingSubscriber<Int, TestError>()
    never.flatMap { Just($0).setFailureType(to: TestError.self) }.subscribe(failing)
    never.send(1)
    let both = RecordingSubscriber<Int, TestError>()
    PassthroughSubject<Int, TestError>().flatMap { Just($0) }.subscribe(both)
    #expect(failing.values == [1])
    failing.cancel()
    both.cancel()
  }
}
