import Dispatch
import Foundation
import SluiceAsync
import SluiceTestSupport
import Synchronization
import Testing

/// Values whose `deinit` calls back into the bridge that drops them: a value the bridge lets go
/// of while it holds its own lock would re-enter that lock (`Mutex` is not recursive: a hang or
/// a trap). Each test runs in a process of its own, with a deadline against a hang.
@Suite(
  "Liveness: values whose deinit calls back into the async bridge that drops them", .serialized)
struct DeinitUnderBridgeLockTests {
  /// A value that may hold the stream it travels through (an app's event that keeps its
  /// session, which keeps the session's stream): a cycle the stream's buffer closes.
  final class Carrier: @unchecked Sendable {
    // Safety: `stream` is set once before the value is sent, and only released afterwards.
    var stream: AsyncStream<Carrier>?
  }

  /// A result whose `deinit` calls back (cancels the subscription that held it, again).
  typealias Resource = DeinitCallback

  /// `bufferingNewest(1)`: the second value evicts the first, whose `deinit` lets go of the
  /// last reference to the stream, whose iterator cancels the bridge.
  @Test("values(bufferingNewest:): an evicted value's deinit drops the stream it came through")
  func evictedValueDropsTheStream() async {
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        let subject = PassthroughSubject<Carrier, Never>()
        do {
          let first = Carrier()
          first.stream = subject.stream(bufferingPolicy: .bufferingNewest(1))
          subject.send(first)
        }
        subject.send(Carrier())
        // The bridge was cancelled: the subject has no subscriber left.
        var delivered = false
        let probe = subject.sink { _ in delivered = true }
        subject.send(Carrier())
        precondition(delivered)
        probe.cancel()
      }
    }
  }

  /// `asyncMap`: a result that waits for its turn (the step before it still runs) is let go of
  /// by `cancel()`; its `deinit` cancels the subscription again.
  @Test("asyncMap: cancel drops a waiting result whose deinit cancels again")
  func cancelDropsAWaitingResult() async {
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        let subject = PassthroughSubject<Int, Never>()
        let stored = Lock<(any Subscription)?>(nil)
        let second = DispatchSemaphore(value: 0)
        subject.asyncMap(maxConcurrent: 2) { value -> Resource? in
          guard value == 1 else {
            // The first step waits until it is cancelled, so the second's result waits.
            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
            return nil
          }
          defer { second.signal() }
          return Resource { stored.withLock { $0 }?.cancel() }
        }.subscribe(
          AnySubscriber(
            receiveSubscription: { subscription in
              stored.withLock { $0 = subscription }
              subscription.request(.max(2))
            },
            receiveValue: { _ in .none }, receiveCompletion: { _ in }))
        subject.send(0)
        subject.send(1)
        second.wait()
        // The result is stored just after its step returns: give it the moment.
        usleep(100_000)
        stored.withLock { $0 }?.cancel()
      }
    }
  }
}
