import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// A subscriber's replay (its first value from a `CurrentValueSubject` or `@Published`) while
/// other threads send (``SubjectCore/withReplayTurn(_:)``): it runs at once on the requesting
/// thread, never blocking for the turn, and the turn in progress stops at its waiter, so the
/// senders feel a slow replay's pace. The shapes the model's `REPLAY` sizes cover, at scale.
@Suite("Liveness: a replay racing the senders", .onThreadsOfTheirOwn)
struct ReplayTurnTests {
  /// Every subscriber of a `CurrentValueSubject` receives the values in one order: the ones it
  /// was attached for, each sender's in order, after its replay.
  static func checkOrder(_ received: [Int], senders: Int) -> Bool {
    var next = [Int](repeating: -1, count: senders)
    for value in received.dropFirst() {  // the replay: whatever was current
      let sender = value / 1_000_000 - 1
      guard sender >= 0, sender < senders, value % 1_000_000 > next[sender] else { return false }
      next[sender] = value % 1_000_000
    }
    return true
  }

  /// Threads send without pause while others attach, and each new subscriber's first
  /// `receive` (its replay) sends a value of its own into the subject: nothing hangs, every
  /// subscriber receives each sender's values in order after its replay, and its own value
  /// reaches it.
  @Test("subscribers attaching mid-stream whose replay sends into the subject")
  func replaySendsIntoTheSubject() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let keep = subject.sink { _ in }
    let senders = 2
    let perSender = max(2_000, stressScaled(20_000))
    let attachers = 2
    let rounds = max(50, stressScaled(400))
    let failures = Atomic<Int>(0)
    let ownValuesMissing = Atomic<Int>(0)
    let returned = await allReturn(threads: senders + attachers, deadline: .seconds(600)) {
      index in
      if index < senders {
        for i in 0..<perSender { subject.send(CallBoundTests.value(index, i)) }
        return
      }
      for round in 0..<rounds {
        let received = SharedBox<[Int]>([])
        let own = 900_000 + round  // sender index -1: not a sender's value
        let first = Atomic<Bool>(true)
        let cancellable = subject.sink { value in
          received.withLock { $0.append(value) }
          if first.exchange(false, ordering: .relaxed) { subject.send(own) }
        }
        cancellable.cancel()
        let all = received.withLock { $0 }
        if !all.contains(own) { ownValuesMissing.add(1, ordering: .relaxed) }
        let fromSenders = all.filter { $0 >= 1_000_000 }
        if !Self.checkOrder([0] + fromSenders, senders: senders) {
          failures.add(1, ordering: .relaxed)
        }
      }
    }
    #expect(returned, "every call returned")
    #expect(
      failures.load(ordering: .relaxed) == 0, "a subscriber saw a sender's values out of order")
    #expect(
      ownValuesMissing.load(ordering: .relaxed) == 0,
      "a value sent from inside the replay did not reach its subscriber before cancel")
    withExtendedLifetime(keep) {}
  }

  /// A subscriber attached from inside another subject's delivery (a thread holding a turn,
  /// which must never block) while other threads send into the `CurrentValueSubject`: its
  /// replay is delivered at once, inside `subscribe`, and nothing hangs.
  @Test("a replay requested inside another subject's delivery, the subject contended")
  func replayInsideAnotherDelivery() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let trigger = PassthroughSubject<Int, Never>()
    let keep = subject.sink { _ in usleep(1) }
    let replayedAtOnce = Atomic<Int>(0)
    let attempts = max(100, stressScaled(2_000))
    let holder = SharedBox<[AnyCancellable]>([])
    let onTrigger = trigger.sink { _ in
      let got = Atomic<Bool>(false)
      let inner = subject.sink { _ in got.store(true, ordering: .relaxed) }
      if got.load(ordering: .relaxed) { replayedAtOnce.add(1, ordering: .relaxed) }
      holder.withLock { $0.append(inner) }
    }
    let returned = await allReturn(threads: 3, deadline: .seconds(600)) { index in
      if index < 2 {
        for i in 0..<(attempts * 20) { subject.send(CallBoundTests.value(index, i)) }
        return
      }
      for i in 0..<attempts {
        trigger.send(i)
        if i % 50 == 0 { holder.withLock { $0.removeAll() } }
      }
    }
    #expect(returned, "every call returned")
    #expect(replayedAtOnce.load(ordering: .relaxed) == attempts, "every replay inside subscribe")
    withExtendedLifetime((keep, onTrigger)) {}
  }

  /// `zip` ended (cancelled) with values still buffered: they are released after its lock,
  /// so a value whose `deinit` calls into the pipeline (here: cancels it again, and sends into
  /// the subject feeding it) does not deadlock.
  @Test("zip's buffered values released after unlocking when it ends")
  func zipReleasesBufferedValuesAfterUnlocking() async {
    await #expect(processExitsWith: .success) {
      final class Token: @unchecked Sendable {
        // Safety: set once before the token is sent.
        var onDeinit: (() -> Void)?
        deinit { onDeinit?() }
      }
      let left = PassthroughSubject<Token, Never>()
      let right = PassthroughSubject<Int, Never>()
      let holder = SharedBox<AnyCancellable?>(nil)
      let cancellable = left.zip(right).sink { _ in }
      holder.withLock { $0 = cancellable }
      do {
        let token = Token()
        token.onDeinit = {
          holder.withLock { $0 }?.cancel()
          right.send(1)
        }
        left.send(token)  // buffered: nothing on the right yet
      }
      cancellable.cancel()  // releases the buffered token, whose deinit calls back
      holder.withLock { $0 = nil }
    }
  }
}
