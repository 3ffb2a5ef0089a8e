import Dispatch
import SluiceCore
import SluiceTesting
import Testing

/// `delay(for:tolerance:scheduler:)` on virtual time.
@Suite("delay")
struct DelayTests {
  @Test func valuesAndCompletionArriveOneIntervalLaterInOrder() throws {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2), demandPerValue: .max(1))
    source.delay(for: .seconds(1), scheduler: scheduler).subscribe(recorder)
    let subscription = try #require(recorder.subscription)
    #expect(String(describing: subscription) == "Delay")
    source.send(1)
    scheduler.advance(by: .milliseconds(500))
    source.send(2)
    scheduler.advance(by: .milliseconds(500))
    #expect(recorder.values == [1])
    #expect(source.subscriptions[0].requests == [.max(2), .max(1)], "returned demand, on delivery")
    source.send(completion: .finished)
    scheduler.advance(by: .milliseconds(500))
    #expect(recorder.values == [1, 2])
    #expect(recorder.completion == nil)
    scheduler.advance(by: .milliseconds(500))
    #expect(recorder.completion == .finished)
  }

  @Test func cancelDropsWhatIsStillDelayed() {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    source.delay(for: .seconds(1), scheduler: scheduler).subscribe(recorder)
    source.send(1)
    recorder.cancel()
    #expect(source.subscriptions[0].isCancelled)
    scheduler.advance(by: .seconds(2))
    #expect(recorder.values.isEmpty)
  }
}
