import Dispatch
import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// Values whose `deinit` sends, released where a thread holds no turn but must not block for
/// one: while it comes back to the waits it deferred from inside deliveries
/// (``DeliveryContext/resumeDeferred()``, ``DeliveryContext/mustNotBlock``), and between
/// queuing its own waiter and waiting for it (a `CurrentValueSubject`'s replaced value, a
/// `combineLatest`'s replaced latest value: released as the call ends, never under a lock).
/// A send that blocked there waited on the semaphore its other waiters signal, took one of
/// their signals for its own and returned with its value still queued; the turn later handed
/// to the thread was never taken, and every sender of the subject waited for ever
/// (`ReplayTurnAdversarialTests.deinitCallsBackDuringReplays`: 1 run in 37 to 130 with the
/// cores busy, or a trap on a deferred waiter signalled unresolved).
///
/// Each test runs in a process of its own (a trap must fail the test, not end the suite) with
/// a deadline against a hang, one at a time (`.serialized`: many such processes at once, under
/// a sanitizer, starved the rest of the suite on two cores).
@Suite("Liveness: values whose deinit sends, released where a thread must not block", .serialized)
struct ResumingDeferredTests {
  /// A value whose `deinit` sends the next generation (up to `last`) with `send`.
  final class Echo: Sendable {
    let generation: Int
    let last: Int
    let send: @Sendable (Echo) -> Void

    init(_ generation: Int, last: Int, send: @escaping @Sendable (Echo) -> Void) {
      self.generation = generation
      self.last = last
      self.send = send
    }

    deinit {
      if generation < last { send(Echo(generation + 1, last: last, send: send)) }
    }
  }

  static let senders = 8
  static let perSender = max(500, stressScaled(20_000))
  static let generations = 3

  /// Runs `body` on `threads` threads of their own; exits the process with 3 if one of them
  /// has not returned within the deadline.
  static func onThreads(_ threads: Int, _ body: @escaping @Sendable () -> Void) {
    let finished = DispatchSemaphore(value: 0)
    for _ in 0..<threads {
      Thread.detachNewThread {
        body()
        finished.signal()
      }
    }
    for _ in 0..<threads where finished.wait(timeout: .now() + 300) == .timedOut {
      FileHandle.standardError.write(Data("a send never returned\n".utf8))
      exit(3)
    }
  }

  /// Eight threads send values whose `deinit` sends the next generation (two more each) into
  /// a `PassthroughSubject`: the holder of the turn releases them inside deliveries (sends
  /// there are deferred while waiters are queued) and the deferring threads release them
  /// again as they come back to those waits. Every call returns and every value of every
  /// generation arrives once.
  @Test("PassthroughSubject: released inside deliveries and while coming back to deferred waits")
  func passthroughValuesSendFromDeinit() async {
    await #expect(processExitsWith: .success) {
      let subject = PassthroughSubject<Echo, Never>()
      let received = Atomic<Int>(0)
      let sinks = [
        subject.sink { _ in received.add(1, ordering: .relaxed) },
        subject.sink { _ in },
      ]
      let last = Self.generations - 1
      Self.onThreads(Self.senders) {
        for _ in 0..<Self.perSender {
          subject.send(Echo(0, last: last) { subject.send($0) })
        }
      }
      let expected = Self.senders * Self.perSender * Self.generations
      let got = received.load(ordering: .relaxed)
      guard got == expected else {
        FileHandle.standardError.write(Data("received \(got) of \(expected)\n".utf8))
        exit(4)
      }
      withExtendedLifetime(sinks) {}
    }
  }

  /// The same into a `CurrentValueSubject`: each send replaces the current value, whose
  /// `deinit` sends — after the sender's value was queued with a waiter of its own, when the
  /// turn is another thread's. Every call returns; every first-generation value arrives.
  @Test("CurrentValueSubject: replaced values released after the sender's wait, not before")
  func currentValuesSendFromDeinit() async {
    await #expect(processExitsWith: .success) {
      let subject = CurrentValueSubject<Echo?, Never>(nil)
      let firsts = Atomic<Int>(0)
      let sink = subject.sink { echo in
        if echo?.generation == 0 { firsts.add(1, ordering: .relaxed) }
      }
      let last = Self.generations - 1
      Self.onThreads(Self.senders) {
        for _ in 0..<Self.perSender {
          subject.send(Echo(0, last: last) { subject.send($0) })
        }
      }
      subject.send(nil)  // the last value's deinit sends its generations; nil then ends it
      subject.send(nil)
      subject.send(nil)
      let got = firsts.load(ordering: .relaxed)
      guard got == Self.senders * Self.perSender else {
        FileHandle.standardError.write(Data("received \(got) first values\n".utf8))
        exit(4)
      }
      sink.cancel()
    }
  }

  /// A `combineLatest` whose replaced latest value's `deinit` sends into its other upstream:
  /// released after the operator's lock (released under it, the send came back into the
  /// operator and trapped on the lock it held), delivered in order.
  @Test("combineLatest: a replaced value's deinit sends into the other upstream")
  func combineLatestReplacedValueSends() async {
    await #expect(processExitsWith: .success) {
      let a = PassthroughSubject<Echo, Never>()
      let b = PassthroughSubject<Int, Never>()
      let seen = Mutex<[Int]>([])
      let sink = a.combineLatest(b).sink { _, number in seen.withLock { $0.append(number) } }
      b.send(0)
      a.send(Echo(0, last: 1) { _ in b.send(1) })
      a.send(Echo(1, last: 1) { _ in })  // replaces the first: its deinit sends 1 into b
      let numbers = seen.withLock { $0 }
      guard numbers == [0, 0, 1] else {
        FileHandle.standardError.write(Data("combinations: \(numbers)\n".utf8))
        exit(4)
      }
      sink.cancel()
    }
  }
}
