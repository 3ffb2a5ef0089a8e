import Dispatch
import Foundation
import SluiceAsync
import SluiceTestSupport
import Synchronization
import Testing

/// The task-driven engine's per-value path without a lock: the task takes all the demand there
/// is at once and spends it one pull at a time, and calls the subscriber through a delivery
/// gate that lets `cancel()` release it. What it must keep: exactly as many pulls as demanded
/// (demand returned from `receive(_:)` included), no pull after a `cancel()` the task has
/// seen, and the subscriber released at once, or as the value in flight returns.
@Suite("Task-driven subscriptions: demand taken in one go, values through a gate")
struct TaskDrivenCreditTests {
  /// An async sequence of 1, 2, 3, … that counts its pulls (`next()` calls that produced a
  /// value). It yields its thread every 64 values, as a real source suspends now and then:
  /// one that never does holds a thread of the cooperative pool (two here) for as long as
  /// demand lasts, and with `.unlimited` the tests beside it would wait for ever.
  final class Counted: AsyncSequence, Sendable {
    let pulls = Atomic<Int>(0)
    let limit: Int

    init(limit: Int = .max) { self.limit = limit }

    struct AsyncIterator: AsyncIteratorProtocol {
      let source: Counted
      mutating func next() async -> Int? {
        let pulled = source.pulls.load(ordering: .relaxed)
        guard pulled < source.limit else { return nil }
        source.pulls.store(pulled + 1, ordering: .relaxed)
        if pulled % 64 == 63 { await Task.yield() }
        return pulled + 1
      }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(source: self) }
  }

  /// A subscriber that records what it gets and answers each value with `answer(value)`.
  final class Recorder: Subscriber, @unchecked Sendable {
    // Safety: every field is behind `lock`; the closures are set before subscribing.
    typealias Input = Int
    typealias Failure = Never
    let lock = NSLock()
    var values: [Int] = []
    var completions = 0
    var subscription: (any Subscription)?
    let initial: Subscribers.Demand
    let answer: @Sendable (Int) -> Subscribers.Demand
    let arrived = DispatchSemaphore(value: 0)
    let completed = DispatchSemaphore(value: 0)

    init(
      initial: Subscribers.Demand,
      answer: @escaping @Sendable (Int) -> Subscribers.Demand = { _ in .none }
    ) {
      self.initial = initial
      self.answer = answer
    }

    func receive(subscription: any Subscription) {
      lock.withLock { self.subscription = subscription }
      subscription.request(initial)
    }

    func receive(_ input: Int) -> Subscribers.Demand {
      lock.withLock { values.append(input) }
      let more = answer(input)
      arrived.signal()
      return more
    }

    func receive(completion: Subscribers.Completion<Never>) {
      lock.withLock { completions += 1 }
      completed.signal()
    }

    var snapshot: (values: [Int], completions: Int) { lock.withLock { (values, completions) } }
    func request(_ demand: Subscribers.Demand) { lock.withLock { subscription }?.request(demand) }
    func cancel() { lock.withLock { subscription }?.cancel() }
  }

  /// Waits (on a thread of its own, with a deadline) for `count` values.
  static func waitForValues(_ recorder: Recorder, _ count: Int) async -> Bool {
    await onThreadOfItsOwn {
      (0..<count).allSatisfy { _ in recorder.arrived.wait(timeout: .now() + 600) == .success }
    }
  }

  @Test("two requests, .max(3) then .max(2): exactly five pulls")
  func requestsAddUp() async {
    let source = Counted()
    let recorder = Recorder(initial: .max(3))
    source.publisher.subscribe(recorder)
    #expect(await Self.waitForValues(recorder, 3))
    recorder.request(.max(2))
    #expect(await Self.waitForValues(recorder, 2))
    // Parked now: give a wrong pull time to happen.
    try? await Task.sleep(for: .milliseconds(50))
    #expect(recorder.snapshot.values == [1, 2, 3, 4, 5])
    #expect(source.pulls.load(ordering: .relaxed) == 5)
    recorder.cancel()
  }

  @Test("demand returned from receive(_:) counts, and no more")
  func returnedDemandCounts() async {
    let source = Counted()
    // One requested; each of the first four values asks for one more: five in all.
    let recorder = Recorder(initial: .max(1)) { $0 < 5 ? .max(1) : .none }
    source.publisher.subscribe(recorder)
    #expect(await Self.waitForValues(recorder, 5))
    try? await Task.sleep(for: .milliseconds(50))
    #expect(recorder.snapshot.values == [1, 2, 3, 4, 5])
    #expect(source.pulls.load(ordering: .relaxed) == 5)
    recorder.cancel()
  }

  @Test("unlimited demand taken at once, then finished: every value, one completion")
  func unlimitedThenFinished() async {
    let source = Counted(limit: 1_000)
    let recorder = Recorder(initial: .unlimited)
    source.publisher.subscribe(recorder)
    let finished = await onThreadOfItsOwn {
      recorder.completed.wait(timeout: .now() + 600) == .success
    }
    #expect(finished)
    #expect(recorder.snapshot.values == Array(1...1_000))
    #expect(recorder.snapshot.completions == 1)
  }

  @Test("cancel() while the subscriber is inside a value: released as it returns, no pull after")
  func cancelDuringDelivery() async {
    final class Handles: @unchecked Sendable {
      // Safety: written before the thread below starts; then used by that thread only, until
      // the test reads them after it ended.
      weak var recorder: Recorder?
      var subscription: (any Subscription)?
    }
    let source = Counted()
    let entered = DispatchSemaphore(value: 0)
    let goOn = DispatchSemaphore(value: 0)
    let weak = Handles()
    do {
      let recorder = Recorder(initial: .unlimited) { value in
        if value == 1 {
          entered.signal()
          goOn.wait()
        }
        return .none
      }
      weak.recorder = recorder
      source.publisher.subscribe(recorder)
      weak.subscription = recorder.lock.withLock { recorder.subscription }
      // The subscription holds the recorder from here on, not the other way round.
      recorder.lock.withLock { recorder.subscription = nil }
    }
    // The delivery blocks a thread of the pool: everything until it is let go happens on a
    // thread of its own, so that it never waits for the pool (another test may hold the rest).
    let keptUnderTheDelivery = await onThreadOfItsOwn {
      guard entered.wait(timeout: .now() + 600) == .success else {
        goOn.signal()
        return false
      }
      weak.subscription?.cancel()
      weak.subscription = nil
      let kept = weak.recorder != nil
      goOn.signal()
      return kept
    }
    #expect(keptUnderTheDelivery, "not released under the delivery")
    #expect(await eventually { weak.recorder == nil }, "released once the delivery returned")
    try? await Task.sleep(for: .milliseconds(50))
    #expect(source.pulls.load(ordering: .relaxed) == 1, "no pull after the cancel was seen")
  }

  @Test("cancel() once the demand is spent: the subscriber is released, no more pulls")
  func cancelWhileParked() async {
    let source = Counted()
    weak var weakRecorder: Recorder?
    let subscription: (any Subscription)?
    do {
      let recorder = Recorder(initial: .max(2))
      weakRecorder = recorder
      source.publisher.subscribe(recorder)
      #expect(await Self.waitForValues(recorder, 2))
      subscription = recorder.lock.withLock { recorder.subscription }
      recorder.lock.withLock { recorder.subscription = nil }
    }
    // The task is parked, about to park, or (on a loaded machine) still leaving value 2's
    // delivery: released by cancel() itself, or as that delivery returns. (That an idle
    // subscription releases at once is TaskDrivenCreditAttackTests' stall-based test.)
    try? await Task.sleep(for: .milliseconds(20))
    subscription?.cancel()
    #expect(await eventually { weakRecorder == nil }, "released")
    try? await Task.sleep(for: .milliseconds(20))
    #expect(source.pulls.load(ordering: .relaxed) == 2)
  }

  @Test("cancel() from inside receive(_:) with demand left: nothing more, not even a completion")
  func cancelFromInside() async {
    let source = Counted(limit: 10)
    let holder = Mutex<Recorder?>(nil)
    let recorder = Recorder(initial: .unlimited) { value in
      if value == 3 { holder.withLock { $0 }?.cancel() }
      return .none
    }
    holder.withLock { $0 = recorder }
    source.publisher.subscribe(recorder)
    #expect(await Self.waitForValues(recorder, 3))
    try? await Task.sleep(for: .milliseconds(50))
    #expect(recorder.snapshot.values == [1, 2, 3])
    #expect(recorder.snapshot.completions == 0)
    #expect(source.pulls.load(ordering: .relaxed) == 3)
    holder.withLock { $0 = nil }
  }

  @Test("cancel() from another thread while values flow without limit: the pulls stop")
  func cancelStopsAnUnlimitedStream() async {
    for _ in 0..<50 {
      let source = Counted()
      let recorder = Recorder(initial: .unlimited)
      source.publisher.subscribe(recorder)
      #expect(await Self.waitForValues(recorder, 1))
      await onThreadOfItsOwn { recorder.cancel() }
      let afterCancel = recorder.snapshot.values.count
      try? await Task.sleep(for: .milliseconds(5))
      // At most the value the task was delivering as cancel() returned.
      #expect(recorder.snapshot.values.count <= afterCancel + 1)
      // A pull that began before the task saw the cancel may still end after this read.
      let pulls = source.pulls.load(ordering: .relaxed)
      try? await Task.sleep(for: .milliseconds(5))
      #expect(source.pulls.load(ordering: .relaxed) <= pulls + 1, "the task stopped pulling")
      #expect(recorder.snapshot.completions == 0)
    }
  }

  @Test("a kept Sender waiting for demand when the body returns: its send returns false")
  func keptSenderParkedWhenTheBodyReturns() async {
    let kept = Mutex<AsyncProducer<Int, Never>.Sender?>(nil)
    let (bodyMayReturn, letBodyReturn) = AsyncStream<Void>.makeStream()
    let producer = AsyncProducer<Int, Never> { sender in
      kept.withLock { $0 = sender }
      _ = await sender.send(1)
      for await _ in bodyMayReturn { break }
    }
    let recorder = Recorder(initial: .max(1))
    producer.subscribe(recorder)
    #expect(await Self.waitForValues(recorder, 1))
    let returned = Atomic<Int>(0)  // 0: waiting, 1: true, 2: false
    let sending = Task {
      let sent = await kept.withLock { $0 }!.send(2)  // no demand left: waits
      returned.store(sent ? 1 : 2, ordering: .relaxed)
    }
    try? await Task.sleep(for: .milliseconds(20))
    letBodyReturn.yield()
    #expect(await eventually { returned.load(ordering: .relaxed) != 0 })
    #expect(returned.load(ordering: .relaxed) == 2, "the send returned false")
    #expect(recorder.snapshot.values == [1])
    #expect(recorder.snapshot.completions == 1)
    sending.cancel()
    kept.withLock { $0 = nil }
  }
}
