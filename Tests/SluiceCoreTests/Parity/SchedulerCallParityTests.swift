import Dispatch
import SluiceCore
import SluiceTesting
import Testing

/// When `throttle`, `debounce` and `measureInterval` read their scheduler's clock, and with
/// what options they schedule: as Combine, so that a test scheduler logging its calls sees the
/// same calls.
@Suite("Scheduler calls as Combine's")
struct SchedulerCallParityTests {
  @Test func throttleReadsTheClockWhenCombineDoes() {
    let scheduler = ObservedScheduler()
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    source.throttle(for: .seconds(1), scheduler: scheduler, latest: true).subscribe(recorder)
    #expect(scheduler.reads == 2, "when created and when subscribed")
    source.send(1)
    source.send(2)
    #expect(scheduler.reads == 4, "once per value while live")
    scheduler.base.advance()
    #expect(recorder.values == [2], "the latest")
    #expect(scheduler.reads == 5, "and once to emit a value")
    recorder.cancel()
    source.send(3)
    scheduler.base.advance(by: .seconds(2))
    #expect(scheduler.reads == 5, "never after cancel()")
  }

  @Test func throttleReadsTheClockOnCompletionButNotToEmitIt() {
    let scheduler = ObservedScheduler()
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    source.throttle(for: .seconds(1), scheduler: scheduler, latest: false).subscribe(recorder)
    source.send(completion: .finished)
    #expect(scheduler.reads == 3)
    scheduler.base.advance()
    #expect(recorder.completion == .finished)
    #expect(scheduler.reads == 3)
  }

  @Test func measureIntervalReadsTheClockOnlyWhileMeasuring() {
    let scheduler = ObservedScheduler()
    let source = HeldPublisher<Int, Never>()
    let cancellable = source.measureInterval(using: scheduler).sink { _ in }
    source.send(subscription: Subscriptions.empty)
    #expect(scheduler.reads == 1, "at the subscription")
    _ = source.send(1)
    #expect(scheduler.reads == 2)
    cancellable.cancel()
    _ = source.send(2)  // a misbehaving upstream
    #expect(scheduler.reads == 2, "never after cancel()")
  }

  @Test func debounceReadsTheClockOnlyWhileSubscribedAndSchedulesItsCompletionWithoutOptions() {
    let scheduler = ObservedScheduler()
    let source = HeldPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    source.debounce(for: .seconds(1), scheduler: scheduler, options: .init(qos: .background))
      .subscribe(recorder)
    source.send(subscription: Subscriptions.empty)
    _ = source.send(1)
    #expect(scheduler.reads == 1)
    source.send(completion: .finished)
    #expect(scheduler.immediateOptions.withLock { $0 } == [false], "the completion: no options")
    _ = source.send(2)  // a misbehaving upstream
    #expect(scheduler.reads == 1, "never after the completion")
    scheduler.base.run()  // the completion is still scheduled: deliver it (it holds the pipeline)
  }
}
