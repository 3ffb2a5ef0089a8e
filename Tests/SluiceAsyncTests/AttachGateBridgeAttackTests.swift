import Dispatch
import Foundation
import SluiceAsync
import SluiceCore
import SluiceTestSupport
import Synchronization
import Testing

/// Adversarial tests of the attach's pacing (commit 721d1f1) with the async bridges: senders
/// on the cooperative pool (tasks, `asyncSequence.publisher` upstreams) block at a subject's
/// `AttachGate` while a subscriber attaches slowly; `subject.values` and `stream` consumers
/// must still get every value, and nothing may starve the pool for good. Blocking work runs on
/// threads of their own; every wait is bounded.
@Suite("Bridges: the attach gate, attacked", .onThreadsOfTheirOwn)
struct AttachGateBridgeAttackTests {
  /// Starts `body` on a thread of its own; the semaphore is signalled as it returns.
  static func start(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
    let returned = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      body()
      returned.signal()
    }
    return returned
  }

  /// A subscriber whose `receive(subscription:)` requests `.unlimited` and then sets itself up
  /// slowly (sleeping: waiting for no other thread).
  final class SlowAttacher: Subscriber, @unchecked Sendable {
    // Safety: `values` is a Mutex; the rest is set at init or under it.
    typealias Input = Int
    typealias Failure = Never
    let values = Mutex<[Int]>([])
    let subscription = Mutex<Shared<any Subscription>?>(nil)
    let setUp: @Sendable () -> Void
    init(setUp: @escaping @Sendable () -> Void) { self.setUp = setUp }
    func receive(subscription: any Subscription) {
      let shared = Shared(subscription)
      self.subscription.withLock { $0 = shared }
      subscription.request(.unlimited)
      setUp()
    }
    func receive(_ input: Int) -> Subscribers.Demand {
      values.withLock { $0.append(input) }
      return .none
    }
    func receive(completion: Subscribers.Completion<Never>) {}
    func cancel() { subscription.withLock { $0 }?.value.cancel() }
  }

  /// Two pool tasks flood a subject (each blocks at the gate of each slow attach), a task
  /// iterates `subject.values`, and a thread of its own attaches ten slow subscribers one
  /// after another: everything ends; the `values` consumer sees each sender's values in order.
  @Test func valuesConsumerAndPoolFloodersWhileSlowAttaches() async {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let consumerReady = DispatchSemaphore(value: 0)
    let consumer = Task { () -> [Int] in
      var seen: [Int] = []
      var iterator = shared.value.values.makeAsyncIterator()
      consumerReady.signal()
      while let value = await iterator.next() { seen.append(value) }
      return seen
    }
    #expect(await Self.waitOffPool(consumerReady, seconds: 120))
    // Let the iterator subscribe (its first next()).
    try? await Task.sleep(for: .milliseconds(50))
    let flooders = (0..<2).map { index in
      Task { for value in 0..<5_000 { shared.value.send(index * 100_000 + value) } }
    }
    let attachers = Self.start {
      for _ in 0..<10 {
        let spy = SlowAttacher { usleep(10_000) }
        shared.value.subscribe(spy)
        spy.cancel()
      }
    }
    let attachersDone = await Self.waitOffPool(attachers, seconds: 120)
    #expect(attachersDone, "the slow attaches returned")
    let floodersDone = await withTaskGroup(of: Void.self) { group in
      for flooder in flooders { group.addTask { await flooder.value } }
      group.addTask { try? await Task.sleep(for: .seconds(10)) }
      var finished = 0
      for await _ in group {
        finished += 1
        if finished == 2 { group.cancelAll(); break }
      }
      return true
    }
    #expect(floodersDone)
    subject.send(completion: .finished)
    let seen = await consumer.value
    for index in 0..<2 {
      let mine = seen.filter { $0 / 100_000 == index }
      #expect(zip(mine, mine.dropFirst()).allSatisfy { $0 < $1 }, "sender \(index) in order")
    }
  }

  /// Two `asyncSequence.publisher` upstreams (tasks on the pool) feed a subject (through
  /// `subscribe(subject)`) and wait at the gate of a slow attach on a thread of its own;
  /// meanwhile the attach's set-up starts a task and waits (2 s at most) for it — a task
  /// unrelated to the subject. With as many flooding tasks as the pool has threads, it may not
  /// run until the attach ends: documented (*Differences from Combine*: a set-up that waits for
  /// anything that needs a sending thread — here a pool thread — can deadlock; give the wait a
  /// timeout). Pinned: the attach returns after its timeout, the task then runs, nothing hangs.
  @Test func slowAttachWaitingForAnUnrelatedTaskWhilePoolSendersBlock() async {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let sink = subject.sink { _ in }
    let ranEventually = DispatchSemaphore(value: 0)
    let spy = SlowAttacher {
      usleep(50_000)  // the upstreams' tasks reach the gate
      let ran = DispatchSemaphore(value: 0)
      Task.detached {
        ranEventually.signal()
        ran.signal()
      }
      _ = ran.wait(timeout: .now() + 2)
    }
    let counts = (0..<2).map { index in
      AsyncStream<Int> { continuation in
        for value in 0..<2_000 { continuation.yield(index * 100_000 + value) }
        continuation.finish()
      }
    }
    for stream in counts {
      stream.publisher.map { $0 }.subscribe(
        AnySubscriber(
          receiveSubscription: { subscription in
            subscription.request(.unlimited)
          },
          receiveValue: { value in
            shared.value.send(value)
            return .none
          }, receiveCompletion: { _ in }))
    }
    let attached = Self.start { shared.value.subscribe(spy) }
    let returned = await Self.waitOffPool(attached, seconds: 120)
    #expect(returned, "the attach returned")
    let ran = await Self.waitOffPool(ranEventually, seconds: 120)
    #expect(ran, "the task ran once the attach ended")
    spy.cancel()
    sink.cancel()
  }

  /// A slow attach from a task on the pool while two tasks flood: the attaching task holds a
  /// pool thread, the flooders block at its gate (the pool has two threads). Everything ends,
  /// every value after the attach reaches the subscriber in order.
  @Test func attachFromATaskWhileTasksFlood() async {
    for _ in 0..<5 {
      let subject = PassthroughSubject<Int, Never>()
      let shared = Shared(subject)
      final class Flag: Sendable { let value = Atomic<Bool>(false) }
      let inside = Flag()
      let spy = SlowAttacher {
        inside.value.store(true, ordering: .releasing)
        usleep(20_000)
      }
      let attach = Task { shared.value.subscribe(spy) }
      let flooders = (0..<2).map { index in
        Task {
          while !inside.value.load(ordering: .acquiring) { await Task.yield() }
          for value in 0..<3_000 { shared.value.send(index * 100_000 + value) }
        }
      }
      let all = Task {
        await attach.value
        for flooder in flooders { await flooder.value }
      }
      let done = DispatchSemaphore(value: 0)
      Task {
        await all.value
        done.signal()
      }
      let finished = await Self.waitOffPool(done, seconds: 120)
      #expect(finished, "attach and flooders finished")
      if !finished {
        spy.cancel()
        return
      }
      let values = spy.values.withLock { $0 }
      for index in 0..<2 {
        let mine = values.filter { $0 / 100_000 == index }
        #expect(zip(mine, mine.dropFirst()).allSatisfy { $0 < $1 })
        #expect(
          mine == Array(index * 100_000..<index * 100_000 + 3_000),
          "sender \(index): \(mine.count) values")
      }
      spy.cancel()
    }
  }

  /// Waits for `semaphore` on a thread of its own (never blocking a pool thread), `seconds` at
  /// most: a net (these waits check liveness; under the address sanitizer on a busy machine a
  /// task once waited over 5 s for a thread of the pool).
  static func waitOffPool(_ semaphore: DispatchSemaphore, seconds: Double) async -> Bool {
    await withCheckedContinuation { continuation in
      Thread.detachNewThread {
        let ok = semaphore.wait(timeout: .now() + seconds) == .success
        if ok { semaphore.signal() }
        continuation.resume(returning: ok)
      }
    }
  }
}
