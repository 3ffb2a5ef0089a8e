import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Synchronization
import Testing

@Suite("Just, Optional.Publisher, Result.Publisher", .onThreadsOfTheirOwn)
struct SingleValuePublisherTests {
  @Test func justDeliversOnDemandThenFinishes() {
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    Just(5).subscribe(recorder)
    #expect(recorder.events == [.subscription("Just")])
    recorder.request(.max(3))
    #expect(recorder.events == [.subscription("Just"), .value(5), .completion(.finished)])
    #expect(Just(1) == Just(1))
  }

  @Test func optionalAndResult() {
    let some = RecordingSubscriber<Int, Never>()
    Optional(3).publisher.subscribe(some)
    #expect(some.events == [.subscription("Optional"), .value(3), .completion(.finished)])
    let none = RecordingSubscriber<Int, Never>(initialDemand: .none)
    Optional<Int>.none.publisher.subscribe(none)
    #expect(none.events == [.subscription("Empty"), .completion(.finished)])

    let success = RecordingSubscriber<Int, TestError>()
    Result<Int, TestError>.success(4).publisher.subscribe(success)
    #expect(success.events == [.subscription("Once"), .value(4), .completion(.finished)])
    let failure = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    Result<Int, TestError>.Publisher(TestError(code: 2)).subscribe(failure)
    #expect(failure.events == [.subscription("Empty"), .completion(.failure(TestError(code: 2)))])
    #expect(Result<Int, TestError>.Publisher(1).result == .success(1))
  }

  @Test func zeroDemandTrapsForJust() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
      Just(1).subscribe(recorder)
      recorder.request(.none)
    }
    let message = standardError(of: result)
    #expect(message.contains("API Violation: request(.none) on a Just subscription"))
  }

  @Test func zeroDemandTrapsForOptionalAndResult() async {
    let optionalExit = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
      Optional(1).publisher.subscribe(recorder)
      recorder.request(.none)
    }
    #expect(
      standardError(of: optionalExit)
        .contains("API Violation: request(.none) on a Optional subscription"))
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
      Result<Int, Never>.success(1).publisher.subscribe(recorder)
      recorder.request(.none)
    }
    #expect(
      standardError(of: result)
        .contains("API Violation: request(.none) on a Once subscription"))
  }

  @Test func zeroDemandTrapsForCurrentValueSubject() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
      CurrentValueSubject<Int, Never>(1).subscribe(recorder)
      recorder.request(.none)
    }
    #expect(
      standardError(of: result)
        .contains("API Violation: request(.none) on a CurrentValueSubject subscription"))
  }

  @Test func zeroDemandTrapsForFuture() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
      Future<Int, Never> { $0(.success(1)) }.subscribe(recorder)
      recorder.request(.none)
    }
    let message = standardError(of: result)
    #expect(message.contains("API Violation: request(.none) on a Future subscription"))
  }
}

@Suite("Publishers.Sequence", .onThreadsOfTheirOwn)
struct SequencePublisherTests {
  @Test("max(3) then max(2) delivers exactly 5")
  func exactDemand() {
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(3))
    (1...1_000_000).publisher.subscribe(recorder)
    #expect(recorder.values == [1, 2, 3])
    recorder.request(.max(2))
    #expect(recorder.values == [1, 2, 3, 4, 5])
    #expect(recorder.completion == nil)
    recorder.cancel()
  }

  @Test func additionalDemandFromReceiveIsAdded() {
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1), demandPerValue: .max(1))
    [1, 2, 3].publisher.subscribe(recorder)
    #expect(recorder.values == [1, 2, 3])
    #expect(recorder.completion == .finished)
  }

  @Test func completionFollowsTheLastValueWithoutMoreDemand() {
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2))
    [1, 2].publisher.subscribe(recorder)
    #expect(recorder.completion == .finished)
  }

  @Test func descriptionShowsTheSequenceUntilDone() {
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    [1, 2].publisher.subscribe(recorder)
    let subscription = recorder.subscription
    #expect(subscription.map(String.init(describing:)) == "[1, 2]")
    #expect(recorder.events.first == .subscription("[1, 2]"))
    subscription?.cancel()
    #expect(subscription.map(String.init(describing:)) == "Sequence")
    let empty = RecordingSubscriber<Int, Never>()
    [Int]().publisher.subscribe(empty)
    #expect(empty.events == [.subscription("Empty"), .completion(.finished)])
  }

  @Test func zeroDemandIsIgnoredAsInCombine() {
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    [1].publisher.subscribe(recorder)
    recorder.request(.none)
    #expect(recorder.values.isEmpty)
    recorder.cancel()
  }

  /// The subscription holds its sequence, iterator, look-ahead value and subscriber: the
  /// subscriber is released on cancel while the subscription itself is still held, and the
  /// elements once the subscription is gone (until then it keeps the sequence: its mirror
  /// shows it).
  @Test("cancel releases the subscriber; dropping the subscription releases the elements")
  func releasesItsFields() {
    final class Element: Sendable {
      let released: @Sendable () -> Void
      init(released: @escaping @Sendable () -> Void) { self.released = released }
      deinit { released() }
    }
    let releasedCount = Mutex(0)
    let subscription = Box<any Subscription>()
    weak var weakProbe: Probe<Element, Never>?
    weak var weakRemaining: Element?
    do {
      let elements = (0..<3).map { _ in Element { releasedCount.withLock { $0 += 1 } } }
      weakRemaining = elements[2]
      let probe = Probe<Element, Never>(onSubscription: {
        subscription.set($0)
        $0.request(.max(1))
      })
      weakProbe = probe
      elements.publisher.subscribe(probe)
    }
    #expect(weakRemaining != nil, "the subscription holds what it has not delivered")
    subscription.value?.cancel()
    withExtendedLifetime(subscription.value) {
      #expect(weakProbe == nil, "cancel released the subscriber")
    }
    subscription.update { $0 = nil }
    #expect(weakRemaining == nil)
    #expect(releasedCount.withLock { $0 } == 3)

    weak var weakLast: Element?
    do {
      let last = Element {}
      weakLast = last
      let recorder = RecordingSubscriber<Element, Never>(initialDemand: .unlimited)
      Just(last).subscribe(recorder)
      #expect(recorder.completion == .finished)
    }
    #expect(weakLast == nil, "a finished Just subscription keeps nothing")
  }

  /// The subscription advances its iterator in place: an iterator that owns a copy-on-write
  /// buffer (a stack popping an array) copies it a bounded number of times — when it parts from
  /// the publisher's sequence, and from the copy the subscription keeps for its description —
  /// not once per element, which made such a sequence quadratic.
  @Test("the iterator is advanced in place, not copied per element")
  func iteratorAdvancedInPlace() {
    final class Items {
      var values: [Int]
      init(_ values: [Int]) { self.values = values }
    }
    final class Copies: @unchecked Sendable {
      // Safety: the subscription calls `next()` serially, from the test's thread.
      var count = 0
    }
    struct Stack: Sequence, IteratorProtocol {
      var items: Items
      let copies: Copies
      mutating func next() -> Int? {
        if !isKnownUniquelyReferenced(&items) {
          copies.count += 1
          items = Items(items.values)
        }
        return items.values.popLast()
      }
    }
    let copies = Copies()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
    Stack(items: Items(Array(0..<1_000)), copies: copies).publisher.subscribe(recorder)
    #expect(recorder.values == Array((0..<1_000).reversed()))
    #expect(recorder.completion == .finished)
    #expect(copies.count <= 2, "the iterator's buffer was copied \(copies.count) times")
  }

  @Test func eachSubscriberIteratesAfresh() {
    let publisher = [1, 2].publisher
    let a = RecordingSubscriber<Int, Never>()
    let b = RecordingSubscriber<Int, Never>()
    publisher.subscribe(a)
    publisher.subscribe(b)
    #expect(a.values == [1, 2] && b.values == [1, 2])
  }
}

@Suite("Record", .onThreadsOfTheirOwn)
struct RecordTests {
  @Test func playsBackValuesAndCompletion() {
    let record = Record<Int, TestError> { recording in
      recording.receive(1)
      recording.receive(2)
      recording.receive(completion: .failure(TestError()))
    }
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
    record.subscribe(recorder)
    #expect(recorder.events == [.subscription("[1, 2]"), .value(1)])
    recorder.request(.max(1))
    #expect(recorder.values == [1, 2])
    #expect(recorder.completion == .failure(TestError()))
  }

  @Test func emptyRecordingCompletesAtOnce() {
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    Record<Int, TestError>(output: [], completion: .failure(TestError(code: 9))).subscribe(recorder)
    #expect(recorder.events == [.subscription("Empty"), .completion(.failure(TestError(code: 9)))])
  }

  @Test func cancelledDescription() {
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    Record<Int, Never>(output: [1], completion: .finished).subscribe(recorder)
    let subscription = recorder.subscription
    subscription?.cancel()
    #expect(subscription.map(String.init(describing:)) == "Cancelled Events")
  }

  @Test func codableRoundTrip() throws {
    let record = Record<Int, TestError>(output: [1, 2], completion: .failure(TestError(code: 4)))
    let data = try JSONEncoder().encode(record)
    let decoded = try JSONDecoder().decode(Record<Int, TestError>.self, from: data)
    #expect(decoded.recording.output == [1, 2])
    #expect(decoded.recording.completion == .failure(TestError(code: 4)))
  }

  @Test func valueAfterCompletionTraps() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      var recording = Record<Int, Never>.Recording()
      recording.receive(completion: .finished)
      recording.receive(1)
    }
    let message = standardError(of: result)
    #expect(message.contains("API Violation: Record.Recording.receive(_:) called after"))
  }
}

@Suite("Empty, Fail, Deferred, AnyPublisher", .onThreadsOfTheirOwn)
struct SimplePublisherTests {
  @Test func empty() {
    let finishing = RecordingSubscriber<Int, Never>()
    Empty<Int, Never>().subscribe(finishing)
    #expect(finishing.events == [.subscription("Empty"), .completion(.finished)])
    let never = RecordingSubscriber<Int, Never>()
    Empty<Int, Never>(completeImmediately: false).subscribe(never)
    #expect(never.events == [.subscription("Empty")])
    #expect(
      Empty<Int, Never>()
        == Empty(completeImmediately: true, outputType: Int.self, failureType: Never.self))
    #expect(Empty<Int, Never>() != Empty(completeImmediately: false))
  }

  @Test func fail() {
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    Fail<Int, TestError>(error: TestError(code: 5)).subscribe(recorder)
    #expect(recorder.events == [.subscription("Empty"), .completion(.failure(TestError(code: 5)))])
    #expect(
      Fail(outputType: Int.self, failure: TestError()) == Fail<Int, TestError>(error: TestError()))
  }

  @Test func deferredCreatesAPublisherPerSubscriber() {
    let count = Box<Int>(0)
    let deferred = Deferred { () -> Just<Int> in
      count.update { $0! += 1 }
      return Just(count.value!)
    }
    #expect(count.value == 0)
    let a = RecordingSubscriber<Int, Never>()
    let b = RecordingSubscriber<Int, Never>()
    deferred.subscribe(a)
    deferred.subscribe(b)
    #expect(a.values == [1] && b.values == [2])
  }

  @Test func anyPublisher() {
    let erased = [1, 2].publisher.eraseToAnyPublisher()
    #expect(erased.description == "AnyPublisher")
    let twice = erased.eraseToAnyPublisher()
    let recorder = RecordingSubscriber<Int, Never>()
    twice.subscribe(recorder)
    #expect(recorder.values == [1, 2])
  }
}

@Suite("Future", .onThreadsOfTheirOwn)
struct FutureTests {
  @Test func runsAtOnceAndSharesTheResult() {
    let runs = Box<Int>(0)
    let future = Future<Int, Never> { promise in
      runs.update { $0! += 1 }
      promise(.success(1))
      promise(.success(2))  // ignored: the first call wins
    }
    let a = RecordingSubscriber<Int, Never>()
    let b = RecordingSubscriber<Int, Never>()
    future.subscribe(a)
    future.subscribe(b)
    #expect(runs.value == 1)
    #expect(a.events == [.subscription("Future"), .value(1), .completion(.finished)])
    #expect(b.values == [1])
  }

  @Test func waitsForDemandBeforeDeliveringASuccess() {
    let future = Future<Int, Never> { $0(.success(1)) }
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    future.subscribe(recorder)
    #expect(recorder.values.isEmpty)
    recorder.request(.max(1))
    #expect(recorder.values == [1] && recorder.completion == .finished)
  }

  @Test func deliversAFailureWithoutDemand() {
    let future = Future<Int, TestError> { $0(.failure(TestError())) }
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    future.subscribe(recorder)
    #expect(recorder.completion == .failure(TestError()))
  }

  @Test func fulfilledLaterFromAnotherThread() async {
    let promise = Box<Future<Int, Never>.Promise>()
    let future = Future<Int, Never> { promise.set($0) }
    let recorder = RecordingSubscriber<Int, Never>()
    future.subscribe(recorder)
    #expect(recorder.values.isEmpty)
    let fulfil = Shared(promise.value!)
    DispatchQueue.global().async { fulfil.value(.success(7)) }
    #expect(await recorder.waitForCompletion() == .finished)
    #expect(recorder.values == [7])
  }

  @Test(
    "a promise fulfilled on another thread during receive(subscription:) waits until it returns",
    arguments: [Result<Int, TestError>.success(7), .failure(TestError())])
  func fulfilledDuringReceiveSubscription(_ result: Result<Int, TestError>) {
    let promise = Box<Future<Int, TestError>.Promise>()
    let future = Future<Int, TestError> { promise.set($0) }
    let fulfil = Shared(promise.value!)
    let events = Box<[String]>([])
    let probe = Probe<Int, TestError>(
      onSubscription: { subscription in
        subscription.request(.unlimited)
        let fulfilled = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
          fulfil.value(result)
          fulfilled.signal()
        }
        fulfilled.wait()  // the promise returned: the delivery waits for this call to return
        events.update { $0!.append("subscribed") }
      },
      onValue: { value in
        events.update { $0!.append("value \(value)") }
        return .none
      },
      onCompletion: { completion in events.update { $0!.append("\(completion)") } })
    future.subscribe(probe)
    switch result {
    case .success:
      #expect(events.value == ["subscribed", "value 7", "finished"])
    case .failure:
      #expect(events.value == ["subscribed", "failure(TestError(1))"])
    }
  }

  @Test func racingFulfilRequestAndCancelDeliverAtMostOnce() async {
    for _ in 0..<200 {
      let promise = Box<Future<Int, Never>.Promise>()
      let future = Future<Int, Never> { promise.set($0) }
      let checker = RuleChecker()
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
      future.checkingRules(checker).subscribe(recorder)
      let shared = Shared((promise.value!, recorder))
      await concurrently(6) { index in
        switch index % 3 {
        case 0: shared.value.0(.success(index))
        case 1: shared.value.1.request(.max(1))
        default: if index == 5 { shared.value.1.cancel() }
        }
      }
      #expect(recorder.values.count <= 1)
      #expect(checker.violations.isEmpty, "\(checker.violations)")
    }
  }

  @Test func cancelledSubscriberIsReleased() {
    let future = Future<Int, Never> { _ in }
    let subscription = Box<any Subscription>()
    weak var weakProbe: Probe<Int, Never>?
    do {
      let probe = Probe<Int, Never>(onSubscription: { subscription.set($0) })
      weakProbe = probe
      future.subscribe(probe)
    }
    subscription.value?.cancel()
    withExtendedLifetime((future, subscription.value)) { #expect(weakProbe == nil) }
  }
}
