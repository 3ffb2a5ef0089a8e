import Dispatch
import Foundation
import SluiceAsync
import SluiceTestSupport
import Synchronization
import Testing

/// A user value, closure, subscriber, subscription or continuation that the async bridges (and
/// the schedulers they offer) let go of must not be released while they hold their own lock. Values whose `deinit` comes back into the same object re-enter a
/// non-recursive `Mutex` (a trap) — each shape runs in a process of its own, with a deadline.
@Suite("Async bridges, attacked: nothing released under their lock", .serialized)
struct BridgeLockAttackTests {
  /// A value whose `deinit` runs `onDeinit` (an app's resource that closes, cancels, reports).
  typealias Resource = DeinitCallback

  // MARK: ClockScheduler

  /// Waits (10 s at most) until the scheduler's worker has ended and let go of the clock: the
  /// process exits right after the test, and a worker still alive then keeps the heartbeat's
  /// weak-reference side table, which the leak checker sees only through the object's encoded
  /// reference count (and so reports as leaked).
  static func awaitWorkerEnd(holding clock: () -> AnyObject?) {
    let deadline = Date().addingTimeInterval(10)
    while clock() != nil {
      precondition(Date() < deadline, "the scheduler's worker kept its clock")
      usleep(1_000)
    }
  }

  /// A soon action that ran in a round cut short by a repeating action (a heartbeat) is let go
  /// of at the top of the next round, inside the worker's lock (`soon.removeFirst(nextSoon)`,
  /// ClockScheduler.swift:269). Its captured value's `deinit` schedules a clean-up on the same
  /// scheduler: `enqueueSoon` takes the lock again.
  @Test("ClockScheduler: an action that ran is released under the worker's lock (deinit schedules)")
  func clockSchedulerReleasesARanActionUnderItsLock() async {
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        weak var weakClock: ManualClock?
        do {
          let clock = ManualClock()
          weakClock = clock
          let scheduler = ClockScheduler(clock: clock)
          let gate = DispatchSemaphore(value: 0)
          let running = DispatchSemaphore(value: 0)
          let cleanedUp = DispatchSemaphore(value: 0)
          // Keeps the worker busy while the next round's actions are queued.
          scheduler.schedule {
            running.signal()
            gate.wait()
          }
          running.wait()
          do {
            let resource = Resource { scheduler.schedule { cleanedUp.signal() } }
            scheduler.schedule { withExtendedLifetime(resource) {} }  // A: before the heartbeat
          }
          let heartbeat = scheduler.schedule(
            after: scheduler.now, interval: .seconds(60), tolerance: .zero, options: nil
          ) {}
          scheduler.schedule {}  // B: after the heartbeat, waits for the next round
          gate.signal()
          precondition(cleanedUp.wait(timeout: .now() + 10) == .success, "no clean-up ran")
          heartbeat.cancel()
        }
        Self.awaitWorkerEnd(holding: { weakClock })
      }
    }
  }

  /// The same place, where the action that ran holds the last reference to the scheduler
  /// (a pipeline's own scheduler): `ClockScheduler.deinit` calls `stop()`, which takes the lock.
  @Test("ClockScheduler: an action that ran holds the last reference to its scheduler")
  func clockSchedulerActionHoldsTheLastReferenceToItsScheduler() async {
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        weak var weakClock: ManualClock?
        do {
          let clock = ManualClock()
          weakClock = clock
          let gate = DispatchSemaphore(value: 0)
          let running = DispatchSemaphore(value: 0)
          let released = DispatchSemaphore(value: 0)
          let heartbeat: any Cancellable
          do {
            let scheduler = ClockScheduler(clock: clock)
            scheduler.schedule {
              running.signal()
              gate.wait()
            }
            running.wait()
            let resource = Resource { released.signal() }
            scheduler.schedule { [scheduler] in withExtendedLifetime((scheduler, resource)) {} }
            heartbeat = scheduler.schedule(
              after: scheduler.now, interval: .seconds(60), tolerance: .zero, options: nil
            ) {}
            scheduler.schedule {}
          }
          gate.signal()
          precondition(released.wait(timeout: .now() + 10) == .success, "the action was kept")
          heartbeat.cancel()
        }
        Self.awaitWorkerEnd(holding: { weakClock })
      }
    }
  }

  // MARK: values / stream

  /// `bufferingNewest(2)`, four sending threads, two tasks sharing one iterator, values whose
  /// `deinit` sometimes sends a marker back into the subject: every value is either delivered
  /// once or evicted (released undelivered), none twice, none kept.
  @Test(
    "values(bufferingNewest:): concurrent senders and shared consumers, evictions that send",
    .onThreadsOfTheirOwn)
  func bufferingNewestUnderContention() async {
    final class Counters: @unchecked Sendable {
      // Safety: all state in `lock`.
      let lock = NSLock()
      var delivered: [Int: Int] = [:]
      var deinits: Set<Int> = []
      var duplicates = 0
    }
    let counters = Counters()
    let subject = PassthroughSubject<Resource, Never>()
    let senders = 4
    let perSender = 2_000
    let markerBase = 1_000_000
    let markers = Atomic<Int>(0)
    @Sendable func make(_ id: Int) -> Resource {
      Resource(id) { [weak subject] in
        counters.lock.withLock { _ = counters.deinits.insert(id) }
        // Every 50th value's deinit sends a marker back into the upstream.
        if id < markerBase, id % 50 == 0 {
          let marker = markerBase + markers.add(1, ordering: .relaxed).oldValue
          subject?.send(
            Resource(marker) { counters.lock.withLock { _ = counters.deinits.insert(marker) } })
        }
      }
    }
    final class IteratorBox: @unchecked Sendable {
      // Safety: the bridge lets several tasks wait on one iterator; each `next` is called
      // through this box by one task at a time per call.
      var iterator: AsyncPublisher<PassthroughSubject<Resource, Never>>.Iterator
      init(_ iterator: AsyncPublisher<PassthroughSubject<Resource, Never>>.Iterator) {
        self.iterator = iterator
      }
    }
    let box = IteratorBox(subject.values(bufferingPolicy: .bufferingNewest(2)).makeAsyncIterator())
    let consumers = (0..<2).map { _ in
      Task.detached {
        var iterator = box.iterator
        while let value = await iterator.next() {
          counters.lock.withLock {
            counters.delivered[value.id, default: 0] += 1
            if counters.delivered[value.id]! > 1 { counters.duplicates += 1 }
          }
          if value.id % 7 == 0 { await Task.yield() }
        }
      }
    }
    await concurrently(senders) { sender in
      for index in 0..<perSender {
        subject.send(make(sender * perSender + index))
      }
    }
    subject.send(completion: .finished)
    for consumer in consumers { await consumer.value }
    let (delivered, deinits, duplicates) = counters.lock.withLock {
      (counters.delivered, counters.deinits, counters.duplicates)
    }
    let sent = senders * perSender + markers.load(ordering: .relaxed)
    #expect(duplicates == 0)
    // Everything sent was released (nothing kept), and the bridge kept at most 2 at a time.
    #expect(deinits.count == sent)
    #expect(delivered.count >= 2)
  }

  /// `stream(bufferingPolicy:)` (each policy) cancelled with values buffered whose `deinit`
  /// cancels the consuming task and sends into the upstream.
  @Test("stream: cancel releases buffered values that cancel the consumer and send upstream")
  func streamCancelWithBufferedValuesThatCallBack() async {
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        let policies: [AsyncBufferingPolicy] = [
          .unbounded, .bufferingNewest(3), .bufferingOldest(3), .prefetch(4), .demandOne,
        ]
        for policy in policies {
          let subject = PassthroughSubject<Resource, Never>()
          let consumer = Lock<Task<Void, Never>?>(nil)
          let stream = subject.stream(bufferingPolicy: policy)
          for index in 0..<6 {
            subject.send(
              Resource(index) {
                consumer.withLock { $0 }?.cancel()
                subject.send(Resource(-1) {})
              })
          }
          let started = DispatchSemaphore(value: 0)
          let task = Task.detached {
            started.signal()
            for await _ in stream { try? await Task.sleep(for: .seconds(60)) }
          }
          consumer.withLock { $0 = task }
          started.wait()
          task.cancel()
          let done = DispatchSemaphore(value: 0)
          Task.detached {
            await task.value
            done.signal()
          }
          precondition(done.wait(timeout: .now() + 10) == .success, "\(policy): hung")
        }
      }
    }
  }

  /// An error with a payload (an app's `SessionError(session)`) that arrived while values were
  /// still buffered, and the iterator is dropped before it is read: `cancelled()` sets the phase
  /// from `.finished(.failure(error))` to `.terminal` inside the bridge's lock
  /// (ValuesState.swift:192), so the payload is released under it. Probe: the payload's
  /// `deinit` looks at the bridge (a debugger's or logger's `Mirror`, which takes the lock).
  @Test("values: a failure's payload is released under the bridge's lock when the iterator goes")
  func failurePayloadReleasedUnderTheBridgeLock() async {
    struct SessionError: Error, @unchecked Sendable {
      // Safety: the payload is only released.
      let session: Resource
    }
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        var iterator: AsyncPublisher<PassthroughSubject<Int, SessionError>>.Iterator?
        let probe = Lock<(() -> Void)?>(nil)
        do {
          // The subject remembers its completion for late subscribers: it goes first, so that
          // the bridge holds the last reference to the error.
          let subject = PassthroughSubject<Int, SessionError>()
          iterator = subject.values(bufferingPolicy: .unbounded).makeAsyncIterator()
          let bridge = iterator!.bridgeForTesting
          probe.withLock { [weak bridge] in
            $0 = { if let bridge { _ = Mirror(reflecting: bridge).children.count } }
          }
          subject.send(1)
          subject.send(
            completion: .failure(SessionError(session: Resource { probe.withLock { $0 }?() })))
        }
        iterator = nil  // the consumer stopped early: the bridge is cancelled
      }
    }
  }

  /// `sink(isolatedTo:)`: the `AnyCancellable` is dropped by a buffered value's `deinit` while
  /// the cancel releases the buffer.
  @Test("sink(isolatedTo:): a buffered value's deinit cancels the sink again")
  func isolatedSinkBufferedValueCancelsAgain() async {
    actor Sink { var count = 0; func add() { count += 1 } }
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        let subject = PassthroughSubject<Resource, Never>()
        let sink = Sink()
        let gate = DispatchSemaphore(value: 0)
        let stored = Lock<AnyCancellable?>(nil)
        let cancellable = subject.sink(isolatedTo: sink, bufferingPolicy: .unbounded) {
          sink, value in
          if value.id == 0 { gate.wait() }
          sink.add()
        }
        stored.withLock { $0 = cancellable }
        subject.send(Resource(0) {})
        for index in 1...5 {
          subject.send(
            Resource(index) {
              stored.withLock { $0 }?.cancel()
              withExtendedLifetime(stored.withLock { $0.take() }) {}
            })
        }
        cancellable.cancel()
        gate.signal()
        usleep(100_000)
      }
    }
  }

  // MARK: asyncMap

  /// `asyncMap(maxConcurrent: 3)`: the first step fails (`tryAsyncMap`) while later results wait
  /// for their turn; their `deinit`s cancel and request on the subscription and send upstream.
  @Test("tryAsyncMap(maxConcurrent: 3): a step's failure drops waiting results that call back")
  func stepFailureDropsWaitingResultsThatCallBack() async {
    struct Failed: Error {}
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        let subject = PassthroughSubject<Int, Failed>()
        let stored = Lock<(any Subscription)?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let completed = DispatchSemaphore(value: 0)
        subject.tryAsyncMap(maxConcurrent: 3) { value throws(Failed) -> Resource in
          if value == 0 {
            // Waits until both later results are stored, then fails.
            await onThreadOfItsOwn { release.wait() }
            throw Failed()
          }
          defer { ready.signal() }
          return Resource(value) {
            let subscription = stored.withLock { $0 }
            subscription?.request(.max(1))
            subscription?.cancel()
            subject.send(99)
          }
        }.subscribe(
          AnySubscriber(
            receiveSubscription: { subscription in
              stored.withLock { $0 = subscription }
              subscription.request(.max(3))
            },
            receiveValue: { _ in .none }, receiveCompletion: { _ in completed.signal() }))
        subject.send(0)
        subject.send(1)
        subject.send(2)
        ready.wait()
        ready.wait()
        usleep(100_000)
        release.signal()
        precondition(completed.wait(timeout: .now() + 10) == .success)
      }
    }
  }

  /// `asyncMap(maxConcurrent: 3)`: the upstream fails while results wait for their turn (the
  /// first step still runs); their `deinit`s request, cancel and send upstream.
  @Test("asyncMap(maxConcurrent: 3): an upstream failure drops waiting results that call back")
  func upstreamFailureDropsWaitingResultsThatCallBack() async {
    struct Failed: Error {}
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        let subject = PassthroughSubject<Int, Failed>()
        let stored = Lock<(any Subscription)?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let completed = DispatchSemaphore(value: 0)
        subject.asyncMap(maxConcurrent: 3) { value -> Resource? in
          guard value != 0 else {
            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
            return nil
          }
          defer { ready.signal() }
          return Resource(value) {
            let subscription = stored.withLock { $0 }
            subscription?.request(.max(1))
            subscription?.cancel()
            subject.send(99)
          }
        }.subscribe(
          AnySubscriber(
            receiveSubscription: { subscription in
              stored.withLock { $0 = subscription }
              subscription.request(.max(3))
            },
            receiveValue: { _ in .none }, receiveCompletion: { _ in completed.signal() }))
        subject.send(0)
        subject.send(1)
        subject.send(2)
        ready.wait()
        ready.wait()
        usleep(100_000)
        subject.send(completion: .failure(Failed()))
        precondition(completed.wait(timeout: .now() + 10) == .success)
      }
    }
  }

  /// `asyncFilter(maxConcurrent: 4)`, values that drop the last reference to the pipeline's
  /// `AnyCancellable` in their `deinit` (kept by the filter, delivered later, or dropped).
  @Test("asyncFilter(maxConcurrent: 4): values whose deinit drops the sink's AnyCancellable")
  func asyncFilterValuesDropTheCancellable() async {
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        for _ in 0..<50 {
          let subject = PassthroughSubject<Resource, Never>()
          let stored = Lock<AnyCancellable?>(nil)
          let finished = DispatchSemaphore(value: 0)
          stored.withLock {
            $0 = subject.asyncFilter(maxConcurrent: 4) { value in value.id % 2 == 0 }
              .sink { _ in }
          }
          // Taken out of the test's own lock before it goes: cancelling releases values whose
          // `deinit` takes that lock again.
          for index in 0..<8 {
            subject.send(Resource(index) { withExtendedLifetime(stored.withLock { $0.take() }) {} })
          }
          subject.send(Resource(100) { finished.signal() })
          withExtendedLifetime(stored.withLock { $0.take() }) {}
          precondition(finished.wait(timeout: .now() + 10) == .success)
        }
      }
    }
  }

  // MARK: task-driven publishers

  /// `AsyncFuture` / `asyncSequence.publisher` cancelled before (and while) the task runs: the
  /// body holds a value whose `deinit` cancels the subscription again and drops the sink.
  @Test("AsyncFuture and asyncSequence.publisher: a body's value cancels again on release")
  func taskDrivenBodiesCallBackOnRelease() async {
    await #expect(processExitsWith: .success) {
      exitUnlessReturns {
        for round in 0..<200 {
          let stored = Lock<AnyCancellable?>(nil)
          let released = DispatchSemaphore(value: 0)
          let resource = Resource(round) {
            stored.withLock { $0 }?.cancel()
            withExtendedLifetime(stored.withLock { $0.take() }) {}
            released.signal()
          }
          if round % 2 == 0 {
            stored.withLock {
              $0 = AsyncFuture { () async -> Int in
                withExtendedLifetime(resource) {}
                try? await Task.sleep(for: .seconds(60))
                return 1
              }.sink { _ in }
            }
          } else {
            let (stream, continuation) = AsyncStream<Resource>.makeStream()
            continuation.yield(resource)
            stored.withLock { $0 = stream.publisher.sink { _ in } }
            _ = continuation
          }
          _ = consume resource
          if round % 3 == 0 { usleep(200) }
          stored.withLock { $0 }?.cancel()
          withExtendedLifetime(stored.withLock { $0.take() }) {}
          precondition(released.wait(timeout: .now() + 10) == .success, "round \(round): kept")
        }
      }
    }
  }
}
