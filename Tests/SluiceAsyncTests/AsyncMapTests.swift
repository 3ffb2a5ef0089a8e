import Dispatch
import SluiceAsync
import SluiceTesting
import Synchronization
import Testing

/// `asyncMap`, `tryAsyncMap` and `asyncFilter`: an `async` closure per value, in upstream order.
@Suite("Async-closure operators")
struct AsyncMapTests {
  /// Counts the closures running at once.
  final class Gauge: Sendable {
    let running = Mutex((now: 0, most: 0))
    func enter() {
      running.withLock {
        $0.now += 1; $0.most = max($0.most, $0.now)
      }
    }
    func leave() { running.withLock { $0.now -= 1 } }
    var most: Int { running.withLock { $0.most } }
  }

  @Test func resultsKeepUpstreamOrderWhateverFinishesFirst() async throws {
    let gauge = Gauge()
    let delays = [30, 5, 20, 1, 15, 2, 8, 3]
    let results = try await delays.publisher.asyncMap(maxConcurrent: 3) { delay in
      gauge.enter()
      defer { gauge.leave() }
      try? await Task.sleep(for: .milliseconds(delay))
      return delay * 10
    }.allValues()
    #expect(results == delays.map { $0 * 10 })
    #expect(gauge.most == 3)
  }

  @Test func upstreamDemandIsBoundedByWhatIsInFlightAndByDownstreamDemand() async {
    let upstream = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2))
    upstream.asyncMap(maxConcurrent: 4) { $0 + 1 }.subscribe(recorder)
    #expect(upstream.subscriptions[0].requests == [.max(2)])  // min(demand 2, 4 in flight)
    upstream.send(1)
    upstream.send(2)
    #expect(await recorder.waitForValues(count: 2, timeout: .seconds(900)) == [2, 3])
    recorder.request(.unlimited)
    #expect(await eventually { upstream.subscriptions[0].outstandingDemand == .max(4) })
    #expect(String(describing: recorder.subscription!) == "AsyncMap")
    recorder.cancel()
  }

  @Test func cancellingCancelsTheRunningTasksAtOnce() async {
    let cancelled = Mutex(0)
    let started = Mutex(0)
    let recorder = RecordingSubscriber<Int, Never>()
    [1, 2, 3].publisher.asyncMap(maxConcurrent: 3) { value in
      started.withLock { $0 += 1 }
      await withTaskCancellationHandler {
        try? await Task.sleep(for: .seconds(3_600))
      } onCancel: {
        cancelled.withLock { $0 += 1 }
      }
      return value
    }.subscribe(recorder)
    #expect(await eventually { started.withLock { $0 } == 3 })
    recorder.cancel()
    #expect(await eventually { cancelled.withLock { $0 } == 3 })
    #expect(recorder.values.isEmpty && recorder.completion == nil)
  }

  @Test func finishingWaitsForTheValuesInFlight() async {
    let recorder = RecordingSubscriber<Int, Never>()
    [1, 2].publisher.asyncMap(maxConcurrent: 2) { value in
      try? await Task.sleep(for: .milliseconds(20))
      return value
    }.subscribe(recorder)
    #expect(await recorder.waitForCompletion(timeout: .seconds(900)) == .finished)
    #expect(recorder.values == [1, 2])
  }

  @Test func aTypedErrorFailsInItsPlaceInTheOrder() async {
    let recorder = RecordingSubscriber<Int, TestError>()
    [1, 2, 3, 4].publisher.tryAsyncMap(maxConcurrent: 4) { (value) async throws(TestError) -> Int in
      if value == 3 { throw TestError(code: 3) }
      try? await Task.sleep(for: .milliseconds(value == 1 ? 30 : 1))
      return value
    }.subscribe(recorder)
    #expect(
      await recorder.waitForCompletion(timeout: .seconds(900)) == .failure(TestError(code: 3)))
    #expect(recorder.values == [1, 2])
  }

  @Test func anUntypedThrowFailsWithAnyError() async {
    struct Oops: Error {}
    await #expect(throws: Oops.self) {
      try await [1, 2].publisher.mapError { _ -> any Error in Oops() }.tryAsyncMap {
        value -> Int in
        if value == 2 { throw Oops() }
        return value
      }.allValues()
    }
  }

  @Test func asyncFilterKeepsOrderAndRejectedValuesUseNoDemand() async {
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(3))
    Array(1...10).publisher.asyncFilter(maxConcurrent: 2) { value in
      await Task.yield()
      return value % 3 == 0
    }.subscribe(recorder)
    #expect(await recorder.waitForValues(count: 3, timeout: .seconds(900)) == [3, 6, 9])
    // 10 is still to come: the demand used up, nothing more is asked of the upstream.
    recorder.request(.max(1))  // 10 is rejected: the upstream then finishes
    #expect(await recorder.waitForCompletion(timeout: .seconds(900)) == .finished)
    #expect(recorder.values == [3, 6, 9])
  }

  @Test func theClosureKeepsItsActorIsolation() async throws {
    @MainActor final class Model {
      var seen: [Int] = []
      func load(_ values: [Int]) async throws -> [Int] {
        try await values.publisher.asyncMap { @MainActor value in
          MainActor.assertIsolated()
          self.seen.append(value)  // main-actor state, from the closure
          return value * 2
        }.allValues()
      }
    }
    let model = Model()
    #expect(try await model.load([1, 2, 3]) == [2, 4, 6])
    #expect(await model.seen == [1, 2, 3])
  }

  @Test func usedFromAnActorWithAClosureOnTheActor() async throws {
    actor Indexer {
      var indexed: [String] = []
      func index(_ words: [String]) async throws -> [Int] {
        // The closure is the actor's (it touches actor state); the chain is awaited here.
        try await words.publisher.asyncMap(maxConcurrent: 2) { [self] word in
          await self.note(word)
        }.allValues()
      }
      func note(_ word: String) -> Int {
        indexed.append(word)
        return word.count
      }
    }
    let indexer = Indexer()
    #expect(try await indexer.index(["a", "bb", "ccc"]) == [1, 2, 3])
    #expect(await indexer.indexed.sorted() == ["a", "bb", "ccc"])
  }

  @Test func theTasksRunAtThePriorityAsked() async throws {
    let priorities = try await [1, 2].publisher.asyncMap(priority: .low) { _ in
      Task.currentPriority
    }.allValues()
    #expect(priorities == [.low, .low])
  }

  @Test func maxConcurrentOfZeroTraps() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = [1].publisher.asyncFilter(maxConcurrent: 0) { _ in true }.sink { _ in }
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: asyncFilter(maxConcurrent: 0): at least 1 value must be allowed in flight"))
  }
}
