import SluiceCore
import SluiceTesting
import Testing

/// `switchToLatest()`.
@Suite("switchToLatest")
struct SwitchToLatestTests {
  @Test func switchingCancelsThePreviousInnerAndCarriesTheDemand() throws {
    let outer = PassthroughSubject<TestPublisher<Int, Never>, Never>()
    let first = TestPublisher<Int, Never>()
    let second = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(3))
    outer.switchToLatest().subscribe(recorder)
    #expect(recorder.events.first == .subscription("SwitchToLatest"))
    outer.send(first)
    #expect(first.subscriptions[0].requests == [.max(3)])
    first.send(1)
    outer.send(second)
    #expect(first.subscriptions[0].isCancelled)
    #expect(second.subscriptions[0].requests == [.max(2)], "what is still outstanding")
    first.send(99)  // the old inner, too late: ignored
    second.send(2)
    recorder.request(.max(1))
    #expect(second.subscriptions[0].requests == [.max(2), .max(1)])
    #expect(recorder.values == [1, 2])
    recorder.cancel()
  }

  @Test func finishesOnceTheUpstreamAndTheCurrentInnerHaveFinished() {
    let outer = PassthroughSubject<TestPublisher<Int, Never>, Never>()
    let inner = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    outer.switchToLatest().subscribe(recorder)
    outer.send(inner)
    outer.send(completion: .finished)
    #expect(recorder.completion == nil, "the inner is still going")
    inner.send(5)
    inner.send(completion: .finished)
    #expect(recorder.values == [5])
    #expect(recorder.completion == .finished)
  }

  @Test func aFailureOfEitherSideFailsAtOnceAndCancelsTheOther() {
    let outer = PassthroughSubject<TestPublisher<Int, TestError>, TestError>()
    let inner = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>()
    let upstream = TestPublisher<TestPublisher<Int, TestError>, TestError>()
    upstream.switchToLatest().subscribe(recorder)
    upstream.send(inner)
    inner.send(completion: .failure(TestError(code: 7)))
    #expect(recorder.completion == .failure(TestError(code: 7)))
    #expect(upstream.subscriptions[0].isCancelled)

    let recorder2 = RecordingSubscriber<Int, TestError>()
    let inner2 = TestPublisher<Int, TestError>()
    outer.switchToLatest().subscribe(recorder2)
    outer.send(inner2)
    outer.send(completion: .failure(TestError(code: 8)))
    #expect(recorder2.completion == .failure(TestError(code: 8)))
    #expect(inner2.subscriptions[0].isCancelled)
  }

  @Test func failureAdaptingOverloadsCompileAndWork() {
    // A publisher that cannot fail, of publishers that can (the search-as-you-type shape)...
    let queries = PassthroughSubject<String, Never>()
    let results = RecordingSubscriber<Int, TestError>()
    queries.map { Just($0.count).setFailureType(to: TestError.self) }.switchToLatest()
      .subscribe(results)
    queries.send("abc")
    #expect(results.values == [3])
    // ... and one that can fail, of publishers that cannot.
    let failing = PassthroughSubject<Int, TestError>()
    let doubled = RecordingSubscriber<Int, TestError>()
    failing.map { Just($0 * 2) }.switchToLatest().subscribe(doubled)
    failing.send(21)
    #expect(doubled.values == [42])
    results.cancel()
    doubled.cancel()
  }

  @Test func aValueBeyondTheDemandTraps() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let outer = PassthroughSubject<TestPublisher<Int, Never>, Never>()
      let inner = TestPublisher<Int, Never>()
      outer.switchToLatest().subscribe(RecordingSubscriber<Int, Never>(initialDemand: .none))
      outer.send(inner)
      inner.send(1)
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: SwitchToLatest received a value with no outstanding demand"))
  }

  @Test func cancelCancelsTheInnerFirstAsCombine() {
    let log = Box<[String]>([])
    let inner = PassthroughSubject<Int, Never>().handleEvents(receiveCancel: {
      log.update { $0?.append("inner") }
    })
    let outer = PassthroughSubject<Publishers.HandleEvents<PassthroughSubject<Int, Never>>, Never>()
    let cancellable = outer.handleEvents(receiveCancel: { log.update { $0?.append("outer") } })
      .switchToLatest().sink { _ in }
    outer.send(inner)
    cancellable.cancel()
    #expect(log.value == ["inner", "outer"])
  }

  @Test func anInnerCompletionBeforeItsSubscriptionTraps() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let inner = HeldPublisher<Int, Never>()
      let outer = PassthroughSubject<HeldPublisher<Int, Never>, Never>()
      let cancellable = outer.switchToLatest().sink { _ in }
      outer.send(inner)
      inner.send(completion: .finished)
      withExtendedLifetime(cancellable) {}
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: SwitchToLatest received a completion before its upstream subscription"))
  }
}
