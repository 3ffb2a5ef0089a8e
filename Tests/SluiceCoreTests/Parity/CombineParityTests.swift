import Foundation
import SluiceCore
import SluiceTesting
import Testing

/// Behaviour that Combine code observes, checked item by item (issue: Combine parity).
@Suite("Combine parity")
struct CombineParityTests {
  // MARK: API shape

  @Test func justPrependAndAppendBuildSequences() {
    let prepended: Publishers.Sequence<[Int], Never> = Just(5).prepend(1, 2)
    let appended: Publishers.Sequence<[Int], Never> = Just(1).append([2, 3])
    #expect(prepended.sequence == [1, 2, 5])
    #expect(appended.sequence == [1, 2, 3])
    #expect(Just(3).prepend(0...2).sequence == [0, 1, 2, 3])
    #expect(Just(0).append(1, 2).sequence == [0, 1, 2])
  }

  @Test func sequencePrependAndAppendKeepTheCollectionType() {
    let base = Publishers.Sequence<[Int], Never>(sequence: [3, 4])
    let prepended: Publishers.Sequence<[Int], Never> = base.prepend(1, 2)
    #expect(prepended.sequence == [1, 2, 3, 4])
    #expect(base.append(5, 6).sequence == [3, 4, 5, 6])
    #expect(base.prepend(base).sequence == [3, 4, 3, 4])
    #expect(base.append(7...8).sequence == [3, 4, 7, 8])
    let text = Publishers.Sequence<String, Never>(sequence: "bc")
    let word: Publishers.Sequence<String, Never> = text.prepend("a").append("d")
    #expect(word.sequence == "abcd")
  }

  @Test func recordingEncodesIntoAnEncoderAsToOne() throws {
    let recording = Record<Int, TestError>.Recording(output: [1, 2], completion: .finished)
    struct Into: Encodable {
      let recording: Record<Int, TestError>.Recording
      func encode(to encoder: any Encoder) throws { try recording.encode(into: encoder) }
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    #expect(try encoder.encode(Into(recording: recording)) == encoder.encode(recording))
  }

  @Test func runLoopAndOperationQueueTimesAreDistinctTypes() {
    // Overloading on both compiles only if the two are different types, as in Combine.
    func kind(_ time: RunLoop.SchedulerTimeType) -> String { "runLoop" }
    func kind(_ time: OperationQueue.SchedulerTimeType) -> String { "operationQueue" }
    let date = Date(timeIntervalSinceReferenceDate: 100)
    #expect(kind(RunLoop.SchedulerTimeType(date)) == "runLoop")
    #expect(kind(OperationQueue.SchedulerTimeType(date)) == "operationQueue")
    let later = RunLoop.SchedulerTimeType(date).advanced(by: .seconds(2))
    #expect(later.date == date.addingTimeInterval(2))
    #expect(RunLoop.SchedulerTimeType(date).distance(to: later) == .seconds(2))
    #expect(OperationQueue.SchedulerTimeType.Stride.milliseconds(1500).timeInterval == 1.5)
  }

  @Test func combineIdentifierOfAnObjectIsItsAddress() {
    let object = NSObject()
    let address = UInt(bitPattern: ObjectIdentifier(object))
    #expect(CombineIdentifier(object).description == "0x" + String(address, radix: 16))
    #expect(CombineIdentifier(object) == CombineIdentifier(object))
  }

  // MARK: Which subscription the downstream sees

  @Test(arguments: ["filter", "compactMap", "scan", "breakpoint"])
  func passThroughOperatorsHandTheUpstreamSubscriptionDown(_ name: String) {
    let source = TestPublisher<Int, Never>(subscriptionDescription: "Upstream")
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(3))
    switch name {
    case "filter": source.filter { $0 > 0 }.subscribe(recorder)
    case "compactMap": source.compactMap { $0 > 0 ? $0 : nil }.subscribe(recorder)
    case "scan": source.scan(0, +).subscribe(recorder)
    default: source.breakpoint().subscribe(recorder)
    }
    #expect(recorder.events.first == .subscription("Upstream"))
    // request and cancel go straight upstream.
    recorder.request(.max(2))
    recorder.cancel()
    let upstream = source.subscriptions.first
    #expect(upstream?.requests == [.max(3), .max(2)])
    #expect(upstream?.cancelCount == 1)
  }

  @Test func filterAsksForOneMorePerDroppedValueAndReturnsDownstreamDemandOtherwise() {
    let source = HeldPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(
      initialDemand: .max(1), demandAfterValue: { _ in .max(4) })
    source.filter { $0.isMultiple(of: 2) }.subscribe(recorder)
    source.send(subscription: TestSubscription())
    #expect(source.send(1) == .max(1))
    #expect(source.send(2) == .max(4))
    #expect(recorder.values == [2])
  }

  @Test func ignoreOutputPassesTheSubscriptionDownThenRequestsUnlimited() {
    let source = TestPublisher<Int, Never>(subscriptionDescription: "Upstream")
    let recorder = RecordingSubscriber<Never, Never>(initialDemand: .none)
    source.ignoreOutput().subscribe(recorder)
    #expect(recorder.events.first == .subscription("Upstream"))
    #expect(source.subscriptions.first?.requests == [.unlimited])
    _ = source.send(1)
    source.send(completion: .finished)
    #expect(recorder.events.count == 2)
    #expect(recorder.completion == .finished)
  }

  @Test func dropFirstSubscribesDownstreamFirstAndSumsEarlyDemandWithItsCount() {
    let source = HeldPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2))
    source.dropFirst(3).subscribe(recorder)
    #expect(recorder.events == [.subscription("Drop")])
    recorder.request(.max(1))
    let upstream = TestSubscription()
    source.send(subscription: upstream)
    #expect(upstream.requests == [.max(6)])
    for value in 1...5 { _ = source.send(value) }
    #expect(recorder.values == [4, 5])
    recorder.request(.max(7))
    #expect(upstream.requests == [.max(6), .max(7)])
    recorder.cancel()
  }

  @Test func dropFirstTrapsOnANegativeCountWhenSubscribedNotWhenBuilt() async {
    _ = Just(1).eraseToAnyPublisher().dropFirst(-1)  // building it is fine, as in Combine
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = Just(1).eraseToAnyPublisher().dropFirst(-1).sink { _ in }
    }
    #expect(standardError(of: result).contains("API Violation: dropFirst(_:) with count -1"))
  }

  // MARK: Signals before the subscription

  @Test func tryMapHandlesAValueBeforeItsSubscriptionAsIfSubscribed() {
    let source = HeldPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, any Error>(
      initialDemand: .none, demandAfterValue: { _ in .max(5) })
    source.tryMap { $0 * 10 }.subscribe(recorder)
    #expect(source.send(4) == .max(5))
    #expect(recorder.values == [40])
  }

  @Test func aCompletionBeforeTheSubscriptionEndsCollectByCountButNotTryMap() {
    // Combine (per a suite checked against it): encode, decode and collect(n) handle it as if
    // subscribed; tryMap, tryScan and output drop it.
    let collecting = HeldPublisher<Int, Never>()
    let batches = RecordingSubscriber<[Int], Never>()
    collecting.collect(2).subscribe(batches)
    collecting.send(completion: .finished)
    #expect(batches.values.isEmpty)
    #expect(batches.completion == .finished)
    let mapping = HeldPublisher<Int, Never>()
    let mapped = RecordingSubscriber<Int, any Error>()
    mapping.tryMap { $0 }.subscribe(mapped)
    mapping.send(completion: .finished)
    #expect(mapped.events.isEmpty)
    let scanning = HeldPublisher<Int, Never>()
    let scanned = RecordingSubscriber<Int, any Error>()
    scanning.tryScan(0, +).subscribe(scanned)
    #expect(scanning.send(2) == .none)
    scanning.send(completion: .finished)
    #expect(scanned.values == [2])
    #expect(scanned.completion == nil)
  }

  @Test func tryFilterTrapsOnAValueBeforeItsSubscription() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let source = HeldPublisher<Int, Never>()
      source.tryFilter { _ in true }.subscribe(RecordingSubscriber<Int, any Error>())
      _ = source.send(1)
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: TryFilter received a value before its upstream subscription"))
  }

  @Test func removeDuplicatesTrapsOnACompletionBeforeItsSubscription() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let source = HeldPublisher<Int, Never>()
      source.removeDuplicates().subscribe(RecordingSubscriber<Int, Never>())
      source.send(completion: .finished)
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: RemoveDuplicates received a completion before its upstream subscription"))
  }

  // MARK: Descriptions and mirrors

  @Test func mirrorsShowCombinesChildrenAsSoonAsTheOperatorSubscribed() {
    func labels<P: Publisher>(_ make: (HeldPublisher<Int, Never>) -> P) -> [String?] {
      let source = HeldPublisher<Int, Never>()
      let recorder = RecordingSubscriber<P.Output, P.Failure>()
      make(source).subscribe(recorder)
      defer { recorder.cancel() }  // dropFirst hands the recorder its own subscription
      return mirrorLabels(source.subscriberObject)
    }
    #expect(labels { $0.map { $0 } } == [])
    #expect(labels { $0.filter { $0 > 0 } } == [])
    #expect(labels { $0.tryMap { $0 } } == [])
    #expect(labels { $0.scan(0, +) } == ["downstream", "result"])
    #expect(labels { $0.tryScan(0, +) } == ["downstream", "status", "result"])
    #expect(labels { $0.tryFilter { _ in true } } == ["downstream"])
    #expect(labels { $0.removeDuplicates() } == ["downstream", "last"])
    #expect(labels { $0.reduce(0, +) } == ["downstream", "result", "initial", "status"])
    #expect(labels { $0.first() } == ["downstream", "result", "initial", "status"])
    #expect(labels { $0.collect() } == ["count"])
    #expect(labels { $0.collect(2) } == ["downstream", "upstreamSubscription", "buffer", "count"])
    #expect(labels { $0.dropFirst() } == [])
    #expect(labels { $0.map(\.bitWidth) } == ["keyPath"])
    #expect(labels { $0.assertNoFailure() } == ["file", "line", "prefix"])
    // The downstream child is already there before the upstream subscription arrives.
    let source = HeldPublisher<Int, Never>()
    source.tryFilter { _ in true }.subscribe(RecordingSubscriber<Int, any Error>())
    let mirror = customMirror(of: source.subscriberObject)
    #expect(mirror?.children.first.map { "\($0.value)" } == "Optional(RecordingSubscriber)")
  }

  @Test func subjectAndJustSubscriptionMirrors() {
    let subject = PassthroughSubject<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    subject.subscribe(recorder)
    let conduit = recorder.subscription
    #expect(mirrorLabels(conduit) == ["parent", "downstream", "demand", "subject"])
    recorder.cancel()
    let ended = customMirror(of: conduit)?.children.map { "\($0.value)" }
    #expect(ended?[0] == "nil" && ended?[1] == "nil" && ended?[3] == "nil")
    let just = RecordingSubscriber<Int, Never>(initialDemand: .none)
    Just(42).subscribe(just)
    let children = customMirror(of: just.subscription)?.children
    #expect(children.map { $0.map(\.label) } == [nil])
    #expect(children?.first.map { "\($0.value)" } == "42")
    just.cancel()
  }

  // MARK: Small items

  @Test func currentValueSubjectSendAfterCompletionKeepsTheValue() {
    let subject = CurrentValueSubject<Int, Never>(1)
    subject.send(completion: .finished)
    subject.send(2)
    #expect(subject.value == 1)
    subject.value = 3  // setting the property still stores, as in Combine
    #expect(subject.value == 3)
  }

  @Test func singleValueTryComparisonsCallTheClosureOnceAndFailWithItsError() throws {
    var calls: [[Int]] = []
    let kept = Just(4).tryMin {
      calls.append([$0, $1]); return $0 < $1
    }
    #expect(calls == [[4, 4]])
    #expect(try kept.result.get() == 4)
    let failed = Just(4).tryRemoveDuplicates { _, _ in throw TestError(code: 9) }
    #expect(throws: TestError.self) { try failed.result.get() }
    let result = Result<Int, TestError>.success(2).publisher.tryMax { _, _ in
      throw TestError(code: 3)
    }
    #expect(throws: TestError.self) { try result.result.get() }
    // A failure passes through without calling the closure.
    let failure = Result<Int, TestError>.failure(TestError(code: 1)).publisher.tryMin { _, _ in
      Issue.record("called on a failure")
      return true
    }
    #expect(throws: TestError.self) { try failure.result.get() }
  }

  @Test func immediateSchedulerRepeatingRunsOnceAndReturnsTheEmptySubscription() {
    var runs = 0
    let scheduler = ImmediateScheduler.shared
    let cancellable = scheduler.schedule(after: scheduler.now, interval: 1) { runs += 1 }
    #expect(runs == 1)
    #expect("\(cancellable)" == "Empty")
  }

  @Test func printWritesToAStreamAsSwiftPrintDoes() {
    final class Writes: TextOutputStream, @unchecked Sendable {
      // Safety: used from this test's thread only.
      var writes: [String] = []
      func write(_ string: String) { writes.append(string) }
    }
    let stream = Writes()
    _ = Empty<Int, Never>().print("e", to: stream).sink { _ in }
    #expect(Array(stream.writes.prefix(3)) == ["", "e: receive subscription: (Empty)", "\n"])
  }
}
