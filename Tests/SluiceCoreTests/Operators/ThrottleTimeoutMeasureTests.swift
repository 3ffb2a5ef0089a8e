import Dispatch
import SluiceCore
import SluiceTesting
import Testing

/// `throttle`, `timeout` and `measureInterval` on virtual time.
@Suite("throttle, timeout, measureInterval")
struct ThrottleTimeoutMeasureTests {
  @Test(arguments: [false, true])
  func throttleEmitsOnePerIntervalTheFirstOrTheLatest(latest: Bool) throws {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    source.throttle(for: .seconds(1), scheduler: scheduler, latest: latest).subscribe(recorder)
    #expect(source.subscriptions[0].requests == [.unlimited])
    let subscription = try #require(recorder.subscription)
    #expect(String(describing: subscription) == "Throttle")
    source.send(1)
    scheduler.advance()
    #expect(recorder.values == [1], "the first value goes at once")
    scheduler.advance(by: .milliseconds(100))
    source.send(2)
    source.send(3)
    scheduler.advance(by: .milliseconds(899))
    #expect(recorder.values == [1])
    scheduler.advance(by: .milliseconds(1))
    #expect(recorder.values == [1, latest ? 3 : 2])
    scheduler.advance(by: .seconds(5))
    source.send(4)
    source.send(completion: .finished)
    scheduler.advance()
    #expect(recorder.values == [1, latest ? 3 : 2, 4])
    #expect(recorder.completion == .finished, "after the value waiting for its emission")
  }

  @Test func throttleDropsValuesThatFindNoDemand() {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    source.throttle(for: .seconds(1), scheduler: scheduler, latest: true).subscribe(recorder)
    source.send(1)
    source.send(2)
    scheduler.advance(by: .seconds(3))
    #expect(recorder.values == [1])
    recorder.request(.max(1))
    source.send(3)
    scheduler.advance()
    #expect(recorder.values == [1, 3])
    recorder.cancel()
    #expect(source.subscriptions[0].isCancelled)
  }

  @Test func timeoutFailsWithTheCustomErrorWhenTheUpstreamIsSilent() throws {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>()
    source.timeout(.seconds(2), scheduler: scheduler, customError: { TestError(code: 408) })
      .subscribe(recorder)
    #expect(String(describing: try #require(recorder.subscription)) == "Timeout")
    #expect(source.subscriberDescriptions == ["Timeout"])
    scheduler.advance(by: .seconds(1))
    source.send(1)
    scheduler.advance(by: .milliseconds(1_999))
    #expect(recorder.values == [1], "values arrive on the scheduler")
    #expect(recorder.completion == nil, "the clock restarted at the value")
    scheduler.advance(by: .milliseconds(1))
    #expect(recorder.completion == .failure(TestError(code: 408)))
    #expect(source.subscriptions[0].isCancelled)
    #expect(scheduler.pendingActionCount == 0)
  }

  @Test func timeoutFinishesWithoutACustomErrorAndPassesACompletionOn() {
    let scheduler = DispatchQueue.test
    let silent = TestPublisher<Int, Never>()
    let finished = RecordingSubscriber<Int, Never>()
    silent.timeout(.seconds(1), scheduler: scheduler).subscribe(finished)
    scheduler.advance(by: .seconds(1))
    #expect(finished.completion == .finished)
    let quick = RecordingSubscriber<Int, Never>()
    [1, 2].publisher.timeout(.seconds(1), scheduler: scheduler).subscribe(quick)
    scheduler.advance()
    #expect(quick.values == [1, 2])
    #expect(quick.completion == .finished)
    scheduler.advance(by: .seconds(5))
    #expect(quick.events.count == 4, "no timeout after the completion")
  }

  @Test func measureIntervalPublishesTheTimeBetweenValues() throws {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<DispatchQueue.SchedulerTimeType.Stride, Never>(
      initialDemand: .max(1), demandPerValue: .max(1))
    source.measureInterval(using: scheduler).subscribe(recorder)
    #expect(String(describing: try #require(recorder.subscription)) == "MeasureInterval")
    scheduler.advance(by: .milliseconds(250))
    source.send(1)
    scheduler.advance(by: .seconds(2))
    source.send(2)
    #expect(recorder.values == [.milliseconds(250), .seconds(2)])
    #expect(source.subscriptions[0].requests == [.max(1), .max(1), .max(1)])
    recorder.cancel()
  }

  @Test func theTimeoutIsDeliveredInsideTheTimersActionAsCombine() {
    let scheduler = ObservedScheduler()
    let source = TestPublisher<Int, Never>()
    let insideTimer = Box<Bool>()
    let cancellable = source.timeout(.seconds(1), scheduler: scheduler).sink(
      receiveCompletion: { _ in insideTimer.set(scheduler.inTimer.load(ordering: .relaxed)) },
      receiveValue: { _ in })
    scheduler.base.advance(by: .seconds(1))
    #expect(insideTimer.value == true, "no extra scheduled action after the timer fired")
    withExtendedLifetime(cancellable) {}
  }
}
