import SluiceAsync
import SluiceTesting
import Synchronization
import Testing

/// One test per row of the table "Bad input, and what it gets" (the article "Guarantees and
/// misuse", Sources/Sluice/Sluice.docc/GuaranteesAndMisuse.md): every misuse a user can
/// commit, and what Sluice does (traps with the exact message, ignores, buffers, drops).
@Suite("Bad input, and what it gets (the documented table)")
struct MisuseTableTests {
  // MARK: Traps

  @Test("negative demand traps")
  func negativeDemand() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = Subscribers.Demand.max(-1)
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: Subscribers.Demand.max(-1): demand must not be negative"))
  }

  @Test("zero demand traps, naming the subscription")
  func zeroDemand() async {
    // `map` passes the subject's subscription through, so the subject's is the one named.
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
      PassthroughSubject<Int, Never>().map { $0 + 1 }.subscribe(recorder)
      recorder.request(.none)
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: request(.none) on a PassthroughSubject subscription: demand must not be "
          + "zero; request at least .max(1)"))
    let collect = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let recorder = RecordingSubscriber<[Int], Never>(initialDemand: .none)
      PassthroughSubject<Int, Never>().collect(2).subscribe(recorder)
      recorder.request(.none)
    }
    #expect(standardError(of: collect).contains("API Violation: request(.none) on a "))
  }

  @Test("a zero-sized buffer traps when subscribed")
  func zeroBufferSize() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = PassthroughSubject<Int, Never>()
        .buffer(size: 0, prefetch: .byRequest, whenFull: .dropOldest).sink { _ in }
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: buffer(size:) with count 0: the count must be at least 1"))
  }

  @Test("collect(0) traps")
  func collectZero() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = PassthroughSubject<Int, Never>().collect(0)
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: collect(_:) with count 0: the count must be at least 1"))
  }

  @Test("a values bridge prefetching 0 traps")
  func prefetchZero() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = AsyncBufferingPolicy.prefetch(0)
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: AsyncBufferingPolicy.prefetch(0): the buffer size must be at least 1"))
  }

  @Test("asyncMap allowing 0 values in flight traps when subscribed")
  func asyncMapZero() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = PassthroughSubject<Int, Never>().asyncMap(maxConcurrent: 0) { $0 }.sink { _ in }
    }
    #expect(standardError(of: result).contains("API Violation: asyncMap(maxConcurrent: 0)"))
  }

  @Test("negative counts and indices trap")
  func negativeCounts() async {
    let prefix = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = PassthroughSubject<Int, Never>().prefix(-1)
    }
    #expect(
      standardError(of: prefix).contains(
        "API Violation: prefix(_:) with count -1: the count must not be negative"))
    let dropFirst = await #expect(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      _ = PassthroughSubject<Int, Never>().dropFirst(-1).sink { _ in }  // when subscribed
    }
    #expect(
      standardError(of: dropFirst).contains(
        "API Violation: dropFirst(_:) with count -1: the count must not be negative"))
    let output = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = PassthroughSubject<Int, Never>().output(at: -1)
    }
    #expect(
      standardError(of: output).contains(
        "API Violation: output(at:) with index -1: the index must not be negative"))
  }

  @Test("an upstream sending values nobody requested: catch traps; map passes them on")
  func unrequestedValueToAnOperator() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let source = TestPublisher<Int, TestError>()
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
      source.catch { _ in Empty<Int, Never>() }.subscribe(recorder)
      for value in 0..<5 { source.send(value) }
    }
    #expect(
      standardError(of: result).contains(
        "received a value with no outstanding demand: a publisher must not send more values "
          + "than its subscriber requested"))
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    source.map { $0 }.subscribe(recorder)
    for value in 0..<3 { source.send(value) }
    #expect(recorder.values == [0, 1, 2])
  }

  @Test("a value before the subscription traps in an operator that tracks it")
  func valueBeforeSubscription() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      Misbehaving(valueFirst: true).retry(1).subscribe(
        RecordingSubscriber<Int, Never>(initialDemand: .unlimited))
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: Retry received a value before its upstream subscription: a publisher "
          + "must call receive(subscription:) first"))
  }

  @Test("a second completion traps in catch; Concatenate ignores it; map passes it on")
  func secondCompletion() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      FailsTwice().catch { _ in Empty<Int, Never>(completeImmediately: false) }
        .subscribe(RecordingSubscriber<Int, Never>(initialDemand: .unlimited))
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: Catch received a completion from an upstream that had already failed: "
          + "a publisher completes exactly once"))
    let concatenated = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
    Misbehaving(valueFirst: false).append(Empty<Int, Never>(completeImmediately: false))
      .subscribe(concatenated)
    #expect(concatenated.completion == nil, "the suffix is subscribed once; the rest ignored")
    concatenated.cancel()  // the suffix never completes
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
    Misbehaving(valueFirst: false).map { $0 }.subscribe(recorder)
    #expect(
      recorder.events == [
        .subscription("TestSubscription"), .completion(.finished), .completion(.finished),
      ])
  }

  // MARK: Ignored, buffered or dropped

  @Test("a second subscription to an operator is cancelled; the first goes on")
  func secondSubscription() {
    let first = TestSubscription()
    let second = TestSubscription()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    TwoSubscriptions(first: first, second: second).dropFirst(1).subscribe(recorder)
    #expect(second.isCancelled)
    #expect(!first.isCancelled)
    #expect(recorder.subscriptionCount == 1)
    #expect(first.requests == [.max(2)])  // dropFirst(1) asks for the one it drops too
    recorder.cancel()
  }

  @Test("request after cancel is ignored")
  func requestAfterCancel() {
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    source.map { $0 }.subscribe(recorder)
    let requestsBefore = source.subscriptions[0].requests
    recorder.cancel()
    recorder.subscription?.request(.max(5))
    #expect(source.subscriptions[0].requests == requestsBefore)
    #expect(source.subscriptions[0].isCancelled)
  }

  @Test("send after completion is ignored")
  func sendAfterCompletion() {
    let subject = PassthroughSubject<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
    subject.subscribe(recorder)
    subject.send(1)
    subject.send(completion: .finished)
    subject.send(2)
    subject.send(completion: .finished)
    #expect(
      recorder.events == [
        .subscription("PassthroughSubject"), .value(1), .completion(.finished),
      ])
  }

  @Test("a re-entrant send is delivered after the value being delivered, never nested")
  func reentrantSend() {
    let subject = PassthroughSubject<Int, Never>()
    let log = Mutex<[String]>([])
    let cancellable = subject.sink { value in
      log.withLock { $0.append("begin \(value)") }
      if value == 1 { subject.send(2) }
      log.withLock { $0.append("end \(value)") }
    }
    subject.send(1)
    #expect(log.withLock { $0 } == ["begin 1", "end 1", "begin 2", "end 2"])
    cancellable.cancel()
  }

  @Test("copies of one values iterator awaited at once share it: each value goes to one of them")
  func concurrentNext() async {
    let subject = PassthroughSubject<Int, Never>()
    let iterator = Shared(subject.values.makeAsyncIterator())
    let results = await withTaskGroup(of: [Int].self) { group in
      for _ in 0..<2 {
        group.addTask {
          var copy = iterator.value
          var seen: [Int] = []
          while let value = await copy.next() { seen.append(value) }
          return seen
        }
      }
      // No need to wait for the consumers: the iterator subscribed when it was made, and a
      // subject's `values` keeps what is sent until a `next()` takes it.
      for value in 0..<100 { subject.send(value) }
      subject.send(completion: .finished)
      var all: [[Int]] = []
      for await seen in group { all.append(seen) }
      return all
    }
    #expect(results.flatMap { $0 }.sorted() == Array(0..<100), "each value exactly once")
    for seen in results { #expect(seen == seen.sorted(), "in order within each consumer") }
  }

  @Test("an upstream sending values nobody requested never crashes a values bridge")
  func unrequestedValueToTheBridge() async {
    let source = TestPublisher<Int, Never>()
    var iterator = source.values.makeAsyncIterator()
    let first = Task { await iterator.next() }
    #expect(await eventually { source.subscriptions.first?.requests.isEmpty == false })
    for value in 0..<5 { source.send(value) }  // one requested, four not
    source.send(completion: .finished)
    #expect(await first.value == 0)
  }

  @Test("a subscriber that never requests gets nothing; a subject drops what it sends meanwhile")
  func subscriberThatNeverRequests() {
    let subject = PassthroughSubject<Int, Never>()
    let idle = RecordingSubscriber<Int, Never>(initialDemand: .none)
    subject.subscribe(idle)
    subject.send(1)
    idle.request(.max(1))
    subject.send(2)
    #expect(idle.values == [2])
    let cold = RecordingSubscriber<Int, Never>(initialDemand: .none)
    (1...3).publisher.subscribe(cold)
    #expect(cold.values.isEmpty)
    #expect(cold.completion == nil)
    idle.cancel()
    cold.cancel()
  }

  @Test("retry(0) passes the first failure on; a negative count retries without limit")
  func retryZeroAndNegative() {
    let attempts = Mutex(0)
    let failsThreeTimes = Deferred {
      let attempt = attempts.withLock { count -> Int in
        count += 1
        return count
      }
      return attempt <= 3
        ? Fail<Int, TestError>(error: TestError(code: attempt)).eraseToAnyPublisher()
        : Just(attempt).setFailureType(to: TestError.self).eraseToAnyPublisher()
    }
    let once = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited)
    failsThreeTimes.retry(0).subscribe(once)
    #expect(once.completion == .failure(TestError(code: 1)))
    #expect(attempts.withLock { $0 } == 1, "retry(0) subscribes once")
    attempts.withLock { $0 = 0 }
    let unlimited = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited)
    failsThreeTimes.retry(-1).subscribe(unlimited)
    #expect(unlimited.values == [4])
    #expect(unlimited.completion == .finished)
  }

}

/// A misbehaving publisher: hands its subscriber two subscriptions.
struct TwoSubscriptions: Publisher {
  typealias Output = Int
  typealias Failure = Never
  let first: TestSubscription
  let second: TestSubscription

  func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
    subscriber.receive(subscription: first)
    subscriber.receive(subscription: second)
  }
}

/// A misbehaving publisher: a value before the subscription (`valueFirst`), or two completions.
/// Fails twice: a second completion from the upstream `catch` moved on from.
struct FailsTwice: Publisher {
  struct Failed: Error {}
  typealias Output = Int
  typealias Failure = Failed

  func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Failed {
    subscriber.receive(subscription: TestSubscription())
    subscriber.receive(completion: .failure(Failed()))
    subscriber.receive(completion: .failure(Failed()))
  }
}

struct Misbehaving: Publisher {
  typealias Output = Int
  typealias Failure = Never
  let valueFirst: Bool

  func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
    if valueFirst { _ = subscriber.receive(0) }
    subscriber.receive(subscription: TestSubscription())
    subscriber.receive(completion: .finished)
    subscriber.receive(completion: .finished)
  }
}
