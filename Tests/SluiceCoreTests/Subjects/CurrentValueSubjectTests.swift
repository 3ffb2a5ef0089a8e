import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

@Suite("CurrentValueSubject", .onThreadsOfTheirOwn)
struct CurrentValueSubjectTests {
  @Test func sendsTheCurrentValueOnFirstDemand() {
    let subject = CurrentValueSubject<Int, Never>(1)
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    subject.subscribe(recorder)
    #expect(recorder.values.isEmpty)
    subject.value = 2
    recorder.request(.max(1))
    #expect(recorder.values == [2])
    #expect(recorder.events.first == .subscription("CurrentValueSubject"))
    recorder.cancel()
  }

  @Test func aSubscriberWithoutDemandCatchesUpWithTheLatestValue() {
    let subject = CurrentValueSubject<Int, Never>(0)
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    subject.subscribe(recorder)
    subject.send(1)  // no demand left: missed
    subject.send(2)  // missed
    recorder.request(.max(1))  // delivers the latest: 2
    subject.send(3)  // no demand: missed
    recorder.request(.max(2))  // latest: 3, one demand left
    subject.send(4)
    #expect(recorder.values == [0, 2, 3, 4])
    recorder.cancel()
  }

  @Test func valueIsUpdatedBySendAndReadableFromManyThreads() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let shared = Shared(subject)
    await concurrently(8) { thread in
      for index in 0..<1_000 {
        shared.value.value = thread * 1_000 + index
        _ = shared.value.value
      }
    }
    #expect((0..<8_000).contains(subject.value))
    subject.send(42)
    #expect(subject.value == 42)
  }

  @Test func completionIsReplayedAndValueStillStored() {
    let subject = CurrentValueSubject<Int, TestError>(1)
    let recorder = RecordingSubscriber<Int, TestError>()
    subject.subscribe(recorder)
    subject.send(completion: .finished)
    subject.value = 5
    #expect(subject.value == 5)
    #expect(recorder.values == [1])
    let late = RecordingSubscriber<Int, TestError>()
    subject.subscribe(late)
    #expect(late.events == [.subscription("Empty"), .completion(.finished)])
  }

  @Test func concurrentSendersNeverExceedDemand() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let checker = RuleChecker()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(100), demandPerValue: .none)
    subject.checkingRules(checker).subscribe(recorder)
    let shared = Shared(subject)
    await concurrently(8) { thread in
      for index in 0..<1_000 { shared.value.send(thread * 1_000 + index) }
    }
    #expect(recorder.values.count == 100)
    #expect(checker.violations.isEmpty, "\(checker.violations.prefix(3))")
    recorder.cancel()
  }
}
