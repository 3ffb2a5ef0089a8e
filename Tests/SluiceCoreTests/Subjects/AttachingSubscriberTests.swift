import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import Synchronization
import Testing

/// A subscriber still inside `receive(subscription:)` receives nothing from another thread
/// (serial signals): what other threads send, complete or request meanwhile waits until that
/// call returns, while what the subscribing thread does itself (its request's replay, a value
/// an upstream sends inside it) is delivered at once, as in Combine. (Found by the address
/// sanitizer's run of `concurrentMixedTraffic`: a value sent on another thread reached a
/// subscriber that had requested inside `receive(subscription:)` before that call returned.)
/// The attack on it, and the recording subscriber both use, are in ``AttachAttackTests``.
@Suite("A subscriber attaching to a subject", .onThreadsOfTheirOwn)
struct AttachingSubscriberTests {
  typealias Spy = AttachAttackTests.Spy

  /// Runs `body` on another thread and waits (10 s at most) until it returns.
  static func onAnotherThread(_ body: @escaping @Sendable () -> Void) {
    #expect(AttachAttackTests.onAnotherThread(body), "the other thread's call returned")
  }

  @Test func valuesAndCompletionFromAnotherThreadWaitUntilTheAttachReturns() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let spy = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      Self.onAnotherThread {
        for value in 1...3 { shared.value.send(value) }
        shared.value.send(completion: .finished)
      }
    }
    spy.attach(to: subject)
    spy.expectRules()
    #expect(spy.values == [1, 2, 3])
    #expect(spy.snapshot.completions == 1)
  }

  @Test func aRequestFromAnotherThreadWaitsUntilTheAttachReturns() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let spy = Spy { spy, subscription in
      let sharedSubscription = Shared(subscription)
      Self.onAnotherThread {
        spy.request(sharedSubscription.value, .max(2))
        for value in 1...3 { shared.value.send(value) }
      }
    }
    spy.attach(to: subject)
    #expect(spy.values == [1, 2], "two demanded")
    subject.send(4)
    #expect(spy.values == [1, 2])
    spy.expectRules()
    spy.cancel()
  }

  @Test func theReplayIsSynchronousAndTheOtherThreadsValuesFollowIt() {
    let subject = CurrentValueSubject<Int, Never>(0)
    let shared = Shared(subject)
    let spy = Spy { spy, subscription in
      spy.request(subscription, .unlimited)  // replays 0 here, as in Combine
      Self.onAnotherThread {
        shared.value.send(1)
        shared.value.send(2)
      }
    }
    spy.attach(to: subject)
    #expect(spy.values == [0, 1, 2])
    #expect(spy.snapshot.deliveredInside == 1, "the replay is inside the request")
    subject.send(3)  // after the attach: the fast path
    #expect(spy.values == [0, 1, 2, 3])
    spy.expectRules()
    spy.cancel()
  }

  @Test func aReplayRequestedFromAnotherThreadWaitsUntilTheAttachReturns() {
    let subject = CurrentValueSubject<Int, Never>(0)
    let spy = Spy { spy, subscription in
      let sharedSubscription = Shared(subscription)
      Self.onAnotherThread { spy.request(sharedSubscription.value, .max(1)) }
    }
    spy.attach(to: subject)
    #expect(spy.values == [0], "replayed as the attach returned")
    spy.expectRules()
    spy.cancel()
  }

  @Test func aCancelFromAnotherThreadWhileAttachingEndsIt() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    weak var released: Spy?
    do {
      let spy = Spy { spy, subscription in
        spy.request(subscription, .unlimited)
        Self.onAnotherThread {
          shared.value.send(1)
          spy.cancel()
          shared.value.send(2)
        }
      }
      released = spy
      spy.attach(to: subject)
      subject.send(3)
      #expect(spy.values.isEmpty, "cancelled before the queued value's delivery")
      spy.expectRules()
    }
    #expect(
      AttachAttackTests.eventually { released == nil }, "the subscription let go of its subscriber")
  }

  /// Values of another thread queued while attaching, then the subscribing thread sends one:
  /// it delivers them at once, in order, its own last, on its own thread.
  @Test func theSubscribingThreadsSendDeliversWhatWaitsFirst() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let spy = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      Self.onAnotherThread { for value in 1...10 { shared.value.send(value) } }
      shared.value.send(-1)
    }
    spy.attach(to: subject)
    #expect(spy.values == Array(1...10) + [-1])
    #expect(spy.snapshot.deliveredInside == 11)
    spy.expectRules()
    spy.cancel()
  }

  /// A sender of another thread that floods a subscriber still attaching waits once a drain's
  /// share (32) is queued for it, until the attach ends: the queue stays bounded, and the
  /// subscribe call delivers only those 32 of it; the rest follows on the sender's thread.
  @Test func aSlowAttachPacesASenderOfAnotherThread() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let sent = Atomic<Int>(0)
    let senderDone = DispatchSemaphore(value: 0)
    let sentWhileAttaching = Atomic<Int>(-1)
    let spy = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      Thread.detachNewThread {
        for value in 1...1_000 {
          shared.value.send(value)
          sent.add(1, ordering: .relaxed)
        }
        senderDone.signal()
      }
      let deadline = ContinuousClock.now + .seconds(10)
      while sent.load(ordering: .relaxed) < 31, ContinuousClock.now < deadline { usleep(100) }
      usleep(50_000)  // time for more sends, were they not paced
      sentWhileAttaching.store(sent.load(ordering: .relaxed), ordering: .relaxed)
    }
    spy.attach(to: subject)
    let inCall = spy.snapshot.deliveredInside + spy.snapshot.deliveredAtAttachEnd
    #expect(senderDone.wait(timeout: .now() + 10) == .success, "the sender went on")
    #expect(sentWhileAttaching.load(ordering: .relaxed) == 31, "the 32nd send waited")
    #expect(inCall <= 64, "the subscribe call delivered \(inCall)")
    #expect(spy.values == Array(1...1_000))
    spy.expectRules()
    spy.cancel()
  }

  /// Subscribers attach while two threads send: none of them receives anything on another
  /// thread while it attaches, and each receives every sender's values in order.
  @Test func attachingWhileThreadsSend() async {
    let rounds = max(20, Int(200 * stressScale))
    let broken = Atomic<Int>(0)
    for _ in 0..<rounds {
      let subject = PassthroughSubject<Int, Never>()
      let shared = Shared(subject)
      let spies = SharedBox<[Spy]>([])
      await concurrently(3) { index in
        if index == 0 {
          for _ in 0..<20 {
            let spy = Spy { spy, subscription in
              spy.request(subscription, .unlimited)
              for _ in 0..<100 { sched_yield() }
            }
            spies.withLock { $0.append(spy) }
            spy.attach(to: shared.value)
          }
        } else {
          for value in 0..<2_000 { shared.value.send(index * 10_000 + value) }
        }
      }
      subject.send(completion: .finished)
      for spy in spies.withLock({ $0 }) {
        let s = spy.snapshot
        let inOrder = (1...2).allSatisfy { sender in
          AttachAttackTests.isAscending(s.values.filter { $0 / 10_000 == sender })
        }
        if spy.overlaps.load(ordering: .relaxed) != 0 || s.otherThreadWhileInside != 0
          || s.completions != 1 || !inOrder
        {
          broken.add(1, ordering: .relaxed)
        }
      }
    }
    #expect(broken.load(ordering: .relaxed) == 0, "subscribers that saw a rule broken")
  }
}
