import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Synchronization
import Testing

/// `receive(on:)` and `subscribe(on:)`, on virtual time and on real queues.
@Suite("receive(on:) and subscribe(on:)", .onThreadsOfTheirOwn)
struct SchedulingOperatorTests {
  @Test func receiveOnDeliversValuesAndCompletionInScheduledActionsInOrder() throws {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2), demandPerValue: .max(1))
    source.receive(on: scheduler).subscribe(recorder)
    let subscription = try #require(recorder.subscription)
    #expect(String(describing: subscription) == "ReceiveOn")
    #expect(mirrorLabels(subscription).isEmpty)
    #expect(source.subscriptions[0].requests == [.max(2)], "requests go straight upstream")
    source.send(1)
    source.send(2)
    #expect(recorder.events.count == 1, "nothing before the scheduler runs")
    #expect(source.subscriptions[0].totalDemand == .max(2), "receive(_:) returns .none")
    scheduler.advance()
    #expect(recorder.values == [1, 2])
    // The demand returned on the scheduler is requested from the upstream then.
    #expect(source.subscriptions[0].requests == [.max(2), .max(1), .max(1)])
    source.send(3)
    source.send(completion: .finished)
    #expect(recorder.completion == nil)
    scheduler.advance()
    #expect(recorder.values == [1, 2, 3])
    #expect(recorder.completion == .finished)
  }

  @Test func receiveOnTheImmediateSchedulerDeliversAtOnceButNeverNested() {
    // The downstream sends into the subject while receiving: that value waits until the
    // current delivery returns (as the scheduled action of Combine's operator would), then
    // comes before anything sent later.
    let subject = PassthroughSubject<Int, Never>()
    let depth = Mutex(0)
    let log = Mutex<[String]>([])
    let cancellable = subject.receive(on: ImmediateScheduler.shared).sink { value in
      let nested = depth.withLock { depth in
        depth += 1
        return depth
      }
      log.withLock { $0.append("begin \(value) at depth \(nested)") }
      if value < 3 { subject.send(value * 10) }
      log.withLock { $0.append("end \(value)") }
      depth.withLock { $0 -= 1 }
    }
    subject.send(1)
    subject.send(2)
    subject.send(completion: .finished)
    #expect(
      log.withLock { $0 } == [
        "begin 1 at depth 1", "end 1", "begin 10 at depth 1", "end 10",
        "begin 2 at depth 1", "end 2", "begin 20 at depth 1", "end 20",
      ])
    cancellable.cancel()
  }

  @Test func receiveOnTheImmediateSchedulerRequestsWhatTheDownstreamReturns() throws {
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1), demandPerValue: .max(1))
    source.receive(on: ImmediateScheduler.shared).subscribe(recorder)
    source.send(1)
    source.send(2)
    source.send(completion: .finished)
    #expect(recorder.values == [1, 2])
    #expect(recorder.completion == .finished)
    // Each value returns .none upstream; the downstream's demand is requested separately.
    #expect(source.subscriptions[0].requests == [.max(1), .max(1), .max(1)])
    #expect(source.subscriptions[0].totalDemand == .max(3), "no demand returned from receive(_:)")
  }

  @Test func receiveOnCancelDropsWhatIsWaitingForTheScheduler() {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    source.receive(on: scheduler).subscribe(recorder)
    source.send(1)
    source.send(2)
    recorder.cancel()
    #expect(source.subscriptions[0].isCancelled)
    scheduler.advance()
    #expect(recorder.values.isEmpty)
    #expect(recorder.completion == nil)
  }

  @Test func receiveOnDeliversNothingBeforeTheSubscriptionWasHandedDown() async {
    // A synchronous upstream sends as soon as the downstream requests, from inside its
    // receive(subscription:); on a concurrent queue that delivery must still wait.
    for _ in 0..<200 {
      let checker = RuleChecker()
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
      (1...20).publisher.receive(on: DispatchQueue.global()).checkingRules(checker)
        .subscribe(recorder)
      #expect(await recorder.waitForCompletion() == .finished)
      #expect(recorder.values == Array(1...20))
      #expect(checker.violations.isEmpty, "\(checker.violations)")
    }
  }

  @Test func receiveOnAConcurrentQueueStaysSerialAndOrderedUnderConcurrentSenders() async {
    let subject = PassthroughSubject<Int, Never>()
    let checker = RuleChecker()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
    subject.receive(on: DispatchQueue.global()).checkingRules(checker).subscribe(recorder)
    let producers = 8
    let perProducer = 500
    await concurrently(producers) { producer in
      for index in 0..<perProducer { subject.send(producer * 10_000 + index) }
    }
    let values = await recorder.waitForValues(count: producers * perProducer)
    #expect(values.count == producers * perProducer)
    for producer in 0..<producers {
      let own = values.filter { $0 / 10_000 == producer }.map { $0 % 10_000 }
      #expect(own == Array(0..<perProducer), "producer \(producer)'s order")
    }
    #expect(checker.violations.isEmpty, "\(checker.violations)")
    recorder.cancel()
  }

  @Test("receive(on: DispatchQueue) releases subscription and downstream when cancelled or done")
  func receiveOnADispatchQueueReleasesEverythingAtTheEnd() async {
    // The queue gets one prepared action per subscription, which refers to the subscription
    // until it ends: both ways of ending must let go of it.
    let queue = DispatchQueue(label: "receive-on.release")
    for ending in ["cancel", "completion"] {
      weak var weakRecorder: RecordingSubscriber<Int, Never>?
      weak var weakSubscription: AnyObject?
      let subject = PassthroughSubject<Int, Never>()
      do {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
        weakRecorder = recorder
        subject.receive(on: queue).subscribe(recorder)
        weakSubscription = recorder.subscription.map { $0 as AnyObject }
        #expect(weakSubscription != nil, "the release check below would pass vacuously")
        for value in 0..<100 { subject.send(value) }
        #expect(await recorder.waitForValues(count: 100) == Array(0..<100))
        if ending == "cancel" {
          recorder.cancel()
        } else {
          subject.send(completion: .finished)
          #expect(await recorder.waitForCompletion() == .finished)
        }
      }
      queue.sync {}  // actions already scheduled have run
      #expect(weakRecorder == nil, "the downstream is released after \(ending)")
      #expect(weakSubscription == nil, "the subscription is released after \(ending)")
    }
  }

  @Test("receive(on: DispatchQueue): a cancel drops the values still waiting for the queue")
  func receiveOnADispatchQueueCancelDropsWaitingValues() {
    let queue = DispatchQueue(label: "receive-on.busy")
    let subject = PassthroughSubject<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
    subject.receive(on: queue).subscribe(recorder)
    let busy = DispatchSemaphore(value: 0)
    queue.async { busy.wait() }
    for value in 0..<10 { subject.send(value) }
    recorder.cancel()
    busy.signal()
    queue.sync {}
    #expect(recorder.values.isEmpty)
  }

  @Test func subscribeOnSubscribesRequestsAndCancelsInScheduledActions() throws {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(3))
    source.subscribe(on: scheduler).subscribe(recorder)
    #expect(source.subscriptions.isEmpty, "subscribing waits for the scheduler")
    scheduler.advance()  // subscribes, then (an action scheduled meanwhile) requests
    let subscription = try #require(recorder.subscription)
    #expect(String(describing: subscription) == "SubscribeOn")
    #expect(source.subscriptions[0].requests == [.max(3)])
    source.send(1)
    #expect(recorder.values == [1], "values pass through on the sending thread")
    recorder.request(.max(1))
    recorder.cancel()
    #expect(source.subscriptions[0].cancelCount == 0)
    scheduler.advance()
    #expect(source.subscriptions[0].requests == [.max(3), .max(1)])
    #expect(source.subscriptions[0].cancelCount == 1)
    source.send(2)
    #expect(recorder.values == [1], "nothing after cancel")
  }

  // Found by the pipeline fuzz target (Fuzz/, `share → subscribe(on:)` with an upstream that
  // finishes): subscribe(on:) kept its upstream's subscription after the completion, and
  // share()'s subscription keeps its subscriber, so the pair (and the subject, the connection,
  // the source's subscription and any closure upstream) outlived the pipeline.
  @Test("subscribe(on:) releases its upstream's subscription when the upstream completes")
  func subscribeOnReleasesTheUpstreamWhenItCompletes() {
    for failing in [false, true] {
      weak var weakSource: AnyObject?
      weak var weakSubscription: AnyObject?
      let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
      do {
        let source = PassthroughSubject<Int, TestError>()
        weakSource = source
        source.share().subscribe(on: ImmediateScheduler.shared).subscribe(recorder)
        weakSubscription = recorder.subscription.map { $0 as AnyObject }
        source.send(1)
        source.send(completion: failing ? .failure(TestError()) : .finished)
      }
      #expect(recorder.values == [1])
      #expect(recorder.completion != nil)
      #expect(weakSubscription == nil, "subscribe(on:)'s subscription outlived the completion")
      #expect(weakSource == nil, "share()'s subject and source outlived the completion")
    }
  }

  @Test func subscribeOnHonoursACancelMadeBeforeTheUpstreamSubscribed() {
    let scheduler = DispatchQueue.test
    let source = TestPublisher<Int, Never>()
    let probe = Probe<Int, Never>(onSubscription: { _ in })
    let cancellable = AnyCancellable(
      source.subscribe(on: scheduler).handleEvents().sink { _ in })
    cancellable.cancel()
    scheduler.advance()
    #expect(source.subscriptions.first?.isCancelled ?? true)
    withExtendedLifetime(probe) {}
  }

  @Test func subscribeOnCallsTheUpstreamOneAtATimeOnAConcurrentQueue() async {
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    source.subscribe(on: DispatchQueue.global()).subscribe(recorder)
    while recorder.subscription == nil { await Task.yield() }
    let subscription = Shared(recorder.subscription!)
    await concurrently(64) { _ in subscription.value.request(.max(1)) }
    while source.subscriptions.first?.requests.count != 64 { await Task.yield() }
    #expect(source.subscriptions[0].totalDemand == .max(64))
    recorder.cancel()
  }
}
