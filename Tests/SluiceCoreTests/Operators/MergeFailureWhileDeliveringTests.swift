import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Synchronization
import Testing

/// A failure from one upstream of a merge while another upstream's value is being delivered on
/// another thread: signals stay serial, the failure comes after that value, once.
@Suite("merge: a failure during a delivery", .onThreadsOfTheirOwn)
struct MergeFailureWhileDeliveringTests {
  /// Events in order, with a gate that stops inside `receive` for value 1.
  final class Log: @unchecked Sendable {
    // Safety: the lock guards `events`; the semaphores synchronise the threads.
    let lock = NSLock()
    var events: [String] = []
    let entered = DispatchSemaphore(value: 0)
    let proceed = DispatchSemaphore(value: 0)
    let inside = Atomic<Bool>(false)

    func record(_ event: String) {
      // A signal that starts while another is in progress is recorded as overlapping.
      if inside.exchange(true, ordering: .acquiringAndReleasing) {
        lock.withLock { events.append("overlap") }
      }
      lock.withLock { events.append(event) }
      if event == "1" {
        entered.signal()
        proceed.wait()
      }
      inside.store(false, ordering: .releasing)
    }

    var recorded: [String] { lock.withLock { events } }
  }

  @Test func theFailureWaitsForTheValueBeingDelivered() {
    let a = PassthroughSubject<Int, TestError>()
    let b = PassthroughSubject<Int, TestError>()
    let log = Log()
    let cancellable = a.merge(with: b).sink(
      receiveCompletion: { completion in
        log.record(completion == .finished ? "finished" : "failed")
      },
      receiveValue: { log.record("\($0)") })
    let delivered = sendOneFromAnotherThread(a, until: log.entered)
    b.send(completion: .failure(TestError()))  // returns at once: the deliverer owes it
    #expect(log.recorded == ["1"])
    log.proceed.signal()
    delivered.wait()
    #expect(log.recorded == ["1", "failed"])
    a.send(2)
    #expect(log.recorded == ["1", "failed"])
    cancellable.cancel()
  }

  @Test func aCancelBeforeTheDeliveryReturnsDropsTheOwedFailure() {
    let a = PassthroughSubject<Int, TestError>()
    let b = PassthroughSubject<Int, TestError>()
    let log = Log()
    let cancellable = a.merge(with: b).sink(
      receiveCompletion: { _ in log.record("completion") }, receiveValue: { log.record("\($0)") })
    let delivered = sendOneFromAnotherThread(a, until: log.entered)
    b.send(completion: .failure(TestError()))
    cancellable.cancel()  // nothing after cancel() returns, not even the owed failure
    log.proceed.signal()
    delivered.wait()
    #expect(log.recorded == ["1"])
  }

  @Test("8 upstreams sending and failing from 8 threads: serial, one completion, last")
  func concurrentValuesAndFailures() async {
    for _ in 0..<200 {
      let subjects = (0..<8).map { _ in PassthroughSubject<Int, TestError>() }
      let checker = RuleChecker()
      let recorder = RecordingSubscriber<Int, TestError>()
      Publishers.MergeMany(subjects).checkingRules(checker).subscribe(recorder)
      let shared = Shared(subjects)
      await concurrently(8) { index in
        for value in 0..<50 { shared.value[index].send(value) }
        if index % 3 == 0 { shared.value[index].send(completion: .failure(TestError())) }
      }
      #expect(recorder.completion == .failure(TestError()))
      #expect(checker.violations.isEmpty, "\(checker.violations.prefix(3))")
    }
  }
}
