import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Synchronization
import Testing

/// A subject delivers to a subscriber with unlimited demand without locking (one atomic word
/// elects the deliverer). These tests aim every other event at the moment such a delivery is in
/// flight: a cancel, a completion, a re-entrant send or request, senders on other threads.
@Suite("Subject fast path", .onThreadsOfTheirOwn)
struct ConduitFastPathTests {
  /// A subscriber that requests `.unlimited`, keeps its subscription (as many hand-written ones
  /// do), and stops inside `receive` for value 1 until told to go on.
  final class Gated: Subscriber, @unchecked Sendable {
    // Safety: `subscription` is written once, in receive(subscription:), before any value and
    // before the test shares the subscriber; the rest is synchronised by the semaphores/lock.
    let entered = DispatchSemaphore(value: 0)
    let proceed = DispatchSemaphore(value: 0)
    let log = NSLock()
    var received: [String] = []
    var subscription: (any Subscription)?

    func receive(subscription: any Subscription) {
      self.subscription = subscription
      subscription.request(.unlimited)
    }

    func receive(_ input: Int) -> Subscribers.Demand {
      log.withLock { received.append("\(input)") }
      if input == 1 {
        entered.signal()
        proceed.wait()
      }
      return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {
      log.withLock { received.append("finished") }
    }

    var events: [String] { log.withLock { received } }
  }

  @Test func aCancelDuringADeliveryStopsLaterValuesAndReleasesTheSubscriberWhenItEnds() {
    let subject = PassthroughSubject<Int, Never>()
    weak var released: Gated?
    do {
      let subscriber = Gated()
      released = subscriber
      subject.subscribe(subscriber)
      subject.send(0)
      let delivering = sendOneFromAnotherThread(subject, until: subscriber.entered)
      // Cancelled from here while value 1 is still inside `receive` on the other thread.
      subscriber.subscription?.cancel()
      subscriber.subscription = nil
      subject.send(2)
      subject.send(completion: .finished)
      #expect(subscriber.events == ["0", "1"], "nothing starts after cancel() returns")
      subscriber.proceed.signal()
      delivering.wait()
      #expect(subscriber.events == ["0", "1"])
    }
    #expect(released == nil, "the delivery that ended last released the subscriber")
  }

  @Test func aCompletionDuringADeliveryComesAfterItOnce() {
    let subject = PassthroughSubject<Int, Never>()
    let subscriber = Gated()
    subject.subscribe(subscriber)
    let delivering = sendOneFromAnotherThread(subject, until: subscriber.entered)
    subject.send(completion: .finished)  // queued for the thread that is delivering
    #expect(subscriber.events == ["1"])
    subscriber.proceed.signal()
    delivering.wait()
    #expect(subscriber.events == ["1", "finished"])
    subject.send(3)
    #expect(subscriber.events == ["1", "finished"])
  }

  @Test func valuesSentDuringADeliveryFollowItInOrder() {
    let subject = PassthroughSubject<Int, Never>()
    let subscriber = Gated()
    subject.subscribe(subscriber)
    let delivering = sendOneFromAnotherThread(subject, until: subscriber.entered)
    for value in 2...5 { subject.send(value) }  // each returns at once; the deliverer owes them
    #expect(subscriber.events == ["1"])
    subscriber.proceed.signal()
    delivering.wait()
    #expect(subscriber.events == ["1", "2", "3", "4", "5"])
    subject.send(6)  // and the fast path is back
    #expect(subscriber.events == ["1", "2", "3", "4", "5", "6"])
    subscriber.subscription?.cancel()
    subscriber.subscription = nil
  }

  @Test func reentrantSendsAndRequestsInsideAFastDeliveryKeepTheOrder() {
    let subject = PassthroughSubject<Int, Never>()
    let values = Mutex<[Int]>([])
    let depth = Mutex(0)
    let maximumDepth = Mutex(0)
    let subscription = SubscriptionBox()
    let probe = Probe<Int, Never>(
      onSubscription: { received in
        subscription.value = received
        received.request(.unlimited)
      },
      onValue: { value in
        let now = depth.withLock { depth in
          depth += 1
          return depth
        }
        maximumDepth.withLock { $0 = max($0, now) }
        values.withLock { $0.append(value) }
        if value % 3 == 1 {
          subject.send(value + 1)
          subscription.value?.request(.unlimited)
          subject.send(value + 2)
        }
        depth.withLock { $0 -= 1 }
        return .none
      })
    subject.subscribe(probe)
    subject.send(1)
    subject.send(4)
    #expect(values.withLock { $0 } == [1, 2, 3, 4, 5, 6])
    #expect(maximumDepth.withLock { $0 } == 1, "never nested")
    subscription.value?.cancel()
  }

  @Test("8 threads sending to 3 sinks: each value once, never two deliveries at a time")
  func concurrentSendersNeverOverlap() async {
    for _ in 0..<max(3, stressScaled(20)) {
      let subject = PassthroughSubject<Int, Never>()
      let perThread = 2_000
      let sinks = (0..<3).map { _ in OverlapDetector() }
      let cancellables = sinks.map { detector in subject.sink { detector.receive($0) } }
      let shared = Shared(subject)
      await concurrently(8) { thread in
        for index in 0..<perThread { shared.value.send(thread * perThread + index) }
      }
      for detector in sinks {
        let values = detector.values
        #expect(values.count == 8 * perThread)
        #expect(Set(values).count == 8 * perThread)
        #expect(!detector.overlapped, "two deliveries at once")
        for thread in 0..<8 {
          let fromThread = values.filter { $0 / perThread == thread }
          #expect(fromThread == fromThread.sorted(), "a sender's values stay in its order")
        }
      }
      for cancellable in cancellables { cancellable.cancel() }
    }
  }

  @Test("cancelling and completing while 4 threads send: nothing after the end, released")
  func concurrentSendersAgainstCancelAndCompletion() async {
    for round in 0..<200 {
      weak var released: OverlapDetector?
      do {
        let subject = PassthroughSubject<Int, Never>()
        let detector = OverlapDetector()
        released = detector
        let checker = RuleChecker()
        let recorder = RecordingSubscriber<Int, Never>()
        subject.checkingRules(checker).subscribe(recorder)
        let cancellable = subject.sink(
          receiveCompletion: { _ in detector.finish() }, receiveValue: { detector.receive($0) })
        let shared = Shared((subject, cancellable))
        await concurrently(5) { thread in
          if thread == 4 {
            if round.isMultiple(of: 2) {
              shared.value.1.cancel()
            } else {
              shared.value.0.send(completion: .finished)
            }
          } else {
            for value in 0..<300 { shared.value.0.send(thread * 1_000 + value) }
          }
        }
        #expect(!detector.overlapped)
        #expect(!detector.receivedAfterFinish)
        #expect(checker.violations.isEmpty, "\(checker.violations.prefix(3))")
        cancellable.cancel()
        recorder.cancel()
      }
      #expect(released == nil, "the sink released its closures, so the detector")
    }
  }

  @Test func aCurrentValueSubjectReplaysThenDeliversWithoutLocking() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let values = Mutex<[Int]>([])
    let cancellable = subject.sink { value in values.withLock { $0.append(value) } }
    let shared = Shared(subject)
    await concurrently(4) { thread in
      for value in 1...500 { shared.value.send(thread * 1_000 + value) }
    }
    let received = values.withLock { $0 }
    #expect(received.first == 0)
    #expect(received.count == 2_001)
    #expect(Set(received).count == 2_001)
    cancellable.cancel()
  }

  /// The subscription a probe received, for its own `receive` calls (serial by the rules).
  final class SubscriptionBox: @unchecked Sendable {
    // Safety: written in receive(subscription:), then read by the same serial signal path and
    // by the test after the sends have returned.
    var value: (any Subscription)?
  }

  /// Records values and notices two deliveries at once, or a value after the completion.
  final class OverlapDetector: @unchecked Sendable {
    // Safety: `inside` is atomic; the value list is behind its lock.
    let inside = Atomic<Bool>(false)
    let state = Mutex<(values: [Int], overlapped: Bool, finished: Bool, late: Bool)>(
      ([], false, false, false))

    func receive(_ value: Int) {
      let overlapping = inside.exchange(true, ordering: .acquiringAndReleasing)
      state.withLock {
        $0.values.append(value)
        if overlapping { $0.overlapped = true }
        if $0.finished { $0.late = true }
      }
      if !overlapping { inside.store(false, ordering: .releasing) }
    }

    func finish() { state.withLock { $0.finished = true } }

    var values: [Int] { state.withLock { $0.values } }
    var overlapped: Bool { state.withLock { $0.overlapped } }
    var receivedAfterFinish: Bool { state.withLock { $0.late } }
  }
}
