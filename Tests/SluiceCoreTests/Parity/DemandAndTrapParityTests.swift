import Foundation
import SluiceCore
import SluiceTesting
import Testing

/// Combine's demand bookkeeping, early signals and traps in catch, retry, replaceError, output,
/// the reducing family, subjects as subscribers, Sink and handleEvents (issue: Combine parity).
@Suite("Combine parity: demand and traps")
struct DemandAndTrapParityTests {
  // MARK: catch and tryCatch

  @Test func catchCarriesOutstandingDemandToTheNewPublisherAndShowsItInItsMirror() throws {
    let source = TestPublisher<Int, TestError>()
    let fallback = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    source.catch { _ in fallback }.subscribe(recorder)
    let subscription = try #require(recorder.subscription)
    #expect(String(describing: subscription) == "Catch")
    #expect(mirrorLabels(subscription) == ["downstream", "demand"])
    #expect(customMirror(of: subscription)?.children.map { "\($0.value)" }.last == "max(0)")
    recorder.request(.max(3))
    source.send(1)
    #expect(customMirror(of: subscription)?.children.map { "\($0.value)" }.last == "max(2)")
    source.send(completion: .failure(TestError()))
    #expect(fallback.subscriptions.first?.requests == [.max(2)])
    fallback.send(2)
    fallback.send(completion: .finished)
    #expect(recorder.values == [1, 2])
    #expect(recorder.completion == .finished)
  }

  @Test func catchTrapsOnAValueBeyondTheOutstandingDemand() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let source = TestPublisher<Int, TestError>()
      source.catch { _ in Just(0) }.subscribe(RecordingSubscriber<Int, Never>(initialDemand: .none))
      source.send(1)
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: Catch received a value with no outstanding demand"))
  }

  @Test func tryCatchTrapsOnAValueBeforeItsSubscription() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let source = HeldPublisher<Int, TestError>()
      source.tryCatch { _ in Just(0) }.subscribe(RecordingSubscriber<Int, any Error>())
      _ = source.send(1)
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: TryCatch received a value before its upstream subscription"))
  }

  @Test func catchTrapsWhenTheFailedUpstreamFailsAgain() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let source = HeldPublisher<Int, TestError>()
      let fallback = TestPublisher<Int, Never>()
      source.catch { _ in fallback }.subscribe(RecordingSubscriber<Int, Never>())
      source.send(subscription: TestSubscription())
      source.send(completion: .failure(TestError()))
      source.send(completion: .failure(TestError()))
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: Catch received a completion from an upstream that had already failed"))
  }

  @Test func catchTrapsWhenTheHandlerMakesTheUpstreamFailReentrantly() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let source = HeldPublisher<Int, TestError>()
      source.catch { _ in
        source.send(completion: .failure(TestError()))
        return Just(0)
      }.subscribe(RecordingSubscriber<Int, Never>())
      source.send(subscription: TestSubscription())
      source.send(completion: .failure(TestError()))
    }
    #expect(standardError(of: result).contains("API Violation: Catch received a completion"))
  }

  @Test func catchIgnoresTheOldUpstreamAfterCancel() {
    let source = HeldPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, Never>()
    source.catch { _ in Just(0) }.subscribe(recorder)
    source.send(subscription: TestSubscription())
    recorder.cancel()
    source.send(completion: .failure(TestError()))  // no trap, no handler, nothing
    #expect(recorder.values.isEmpty)
    #expect(recorder.completion == nil)
  }

  // MARK: retry

  @Test func retrySendsReturnedDemandAsARequestAndReturnsNone() throws {
    let source = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(3)) { .max($0) }
    source.retry(2).subscribe(recorder)
    #expect(source.subscriptions[0].requests == [.max(3)])
    source.send(5)
    #expect(source.subscriptions[0].requests == [.max(3), .max(5)])
    #expect(source.subscriptions[0].totalDemand == .max(8), "retry returns .none")
    source.send(completion: .failure(TestError()))
    // The new attempt is asked for what is still outstanding: 3 − 1 + 5.
    #expect(source.subscriptions.count == 2)
    #expect(source.subscriptions[1].requests == [.max(7)])
    recorder.cancel()
  }

  @Test func retryWithANegativeCountRetriesWithoutLimit() {
    let source = HeldPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
    let retry = source.retry(-1)
    #expect(retry.retries == -1)
    retry.subscribe(recorder)
    for _ in 0..<1_000 {
      source.send(subscription: TestSubscription())
      source.send(completion: .failure(TestError()))
    }
    source.send(subscription: TestSubscription())
    #expect(source.send(7) == .none)
    #expect(recorder.values == [7])
    #expect(recorder.completion == nil)
    recorder.cancel()
    source.release()  // it keeps its subscriber, and retry keeps its upstream to resubscribe
  }

  @Test func retryPassesACompletionBeforeTheSubscriptionAndValuesBetweenAttempts() {
    let early = HeldPublisher<Int, TestError>()
    let finished = RecordingSubscriber<Int, TestError>()
    early.retry(1).subscribe(finished)
    early.send(completion: .finished)
    #expect(finished.completion == .finished)

    // The next attempt may send a value before its subscription arrives: it is delivered and
    // counted, and the attempt's subscription is asked for what is left.
    let source = HeldPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>(
      initialDemand: .max(3), demandPerValue: .max(2))
    source.retry(1).subscribe(recorder)
    let firstAttempt = TestSubscription()
    source.send(subscription: firstAttempt)
    source.send(completion: .failure(TestError()))
    #expect(source.send(1) == .none)
    let secondAttempt = TestSubscription()
    source.send(subscription: secondAttempt)
    #expect(recorder.values == [1])
    #expect(secondAttempt.requests == [.max(4)])
    recorder.cancel()
    early.release()  // they keep their subscribers, and retry keeps its upstream
    source.release()
  }

  @Test func retryTrapsOnAValueBeforeItsFirstSubscription() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let source = HeldPublisher<Int, TestError>()
      source.retry(1).subscribe(RecordingSubscriber<Int, TestError>())
      _ = source.send(1)
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: Retry received a value before its upstream subscription"))
  }

  @Test func retryTrapsOnAValueBeyondTheOutstandingDemand() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let source = TestPublisher<Int, TestError>()
      source.retry(1).subscribe(RecordingSubscriber<Int, TestError>(initialDemand: .none))
      source.send(1)
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: Retry received a value with no outstanding demand"))
  }

  // MARK: replaceError, output, the reducing family

  @Test func replaceErrorTrapsOnAValueBeyondTheOutstandingDemand() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let source = TestPublisher<Int, TestError>()
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
      source.replaceError(with: 0).subscribe(recorder)
      source.send(1)  // requested
      source.send(2)  // not requested
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: ReplaceError received a value with no outstanding demand"))
  }

  @Test func outputReturnsTheDownstreamsDemandForItsLastValue() {
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1), demandPerValue: .max(4))
    source.output(at: 1).subscribe(recorder)
    source.send(10)
    source.send(11)
    #expect(recorder.values == [11])
    #expect(recorder.completion == .finished)
    // 1 requested, 1 back for the skipped value, 4 returned with the last one.
    #expect(source.subscriptions[0].totalDemand == .max(6))
  }

  @Test(arguments: ["first", "last", "min", "max", "firstWhere", "lastWhere", "count", "reduce"])
  func reducingOperatorsWaitForAFirstRequestEvenWithNoValue(_ name: String) {
    let source = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    switch name {
    case "first": source.first().subscribe(recorder)
    case "last": source.last().subscribe(recorder)
    case "min": source.min().subscribe(recorder)
    case "max": source.max().subscribe(recorder)
    case "firstWhere": source.first { $0 > 0 }.subscribe(recorder)
    case "lastWhere": source.last { $0 > 0 }.subscribe(recorder)
    case "count": source.count().subscribe(recorder)
    default: source.reduce(0, +).subscribe(recorder)
    }
    #expect(source.subscriptions[0].requests == [.unlimited])
    source.send(completion: .finished)
    #expect(recorder.completion == nil, "\(name): the end waits for demand")
    recorder.request(.max(1))
    #expect(recorder.completion == .finished)
  }

  @Test func aReducingOperatorsFailureDoesNotWaitForDemand() {
    let source = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    source.last().subscribe(recorder)
    source.send(completion: .failure(TestError()))
    #expect(recorder.completion == .failure(TestError()))
  }

  // MARK: Early signals to Sink, handleEvents and print

  @Test func sinkHandlesAValueBeforeItsSubscriptionUntilItEnds() {
    let source = HeldPublisher<Int, Never>()
    var received: [Int] = []
    let sink = Subscribers.Sink<Int, Never>(
      receiveCompletion: { _ in }, receiveValue: { received.append($0) })
    source.subscribe(sink)
    _ = source.send(1)
    source.send(subscription: TestSubscription())
    _ = source.send(2)
    sink.cancel()
    _ = source.send(3)
    #expect(received == [1, 2])
  }

  @Test func handleEventsAndPrintPassAValueBeforeTheSubscriptionAndReturnTheDemand() {
    for kind in ["handleEvents", "print"] {
      let source = HeldPublisher<Int, Never>()
      var seen: [Int] = []
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none, demandPerValue: .max(42))
      if kind == "print" {
        struct Discard: TextOutputStream { mutating func write(_: String) {} }
        source.print("early", to: Discard()).subscribe(recorder)
      } else {
        source.handleEvents(receiveOutput: { seen.append($0) })
          .subscribe(recorder)
      }
      #expect(source.send(5) == .max(42), "\(kind)")
      #expect(recorder.values == [5], "\(kind)")
      if kind == "handleEvents" { #expect(seen == [5]) }
    }
  }

  // MARK: Subjects and futures

  @Test func observableObjectPublisherSubscriptionMirrorsItsDownstream() throws {
    let publisher = ObservableObjectPublisher()
    let recorder = RecordingSubscriber<Void, Never>()
    publisher.subscribe(recorder)
    let subscription = try #require(recorder.subscription)
    #expect(String(describing: subscription) == "ObservableObjectPublisher")
    #expect(mirrorLabels(subscription) == ["downstream"])
    recorder.cancel()
  }

  @Test func futureSubscriptionMirrorShowsCombinesChildrenAndForgetsThemAtTheEnd() throws {
    let pending = Future<Int, TestError> { _ in }
    let waiting = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    pending.subscribe(waiting)
    let subscription = try #require(waiting.subscription)
    #expect(mirrorLabels(subscription) == ["parent", "downstream", "hasAnyDemand", "subject"])
    let children = customMirror(of: subscription)?.children.map { "\($0.value)" } ?? []
    #expect(children[0].contains("Future"))
    #expect(children[2] == "false")

    let failed = Future<Int, TestError> { $0(.failure(TestError())) }
    var kept: (any Subscription)?
    failed.subscribe(Probe<Int, TestError>(onSubscription: { kept = $0 }))
    let endedSubscription = try #require(kept)
    let after = customMirror(of: endedSubscription)?.children.map { "\($0.value)" } ?? []
    #expect(after == ["nil", "nil", "false", "nil"])
    waiting.cancel()
  }

  @Test func assignAndCatchTailMirrors() throws {
    final class Target { var value = 0 }
    let target = Target()
    let assign = Subscribers.Assign(object: target, keyPath: \Target.value)
    #expect(mirrorLabels(assign) == ["object", "keyPath", "status"])
    #expect(customMirror(of: assign)?.children.map { "\($0.value)" }.last == "awaitingSubscription")
    // The replacement publisher of `catch` sees a subscriber described as the operator.
    let fallback = HeldPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    Fail<Int, TestError>(error: TestError()).catch { _ in fallback }.subscribe(recorder)
    #expect(String(describing: fallback.subscriberObject!) == "Catch")
    #expect(mirrorLabels(fallback.subscriberObject) == ["downstream", "demand"])
    recorder.cancel()
  }

  @Test func passthroughConduitMirrorNamesTheSubject() throws {
    let subject = PassthroughSubject<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    subject.subscribe(recorder)
    let subscription = try #require(recorder.subscription)
    let parent = customMirror(of: subscription)?.children.first.map { "\($0.value)" }
    #expect(parent?.contains("PassthroughSubject") == true)
    recorder.cancel()
  }

  // MARK: Optional.Publisher.output(in:)

  @Test func optionalOutputInChecksItsUpperBoundAsCombineDoes() async {
    #expect(Just(1).output(in: 0...).output == 1, "Just's specialization does not")
    // Just's specialization looks only at where the range starts, as Combine's does.
    #expect(Just(1).output(in: 0..<0).output == 1)
    #expect(Just(1).output(in: -10..<10).output == nil)
    #expect(Just(1).output(in: 1..<10).output == nil)
    #expect(Optional(1).publisher.output(in: 0..<5).output == 1)
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = Optional(12).publisher.output(in: 0..<(.max - 1))
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: Optional.Publisher.output(in:) with upper bound"))
  }
}
