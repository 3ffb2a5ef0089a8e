import Dispatch
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Synchronization
import Testing

@Suite("PassthroughSubject", .onThreadsOfTheirOwn)
struct PassthroughSubjectTests {
  @Test func dropsValuesWithoutSubscribersOrDemand() {
    let subject = PassthroughSubject<Int, Never>()
    subject.send(0)  // no subscriber: dropped
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    subject.subscribe(recorder)
    subject.send(1)  // no demand: dropped
    recorder.request(.max(2))
    subject.send(2)
    subject.send(3)
    subject.send(4)  // demand used up: dropped
    recorder.request(.max(1))
    subject.send(5)
    #expect(recorder.values == [2, 3, 5])
    #expect(recorder.events.first == .subscription("PassthroughSubject"))
    recorder.cancel()
  }

  @Test func eachSubscriberHasItsOwnDemand() {
    let subject = PassthroughSubject<Int, Never>()
    let one = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    let many = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
    let perValue = RecordingSubscriber<Int, Never>(initialDemand: .max(1), demandPerValue: .max(1))
    subject.subscribe(one)
    subject.subscribe(many)
    subject.subscribe(perValue)
    for value in 1...4 { subject.send(value) }
    #expect(one.values == [1])
    #expect(many.values == [1, 2, 3, 4])
    #expect(perValue.values == [1, 2, 3, 4])
    for recorder in [one, many, perValue] { recorder.cancel() }
  }

  @Test func completionIsDeliveredOnceAndReplayedToLateSubscribers() {
    let subject = PassthroughSubject<Int, TestError>()
    let early = RecordingSubscriber<Int, TestError>()
    subject.subscribe(early)
    subject.send(completion: .failure(TestError(code: 7)))
    subject.send(completion: .finished)
    subject.send(1)
    #expect(
      early.events == [
        .subscription("PassthroughSubject"), .completion(.failure(TestError(code: 7))),
      ])
    let late = RecordingSubscriber<Int, TestError>()
    subject.subscribe(late)
    #expect(late.events == [.subscription("Empty"), .completion(.failure(TestError(code: 7)))])
  }

  @Test func completionWaitsForNoDemand() {
    let subject = PassthroughSubject<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    subject.subscribe(recorder)
    subject.send(completion: .finished)
    #expect(recorder.completion == .finished)
  }

  @Test func cancelReleasesTheSubscriberAndStopsDelivery() {
    let subject = PassthroughSubject<Int, Never>()
    let subscription = Box<any Subscription>()
    weak var weakProbe: Probe<Int, Never>?
    let received = Box<[Int]>([])
    do {
      let probe = Probe<Int, Never>(
        onSubscription: {
          subscription.set($0); $0.request(.unlimited)
        },
        onValue: { value in
          received.update { $0?.append(value) }; return .none
        })
      weakProbe = probe
      subject.subscribe(probe)
    }
    subject.send(1)
    subscription.value?.cancel()
    subscription.value?.cancel()
    subject.send(2)
    #expect(received.value == [1])
    withExtendedLifetime(subscription.value) { #expect(weakProbe == nil) }
  }

  @Test func reentrantSendIsDeliveredInOrderWithoutRecursion() {
    let subject = PassthroughSubject<Int, Never>()
    let depth = Box<Int>(0)
    let maxDepth = Box<Int>(0)
    let received = Box<[Int]>([])
    let probe = Probe<Int, Never>(
      onSubscription: { $0.request(.unlimited) },
      onValue: { value in
        depth.update { $0! += 1 }
        maxDepth.update { $0 = max($0!, depth.value!) }
        received.update { $0?.append(value) }
        if value < 5 { subject.send(value + 1) }  // re-enters the subject
        depth.update { $0! -= 1 }
        return .none
      })
    subject.subscribe(probe)
    subject.send(1)
    #expect(received.value == [1, 2, 3, 4, 5])
    #expect(maxDepth.value == 1, "nested sends are queued, not delivered recursively")
    subject.send(completion: .finished)  // ends the probe's subscription (it keeps none to cancel)
  }

  @Test func upstreamSubscriptionIsAskedForUnlimitedOnceASubscriberHasDemand() {
    let first = TestSubscription()
    let second = TestSubscription()
    do {
      let subject = PassthroughSubject<Int, Never>()
      subject.send(subscription: first)
      #expect(first.requests.isEmpty, "no subscriber has demand yet")
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
      subject.subscribe(recorder)
      #expect(first.requests.isEmpty)
      recorder.request(.max(1))
      #expect(first.requests == [.unlimited])
      recorder.request(.max(1))
      #expect(first.requests == [.unlimited], "asked once")
      subject.send(subscription: second)
      #expect(second.requests == [.unlimited], "a subscriber already has demand")
      recorder.cancel()  // a live subscription keeps its subject, as in Combine
    }
    #expect(first.cancelCount == 1, "kept upstreams are cancelled with the subject")
    #expect(second.cancelCount == 1)
  }

  @Test func anUpstreamArrivingWhileTheFirstRequestIsMadeIsAskedExactlyOnce() async {
    for _ in 0..<500 {
      let upstream = TestSubscription()
      let subject = PassthroughSubject<Int, Never>()
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
      subject.subscribe(recorder)
      let shared = Shared(subject)
      await simultaneously(
        { shared.value.send(subscription: upstream) }, { recorder.request(.max(1)) })
      #expect(upstream.requests == [.unlimited])
      recorder.cancel()
    }
  }

  @Test func aValueSentWhileTheUpstreamIsOpenedIsDeliveredInsideThatRequest() {
    // The upstream answers the subject's `.unlimited` with a value, finishes its first part and
    // subscribes its second, all inside the request: the value reaches the subscriber before
    // the second part is subscribed, as in Combine.
    let log = Mutex<[String]>([])
    let subject = PassthroughSubject<Int, Never>()
    let connection = [-4].publisher
      .append(
        Deferred {
          log.withLock { $0.append("second part subscribed") }
          return Empty<Int, Never>()
        }
      )
      .subscribe(subject)
    let cancellable = subject.sink { value in log.withLock { $0.append("value \(value)") } }
    #expect(log.withLock { $0 } == ["value -4", "second part subscribed"])
    cancellable.cancel()
    connection.cancel()
  }

  @Test func currentValueSubjectAsksItsUpstreamAtOnce() {
    let upstream = TestSubscription()
    let subject = CurrentValueSubject<Int, Never>(0)
    subject.send(subscription: upstream)
    #expect(upstream.requests == [.unlimited])
  }

  @Test func aSubjectAsSubscriberNeverRequestsOnItsOwn() {
    let upstream = TestPublisher<Int, Never>()
    let subject = PassthroughSubject<Int, Never>()
    let cancellable = upstream.subscribe(subject)
    #expect(upstream.subscriptions[0].requests.isEmpty)
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2))
    subject.subscribe(recorder)
    #expect(upstream.subscriptions[0].requests == [.unlimited])
    upstream.send(1)
    #expect(recorder.values == [1])
    cancellable.cancel()
    recorder.cancel()
  }

  @Test func subscribingASubjectToAPublisher() {
    let subject = PassthroughSubject<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    subject.subscribe(recorder)
    let cancellable = [1, 2, 3].publisher.subscribe(subject)
    #expect(recorder.values == [1, 2, 3])
    #expect(recorder.completion == .finished)
    cancellable.cancel()
  }

  @Test func zeroDemandTraps() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let subject = PassthroughSubject<Int, Never>()
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
      subject.subscribe(recorder)
      recorder.request(.none)
    }
    let message = standardError(of: result)
    #expect(message.contains("API Violation: request(.none) on a PassthroughSubject subscription"))
  }

  @Test("8 threads sending to several subscribers: nothing demanded is lost or duplicated")
  func concurrentSendFromEightThreads() async {
    let subject = PassthroughSubject<Int, Never>()
    let checker = RuleChecker()
    let unlimited = (0..<4).map { _ in RecordingSubscriber<Int, Never>() }
    let limited = RecordingSubscriber<Int, Never>(initialDemand: .max(1000))
    for recorder in unlimited + [limited] { subject.checkingRules(checker).subscribe(recorder) }
    let perThread = 5_000
    let shared = Shared(subject)
    await concurrently(8) { thread in
      for index in 0..<perThread { shared.value.send(thread * perThread + index) }
    }
    subject.send(completion: .finished)
    let everything = Set(0..<(8 * perThread))
    for recorder in unlimited {
      let values = recorder.values
      #expect(values.count == 8 * perThread)
      #expect(Set(values) == everything)
      // Values from each sending thread stay in that thread's order.
      for thread in 0..<8 {
        let fromThread = values.filter { $0 / perThread == thread }
        #expect(fromThread == fromThread.sorted())
      }
      #expect(recorder.completion == .finished)
    }
    #expect(limited.values.count == 1000, "exactly the demand, never more")
    #expect(Set(limited.values).count == 1000)
    #expect(checker.violations.isEmpty, "\(checker.violations.prefix(3))")
  }

  @Test("concurrent send, request, cancel and subscribe stay within the rules")
  func concurrentMixedTraffic() async {
    let subject = PassthroughSubject<Int, Never>()
    let checker = RuleChecker()
    let recorders = (0..<8).map { _ in RecordingSubscriber<Int, Never>(initialDemand: .max(10)) }
    let shared = Shared((subject, recorders))
    await concurrently(32) { index in
      let (subject, recorders) = shared.value
      let recorder = recorders[index % 8]
      switch index % 4 {
      case 0: subject.checkingRules(checker).subscribe(recorder)
      case 1: for value in 0..<200 { subject.send(value) }
      case 2: recorder.request(.max(50))
      default: if index % 8 == 7 { recorder.cancel() }
      }
    }
    subject.send(completion: .finished)
    #expect(checker.violations.isEmpty, "\(checker.violations.prefix(3))")
  }
}
