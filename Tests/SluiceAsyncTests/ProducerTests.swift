import Dispatch
import Foundation
import SluiceAsync
import SluiceTestSupport
import SluiceTesting
import Synchronization
import Testing

/// Suspends until the current task is cancelled.
func waitForCancellation() async {
  let (stream, continuation) = AsyncStream<Never>.makeStream()
  await withTaskCancellationHandler {
    for await _ in stream {}
  } onCancel: {
    continuation.finish()
  }
}

@Suite("AsyncFuture")
struct AsyncFutureTests {
  @Test func runsOnFirstDemandOncePerSubscriber() async {
    let runs = Box<Int>(0)
    let future = AsyncFuture<Int, Never> {
      runs.update { $0! += 1 }
      return 42
    }
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    future.subscribe(recorder)
    #expect(runs.value == 0, "nothing runs before the first request")
    recorder.request(.max(1))
    #expect(await recorder.waitForCompletion() == .finished)
    #expect(recorder.values == [42])
    let second = RecordingSubscriber<Int, Never>()
    future.subscribe(second)
    await second.waitForCompletion()
    #expect(runs.value == 2)
  }

  @Test func failsWithTheClosuresOwnErrorType() async {
    let future = AsyncFuture { () async throws(TestError) -> Int in throw TestError(code: 6) }
    let recorder = RecordingSubscriber<Int, TestError>()
    future.subscribe(recorder)
    #expect(await recorder.waitForCompletion() == .failure(TestError(code: 6)))
  }

  @Test func cancelCancelsTheTask() async {
    let events = Box<[String]>([])
    let checker = RuleChecker()
    let future = AsyncFuture<Int, Never> {
      events.update { $0?.append("started") }
      await waitForCancellation()
      events.update { $0?.append("cancelled") }
      return 1
    }
    let recorder = RecordingSubscriber<Int, Never>()
    future.checkingRules(checker).subscribe(recorder)
    #expect(await eventually { events.value == ["started"] })
    recorder.cancel()
    #expect(await eventually { events.value == ["started", "cancelled"] })
    #expect(recorder.values.isEmpty && recorder.completion == nil, "nothing after cancel()")
    #expect(checker.violations.isEmpty)
  }

  @Test("a request inside receive(subscription:) starts the task once that call returns")
  func requestInsideReceiveSubscription() async {
    // A subscriber that asks for values and then goes on working in receive(subscription:)
    // (storing the subscription, logging): the task's value and completion must not overlap
    // that call, as no signal may overlap another.
    let checker = RuleChecker()
    let ran = Atomic<Bool>(false)
    let ranDuringTheCall = Atomic<Bool>(false)
    let completed = await onThreadOfItsOwn { () -> Bool in
      let done = DispatchSemaphore(value: 0)
      AsyncFuture<Int, Never> {
        ran.store(true, ordering: .releasing)
        return 1
      }.checkingRules(checker).subscribe(
        AnySubscriber(
          receiveSubscription: { subscription in
            subscription.request(.unlimited)
            // Long enough for an idle pool to run a task that had started.
            let deadline = ContinuousClock.now + .milliseconds(200)
            while ContinuousClock.now < deadline {
              if ran.load(ordering: .acquiring) { ranDuringTheCall.store(true, ordering: .relaxed) }
              usleep(1_000)
            }
          },
          receiveValue: { _ in .none }, receiveCompletion: { _ in done.signal() }))
      return done.wait(timeout: .now() + 600) == .success
    }
    #expect(completed)
    let overlapped = ranDuringTheCall.load(ordering: .relaxed)
    #expect(!overlapped, "the task ran inside the call")
    #expect(checker.violations.isEmpty, "\(checker.violations)")
  }

  @Test func awaitingAnAsyncFuture() async throws {
    #expect(try await AsyncFuture<String, Never> { "done" }.firstValue() == "done")
  }
}

@Suite("AsyncProducer")
struct AsyncProducerTests {
  @Test("send suspends at zero demand: the producer never runs ahead")
  func backpressure() async {
    let sent = Box<Int>(0)
    let producer = AsyncProducer<Int, Never> { sender in
      for value in 1...1_000 {
        guard await sender.send(value) else { return }
        sent.update { $0! += 1 }
      }
    }
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(3))
    producer.subscribe(recorder)
    #expect(await recorder.waitForValues(count: 3) == [1, 2, 3])
    #expect(await eventually { sent.value == 3 })
    for _ in 0..<1_000 { await Task.yield() }
    #expect(recorder.values.count == 3, "no value beyond demand")
    recorder.request(.max(2))
    #expect(await recorder.waitForValues(count: 5) == [1, 2, 3, 4, 5])
    recorder.cancel()
  }

  @Test func returningFinishesAndThrowingFails() async {
    let finishing = AsyncProducer<Int, Never> { sender in
      await sender.send(1)
      await sender.send(2)
    }
    let a = RecordingSubscriber<Int, Never>()
    finishing.subscribe(a)
    #expect(await a.waitForCompletion() == .finished)
    #expect(a.values == [1, 2])

    let failing = AsyncProducer<Int, TestError> { sender throws(TestError) in
      await sender.send(1)
      throw TestError(code: 8)
    }
    let b = RecordingSubscriber<Int, TestError>()
    failing.subscribe(b)
    #expect(await b.waitForCompletion() == .failure(TestError(code: 8)))
    #expect(b.values == [1])
  }

  @Test("cancel makes a parked send return false and cancels the task")
  func cancellation() async {
    let exit = Box<String>()
    let producer = AsyncProducer<Int, Never> { sender in
      var value = 0
      while await sender.send(value) { value += 1 }
      exit.set(Task.isCancelled ? "send returned false, task cancelled" : "send returned false")
    }
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2))
    weak var weakSubscription: AnyObject?
    producer.subscribe(recorder)
    weakSubscription = recorder.subscription as AnyObject?
    #expect(weakSubscription != nil, "the release check below would pass vacuously")
    #expect(await recorder.waitForValues(count: 2) == [0, 1])
    recorder.cancel()
    #expect(await eventually { exit.value != nil })
    #expect(exit.value == "send returned false, task cancelled")
    #expect(await eventually { weakSubscription == nil })
    #expect(recorder.completion == nil)
  }

  @Test("an async sequence piped through a producer keeps every value, in order")
  func producerRulesWithManyValues() async {
    let checker = RuleChecker()
    let producer = AsyncProducer<Int, Never> { sender in
      for value in 0..<10_000 { await sender.send(value) }
    }
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(7), demandPerValue: .max(1))
    producer.checkingRules(checker).subscribe(recorder)
    #expect(await recorder.waitForCompletion(timeout: .seconds(600)) == .finished)
    #expect(recorder.values == Array(0..<10_000))
    #expect(checker.violations.isEmpty, "\(checker.violations.prefix(3))")
  }

  @Test("sends from many child tasks take turns: serial, within demand, nothing lost")
  func concurrentSends() async {
    let checker = RuleChecker()
    let producer = AsyncProducer<Int, Never> { sender in
      await withTaskGroup(of: Void.self) { group in
        for task in 0..<8 {
          group.addTask {
            for index in 0..<250 { await sender.send(task * 1_000 + index) }
          }
        }
      }
    }
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(5), demandPerValue: .max(1))
    producer.checkingRules(checker).subscribe(recorder)
    #expect(await recorder.waitForCompletion() == .finished)
    let values = recorder.values
    #expect(values.count == 2_000)
    for task in 0..<8 {
      let fromTask = values.filter { $0 / 1_000 == task }
      #expect(fromTask == Array(task * 1_000..<task * 1_000 + 250), "each task's order is kept")
    }
    #expect(checker.violations.isEmpty, "\(checker.violations.prefix(3))")
  }

  /// The scenario of an independent thread-sanitizer report (issue 14): 8 child tasks of one
  /// producer each send 2,000 values at once, the turns handed from task to task by
  /// `AsyncTurns`. Run under `--sanitize=thread` in CI; `SLUICE_STRESS_ROUNDS` runs more rounds.
  @Test("8 child tasks × 2,000 sends, many rounds: every value once, each task's order kept")
  func concurrentSendsFromEightTasksManyRounds() async {
    let rounds = ProcessInfo.processInfo.environment["SLUICE_STRESS_ROUNDS"].flatMap(Int.init) ?? 6
    for round in 0..<rounds {
      let producer = AsyncProducer<Int, Never> { sender in
        await withTaskGroup(of: Void.self) { group in
          for task in 0..<8 {
            group.addTask {
              for index in 0..<2_000 { await sender.send(task * 10_000 + index) }
            }
          }
        }
      }
      // Even rounds: unlimited demand (sends never park); odd rounds: a few at a time (sends
      // park on demand and on each other's turns).
      let recorder =
        round.isMultiple(of: 2)
        ? RecordingSubscriber<Int, Never>(initialDemand: .unlimited)
        : RecordingSubscriber<Int, Never>(initialDemand: .max(3), demandPerValue: .max(1))
      producer.subscribe(recorder)
      // A deadline against a hang only: under the thread sanitizer on a machine whose cores are
      // busy with other work, a round took longer than the default 30 s.
      #expect(await recorder.waitForCompletion(timeout: .seconds(900)) == .finished)
      let values = recorder.values
      #expect(values.count == 16_000, "round \(round)")
      for task in 0..<8 {
        let fromTask = values.filter { $0 / 10_000 == task }
        #expect(fromTask == Array(task * 10_000..<task * 10_000 + 2_000), "round \(round)")
      }
    }
  }
}
