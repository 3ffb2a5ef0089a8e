import Dispatch
import Foundation
import SluiceAsync
import SluiceTestSupport
import SluiceTesting
import Synchronization
import Testing

/// An async sequence of `0..<count` that counts every pull, and can fail at the end.
struct CountingSequence: AsyncSequence, Sendable {
  typealias Element = Int
  typealias Failure = TestError

  let count: Int
  let failAtEnd: Bool
  let pulls: PullCounter

  init(count: Int, failAtEnd: Bool = false, pulls: PullCounter = PullCounter()) {
    self.count = count
    self.failAtEnd = failAtEnd
    self.pulls = pulls
  }

  struct AsyncIterator: AsyncIteratorProtocol {
    let sequence: CountingSequence
    var next = 0

    mutating func next(isolation actor: isolated (any Actor)?) async throws(TestError) -> Int? {
      sequence.pulls.value.add(1, ordering: .relaxed)
      guard next < sequence.count else {
        if sequence.failAtEnd { throw TestError(code: 3) }
        return nil
      }
      defer { next += 1 }
      return next
    }

    mutating func next() async throws(TestError) -> Int? { try await next(isolation: nil) }
  }

  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(sequence: self) }
}

final class PullCounter: Sendable {
  let value = Atomic<Int>(0)
  var count: Int { value.load(ordering: .relaxed) }
}

@Suite("asyncSequence.publisher")
struct AsyncSequencePublisherTests {
  @Test("nothing runs until the first request; .max(3) then .max(2) pulls exactly 5")
  func exactPulls() async {
    let sequence = CountingSequence(count: 1_000_000)
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    sequence.publisher.subscribe(recorder)
    #expect(sequence.pulls.count == 0, "no task before the first request")
    recorder.request(.max(3))
    #expect(await recorder.waitForValues(count: 3) == [0, 1, 2])
    recorder.request(.max(2))
    #expect(await recorder.waitForValues(count: 5) == [0, 1, 2, 3, 4])
    // Demand is now zero: the task parks instead of pulling a sixth element.
    #expect(sequence.pulls.count == 5)
    recorder.cancel()
  }

  @Test func unlimitedDemandDeliversEverythingThenTheFailure() async {
    let recorder = RecordingSubscriber<Int, TestError>()
    CountingSequence(count: 100, failAtEnd: true).publisher.subscribe(recorder)
    #expect(await recorder.waitForCompletion() == .failure(TestError(code: 3)))
    #expect(recorder.values == Array(0..<100))
  }

  @Test func asyncStreamPublisherCannotFail() async {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    let publisher: AsyncSequencePublisher<AsyncStream<Int>> = stream.publisher
    let recorder = RecordingSubscriber<Int, Never>()  // Failure == Never: type-checked
    publisher.subscribe(recorder)
    for value in 1...3 { continuation.yield(value) }
    continuation.finish()
    #expect(await recorder.waitForCompletion() == .finished)
    #expect(recorder.values == [1, 2, 3])
  }

  @Test func demandReturnedFromReceiveCounts() async {
    let recorder = RecordingSubscriber<Int, TestError>(
      initialDemand: .max(1), demandPerValue: .max(1))
    CountingSequence(count: 50).publisher.subscribe(recorder)
    #expect(await recorder.waitForCompletion() == .finished)
    #expect(recorder.values == Array(0..<50))
  }

  @Test func eachSubscriberGetsItsOwnIteration() async {
    let publisher = CountingSequence(count: 10).publisher
    let a = RecordingSubscriber<Int, TestError>()
    let b = RecordingSubscriber<Int, TestError>()
    publisher.subscribe(a)
    publisher.subscribe(b)
    await a.waitForCompletion()
    await b.waitForCompletion()
    #expect(a.values == Array(0..<10) && b.values == Array(0..<10))
  }

  @Test("cancel while parked at zero demand: the task ends and everything is released")
  func cancelWhileParked() async {
    let checker = RuleChecker()
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
    weak var weakSubscription: AnyObject?
    CountingSequence(count: 1_000).publisher.checkingRules(checker).subscribe(recorder)
    #expect(await recorder.waitForValues(count: 1) == [0])
    weakSubscription = recorder.subscription as AnyObject?
    #expect(weakSubscription != nil, "the release check below would pass vacuously")
    recorder.cancel()
    #expect(await eventually { weakSubscription == nil }, "the task and subscription are released")
    #expect(recorder.values == [0])
    #expect(recorder.completion == nil)
    #expect(checker.violations.isEmpty, "\(checker.violations)")
  }

  @Test("cancel while the task waits inside the sequence: the task is cancelled")
  func cancelWhilePulling() async {
    let sequence = WaitsForCancellation()
    let recorder = RecordingSubscriber<Int, Never>()
    weak var weakSubscription: AnyObject?
    sequence.publisher.subscribe(recorder)
    weakSubscription = recorder.subscription as AnyObject?
    #expect(weakSubscription != nil, "the release check below would pass vacuously")
    #expect(await eventually { sequence.events.value == ["entered next()"] })
    recorder.cancel()
    #expect(await eventually { sequence.events.value?.last == "saw cancellation" })
    #expect(await eventually { weakSubscription == nil })
    #expect(recorder.completion == nil, "nothing after cancel()")
  }

  @Test(
    "cancel before the pool runs the task: the sequence is released at once",
    .onThreadsOfTheirOwn)
  func cancelBeforeTheTaskRuns() async {
    // Every cooperative-pool thread of the task's priority is held (briefly) by a task that
    // waits for the check, so the subscription's task cannot have begun: whatever the sequence
    // holds (an `AsyncStream` iterator whose upstream a dropped stream cancels) must go with the
    // cancel, not when a busy pool gets round to the task.
    let held = await PoolHolder.holdEveryThread(priority: .medium)
    final class Resource: Sendable {}
    weak var weakResource: Resource?
    let recorder = RecordingSubscriber<Int, Never>()
    func subscribe() {
      let resource = Resource()
      weakResource = resource
      let sequence = AsyncStream<Int> { continuation in
        continuation.onTermination = { _ in withExtendedLifetime(resource) {} }
      }
      sequence.publisher(priority: .medium).subscribe(recorder)
    }
    subscribe()
    let subscribed = weakResource != nil
    recorder.cancel()
    let released = weakResource == nil
    held.release()
    #expect(subscribed, "the release check would pass vacuously")
    #expect(released, "the body (and the sequence it holds) was kept by a task not yet run")
    #expect(await eventually { weakResource == nil })
  }

  @Test("concurrent request() from many threads: exact demand, serial signals")
  func concurrentRequests() async {
    let checker = RuleChecker()
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    CountingSequence(count: 10_000).publisher.checkingRules(checker).subscribe(recorder)
    let subscription = Shared(recorder.subscription!)
    await concurrently(64) { _ in subscription.value.request(.max(2)) }
    #expect(await recorder.waitForValues(count: 128).count == 128)
    recorder.cancel()
    #expect(recorder.values == Array(0..<128))
    #expect(checker.violations.isEmpty, "\(checker.violations)")
  }

  @Test func zeroDemandTraps() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
      CountingSequence(count: 1).publisher.subscribe(recorder)
      recorder.request(.none)
    }
    #expect(standardError(of: result).contains("request(.none) on a AsyncSequence subscription"))
  }
}

/// An async sequence whose `next()` waits until its task is cancelled, recording both.
struct WaitsForCancellation: AsyncSequence, Sendable {
  typealias Element = Int
  typealias Failure = Never
  let events = Box<[String]>([])

  struct AsyncIterator: AsyncIteratorProtocol {
    let events: Box<[String]>
    mutating func next(isolation actor: isolated (any Actor)?) async -> Int? {
      events.update { $0?.append("entered next()") }
      let (stream, continuation) = AsyncStream<Never>.makeStream()
      await withTaskCancellationHandler {
        for await _ in stream {}
      } onCancel: {
        continuation.finish()
      }
      events.update { $0?.append("saw cancellation") }
      return nil
    }
    mutating func next() async -> Int? { await next(isolation: nil) }
  }

  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(events: events) }
}

/// Holds every cooperative-pool thread of one priority with a task that blocks until
/// ``release()``: for the few microseconds of a check that no new task of that priority can
/// begin meanwhile. The pool has one thread per core.
final class PoolHolder: Sendable {
  private let running = Atomic<Int>(0)
  private let gate = DispatchSemaphore(value: 0)
  private let count = ProcessInfo.processInfo.activeProcessorCount

  /// Returns once every thread of the pool is held.
  static func holdEveryThread(priority: TaskPriority) async -> PoolHolder {
    let holder = PoolHolder()
    for _ in 0..<holder.count {
      Task(priority: priority) { holder.hold() }
    }
    await onThreadOfItsOwn {
      while holder.running.load(ordering: .acquiring) < holder.count { usleep(100) }
    }
    return holder
  }

  private func hold() {
    running.add(1, ordering: .releasing)
    gate.wait()
  }

  /// Lets every held thread go.
  func release() {
    for _ in 0..<count { gate.signal() }
  }
}
