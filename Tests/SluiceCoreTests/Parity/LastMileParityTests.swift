import SluiceCore
import SluiceTesting
import Testing

/// Differences from Combine found by OpenCombine's suite and a spec suite written against
/// Combine (issue 40), each fixed and checked here.
///
/// A test that leaves its subscription live (neither completed nor cancelled) cancels it at its
/// end: until then the recorder and its subscription keep each other, as in Combine (the
/// address sanitizer's leak check reports them otherwise).
@Suite("Combine parity, the last mile")
struct LastMileParityTests {
  // MARK: Mirrors and identities

  @Test func recordsSubscriptionReflectsItsValuesAndCompletion() throws {
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    Record<Int, TestError>(output: [1, 2], completion: .failure(TestError(code: 3)))
      .subscribe(recorder)
    let subscription = try #require(recorder.subscription)
    let live = try #require(customMirror(of: subscription))
    #expect(live.children.map(\.label) == ["sequence", "completion"])
    #expect(live.children.map { "\($0.value)" } == ["[1, 2]", "failure(TestError(3))"])
    recorder.request(.max(2))
    let ended = try #require(customMirror(of: subscription))
    #expect(ended.children.map { "\($0.value)" } == ["[]", "failure(TestError(3))"])
  }

  @Test func aFinishedSequenceSubscriptionReflectsAnEmptySequence() throws {
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    (1...3).publisher.subscribe(recorder)
    let subscription = try #require(recorder.subscription)
    #expect(customMirror(of: subscription)?.children.map { "\($0.value)" } == ["1...3"])
    recorder.request(.max(3))
    #expect(recorder.completion == .finished)
    #expect(customMirror(of: subscription)?.children.map { "\($0.value)" } == ["[]"])
    #expect(customMirror(of: subscription)?.children.first?.value is [Int])
  }

  @Test func aCancelledSequenceSubscriptionReflectsAnEmptySequence() throws {
    var kept: (any Subscription)?
    [5, 6].publisher.subscribe(Probe<Int, Never>(onSubscription: { kept = $0 }))
    let subscription = try #require(kept)
    #expect(customMirror(of: subscription)?.children.map { "\($0.value)" } == ["[5, 6]"])
    subscription.cancel()
    #expect(customMirror(of: subscription)?.children.map { "\($0.value)" } == ["[]"])
  }

  @Test func concatenateHasThreeObjectsWithOneIdentity() throws {
    let prefix = HeldPublisher<Int, Never>()
    let suffix = HeldPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    prefix.append(suffix).subscribe(recorder)
    prefix.send(subscription: TestSubscription())
    let subscription = try #require(recorder.subscription)
    let head = try #require(prefix.subscriberObject as? any Subscriber)
    #expect(head.combineIdentifier == subscription.combineIdentifier)
    #expect(type(of: head) != type(of: subscription))
    prefix.send(completion: .finished)
    let tail = try #require(suffix.subscriberObject as? any Subscriber)
    #expect(tail.combineIdentifier == subscription.combineIdentifier)
    #expect(type(of: tail) != type(of: subscription))
    #expect(type(of: tail) != type(of: head))
    #expect(String(describing: head) == "Concatenate")
    #expect(String(describing: tail) == "Concatenate")
    recorder.cancel()
  }

  @Test func catchsUpstreamSubscriberIsNotItsSubscription() throws {
    let upstream = HeldPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, Never>()
    upstream.catch { _ in Just(0) }.subscribe(recorder)
    upstream.send(subscription: TestSubscription())
    let subscription = try #require(recorder.subscription)
    let head = try #require(upstream.subscriberObject as? any Subscriber)
    #expect(head.combineIdentifier == subscription.combineIdentifier)
    #expect(type(of: head) != type(of: subscription))
    #expect(String(describing: head) == "Catch")
    #expect(mirrorLabels(head) == ["downstream", "demand"])
    recorder.cancel()
  }

  @Test func tryCatchsReplacementSeesASubscriberDescribedAsTryCatch() throws {
    let fallback = HeldPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, any Error>(initialDemand: .none)
    Fail<Int, TestError>(error: TestError()).tryCatch { _ in fallback }.subscribe(recorder)
    let subscriber = try #require(fallback.subscriberObject)
    #expect(String(describing: subscriber) == "TryCatch")
    #expect(mirrorLabels(subscriber) == ["downstream", "demand"])
    #expect(customMirror(of: subscriber)?.children.map { "\($0.value)" }.last == "max(0)")
    // Its failure still reaches the subscriber, as `any Error`.
    fallback.send(subscription: TestSubscription())
    fallback.send(completion: .failure(TestError(code: 5)))
    guard case .failure(let error) = recorder.completion else {
      Issue.record("expected a failure, got \(String(describing: recorder.completion))")
      return
    }
    #expect(error as? TestError == TestError(code: 5))
  }

  // MARK: Sequence operators

  @Test func sequencePrependOfASequencePublisherAppendsToACopyOfItsCollection() {
    let log = CollectionLog()
    let base = Publishers.Sequence<LoggedCollection, Never>(
      sequence: LoggedCollection([4, 5], log: log))
    let prefixLog = CollectionLog()
    let prefix = Publishers.Sequence<LoggedCollection, Never>(
      sequence: LoggedCollection([1, 2, 3], log: prefixLog))
    log.entries = []
    let prepended = base.prepend(prefix).sequence
    #expect(prepended.storage == [1, 2, 3, 4, 5])
    // As Combine: the prefix's collection (copied) gets the base's elements appended; no new
    // collection is built from both.
    #expect(prepended.log === prefixLog)
    #expect(prefixLog.entries == ["append(contentsOf:)"])
    #expect(base.sequence.storage == [4, 5])
  }

  // MARK: handleEvents

  @Test func handleEventsReportsDemandReturnedFromReceiveAsARequest() {
    let upstream = HeldPublisher<Int, Never>()
    var requests: [Subscribers.Demand] = []
    let recorder = RecordingSubscriber<Int, Never>(
      initialDemand: .max(1), demandAfterValue: { .max($0) })
    upstream.handleEvents(receiveRequest: { requests.append($0) }).subscribe(recorder)
    upstream.send(subscription: TestSubscription())
    #expect(upstream.send(0) == .none)
    #expect(upstream.send(2) == .max(2))
    #expect(requests == [.max(1), .max(2)])
    recorder.cancel()
  }

  @Test func handleEventsReportsDemandReturnedForAValueBeforeTheSubscription() {
    let upstream = HeldPublisher<Int, Never>()
    var events: [String] = []
    let recorder = RecordingSubscriber<Int, Never>(
      initialDemand: .none, demandAfterValue: { _ in .max(42) })
    upstream.handleEvents(
      receiveOutput: { events.append("output \($0)") },
      receiveRequest: { events.append("request \($0)") }
    ).subscribe(recorder)
    #expect(upstream.send(144) == .max(42))
    #expect(events == ["output 144", "request max(42)"])
  }
}

/// Differences the article "Differences from Combine" lists (issue 40): each pinned down, so
/// that a change shows up here and in the list together. (Live subscriptions are cancelled at
/// the end of a test, as in ``LastMileParityTests``.)
@Suite("Combine parity, the last mile: documented differences")
struct LastMileDocumentedDifferenceTests {
  /// Combine's `dropFirst` takes a subscription that comes after it ended and delivers again
  /// (OpenCombine's DropTests.testReusableSubscription).
  @Test func anEndedDropFirstCancelsASecondSubscription() {
    let upstream = HeldPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(3))
    upstream.dropFirst(3).subscribe(recorder)
    upstream.send(subscription: TestSubscription())
    upstream.send(completion: .finished)
    #expect(recorder.completion == .finished)
    let second = TestSubscription()
    upstream.send(subscription: second)
    #expect(second.isCancelled)
    #expect(second.requests == [])
    #expect(upstream.send(4) == .none)
    #expect(recorder.values == [])
  }

  /// `_ = publisher.sink { … }` cancels the sink at once; Combine ignores that cancel while the
  /// sink has no subscription and keeps receiving (OpenCombine's PrintTests.testSynchronization).
  @Test func aSinkCancelledBeforeItsSubscriptionReceivesNothing() {
    let upstream = HeldPublisher<Int, Never>()
    let count = Box<Int>(0)
    _ = upstream.print(to: nil).sink { _ in count.update { $0! += 1 } }
    _ = upstream.send(12)
    #expect(count.value == 0)
    let subscription = TestSubscription()
    upstream.send(subscription: subscription)
    #expect(subscription.isCancelled)
  }

  /// Combine sends `.finished` at once, before the subscriber has a subscription.
  @Test func prefixUntilOutputTriggeredBeforeItsUpstreamSubscribesFinishesAfterHandingItDown() {
    let upstream = HeldPublisher<Int, Never>()
    let trigger = PassthroughSubject<Void, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    upstream.prefix(untilOutputFrom: trigger).subscribe(recorder)
    trigger.send(())
    #expect(recorder.events.isEmpty)
    let subscription = TestSubscription()
    upstream.send(subscription: subscription)
    #expect(subscription.isCancelled)
    #expect(recorder.subscriptionCount == 1)
    #expect(recorder.completion == .finished)
  }

  /// A broken upstream sends before its subscription: `output(in:)` handles the values as
  /// Combine's does, and ends at the last value of its range (Combine's waits for the upstream
  /// to complete after its subscription: OpenCombine's OutputTests.testSendValuesBeforeSubscription).
  @Test func outputEndsAtItsRangesLastValueEvenBeforeItsSubscription() {
    let upstream = HeldPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>(
      initialDemand: .none, demandAfterValue: { _ in .max(42) })
    upstream.output(in: 1..<3).subscribe(recorder)
    #expect(upstream.send(1) == .max(1))
    #expect(upstream.send(2) == .max(42))
    #expect(upstream.send(3) == .max(42))
    #expect(recorder.values == [2, 3])
    #expect(recorder.completion == .finished)
    let subscription = TestSubscription()
    upstream.send(subscription: subscription)
    #expect(subscription.isCancelled)
  }

  /// Combine's future subscription keeps its future (its mirror's `parent`) when the result
  /// waited for demand.
  @Test func aFutureSubscriptionLetsGoOfItsFutureOnceDelivered() throws {
    let future = Future<Int, Never> { $0(.success(42)) }
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    future.subscribe(recorder)
    let subscription = try #require(recorder.subscription)
    recorder.request(.max(1))
    #expect(recorder.values == [42])
    let parent = customMirror(of: subscription)?.children.first { $0.label == "parent" }
    #expect(parent.map { "\($0.value)" } == "nil")
  }

  /// A value a `flatMap` child sends from inside the delivery of its previous value is queued
  /// and delivered after it, so the demand that replaces it reaches the child as a
  /// `request(.max(1))`, not as the result of the nested `send` (Combine delivers it nested and
  /// returns `.max(1)` from it).
  @Test func aReentrantFlatMapChildValueIsQueuedAndItsDemandComesAsARequest() {
    let child = HeldPublisher<Int, Never>()
    let nested = Box<Subscribers.Demand>()
    let recorder = RecordingSubscriber<Int, Never>(
      initialDemand: .max(5),
      demandAfterValue: { value in
        if value == 1 { nested.set(child.send(2)) }
        return .none
      })
    Just(0).flatMap { _ in child }.subscribe(recorder)
    let subscription = TestSubscription()
    child.send(subscription: subscription)
    #expect(subscription.requests == [.max(1)])
    let returned = child.send(1)
    #expect(recorder.values == [1, 2])
    #expect(nested.value == Subscribers.Demand.none, "the nested value is queued")
    #expect(returned == .max(1), "the demand that replaces 1")
    #expect(subscription.requests == [.max(1), .max(1)], "the demand that replaces 2")
    recorder.cancel()
  }

  /// The subscriber a `flatMap` child publisher receives has Combine's `parentSubscription`
  /// child; its value is the engine that serves the `flatMap` subscription (Combine's is the
  /// outer subscriber's `combineIdentifier`).
  @Test func aFlatMapChildsSubscriberReflectsTheEngineAsItsParentSubscription() throws {
    let child = HeldPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    Just(0).flatMap { _ in child }.subscribe(recorder)
    #expect(mirrorLabels(child.subscriberObject) == ["parentSubscription"])
    let parent = try #require(customMirror(of: child.subscriberObject)?.children.first?.value)
    #expect(!(parent is CombineIdentifier))
    let subscription = try #require(recorder.subscription)
    let isTheEngine = (parent as AnyObject) === (subscription as AnyObject)
    #expect(isTheEngine, "the object that serves the subscriber's FlatMap subscription")
    recorder.cancel()
  }

  /// `request(.none)` traps in Sluice's operators, subjects and bridges, but `Publishers.Sequence`
  /// and `Record` accept it and deliver nothing, as Combine's.
  @Test func sequenceAndRecordAcceptARequestOfNone() {
    let sequence = RecordingSubscriber<Int, Never>(initialDemand: .none)
    [1, 2].publisher.subscribe(sequence)
    sequence.request(.none)
    #expect(sequence.values == [])
    sequence.request(.max(1))
    #expect(sequence.values == [1])
    sequence.cancel()  // 2 is still to come: a live subscription until then
    let record = RecordingSubscriber<Int, Never>(initialDemand: .none)
    Record<Int, Never>(output: [1, 2], completion: .finished).subscribe(record)
    record.request(.none)
    #expect(record.values == [])
    record.request(.unlimited)
    #expect(record.values == [1, 2])
    #expect(record.completion == .finished)
  }
}

/// Who did what to a ``LoggedCollection`` (shared by its copies).
final class CollectionLog: @unchecked Sendable {
  // Safety: used from one test's thread.
  var entries: [String] = []
}

/// An array that logs `init()`, `reserveCapacity` and `append(contentsOf:)`.
struct LoggedCollection: RangeReplaceableCollection, @unchecked Sendable {
  // Safety: the log is used from one test's thread.
  var storage: [Int]
  let log: CollectionLog

  init(_ storage: [Int], log: CollectionLog) {
    self.storage = storage
    self.log = log
  }

  init() {
    storage = []
    log = CollectionLog()
    log.entries.append("init()")
  }

  var startIndex: Int { storage.startIndex }
  var endIndex: Int { storage.endIndex }
  subscript(position: Int) -> Int { storage[position] }
  func index(after index: Int) -> Int { index + 1 }

  mutating func reserveCapacity(_ capacity: Int) {
    log.entries.append("reserveCapacity")
    storage.reserveCapacity(capacity)
  }

  mutating func append<S: Sequence>(contentsOf elements: S) where S.Element == Int {
    log.entries.append("append(contentsOf:)")
    storage.append(contentsOf: elements)
  }

  mutating func replaceSubrange<C: Collection>(_ range: Range<Int>, with elements: C)
  where C.Element == Int {
    log.entries.append("replaceSubrange")
    storage.replaceSubrange(range, with: elements)
  }
}
