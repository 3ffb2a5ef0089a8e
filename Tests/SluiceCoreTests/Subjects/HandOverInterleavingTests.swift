import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// The hand-over's rare branches, reached deterministically: two or three senders are played by
/// one test thread, each with a delivery context of its own (identity, allowance, semaphore),
/// and the steps a real sender takes (``SharedSubscriberList/claim(by:)``,
/// ``SharedSubscriberList/leave(held:thread:)``, hand-offs under the subject's lock) are run in
/// the interleaving a race would produce. The stress tests reach these windows only by chance.
@Suite("Subjects: hand-over interleavings, step by step", .onThreadsOfTheirOwn)
struct HandOverInterleavingTests {
  typealias List = SharedSubscriberList<Int, Never>

  final class Received: @unchecked Sendable {
    // Safety: every access takes `lock`.
    let lock = NSLock()
    var values: [Int] = []
    func append(_ value: Int) { lock.withLock { values.append(value) } }
    var all: [Int] { lock.withLock { values } }
  }

  /// The senders the test plays, each with a context of its own (no real thread has them).
  final class Senders {
    let a = DeliveryContext.detached()
    let b = DeliveryContext.detached()
    let c = DeliveryContext.detached()
    deinit { for context in [a, b, c] { context.deallocateDetached() } }
  }

  /// A subject with one sink recording what it receives.
  func subjectWithSink() -> (PassthroughSubject<Int, Never>, Received, AnyCancellable) {
    let subject = PassthroughSubject<Int, Never>()
    let received = Received()
    let sink = subject.sink { received.append($0) }
    return (subject, received, sink)
  }

  /// Sender A takes the free list, offers its grants and delivers 0 in place, as a `send(0)`
  /// does before it leaves; the address it holds, or `nil` (recorded as an issue) if it could
  /// not take it.
  func senderATakesTheListAndDelivers0(
    _ core: SubjectCore<Int, Never>, _ senders: Senders
  ) -> UInt? {
    guard case .claimed(let address) = core.subscribers.claim(by: senders.a.identity) else {
      Issue.record("A could not take a free list")
      return nil
    }
    core.subscribers.beginTurn(senders.a)
    core.subscribers.forEach(inStorageAt: address) { $0.receiveInPlace(0) }
    return address
  }

  /// `sender` hands `value` over under the subject's lock, as a `send` that found the list
  /// taken does.
  func handOff(_ value: Int, on core: SubjectCore<Int, Never>, by sender: DeliveryContext)
    -> List.Claim
  {
    core.state.withLock { state in
      core.subscribers.claimOrHandOff(by: sender, &state.subscribers) { .value(value, $0) }
    }
  }

  /// Leaves as `sender`, holding `held`: the give-back, then the queue while work waits.
  func leave(_ core: SubjectCore<Int, Never>, as sender: DeliveryContext, held: UInt) -> Bool {
    while true {
      switch core.subscribers.leave(held: held, thread: sender.identity) {
      case .left: return true
      case .kept: guard core.runHandedOver(sender) else { return false }
      }
    }
  }

  func isPending(_ core: SubjectCore<Int, Never>) -> Bool {
    core.subscribers.reader.load(ordering: .sequentiallyConsistent) & List.pending != 0
  }

  @Test("a hand-off to a held turn makes its give-back fail: the holder keeps it and runs the work")
  func giveBackFailsWhileWorkWaits() {
    let senders = Senders()
    let (subject, received, sink) = subjectWithSink()
    let core = subject.core
    guard let address = senderATakesTheListAndDelivers0(core, senders) else { return }
    #expect(handOff(1, on: core, by: senders.b) == .busy)  // granted by A's turn
    #expect(isPending(core))
    #expect(core.subscribers.leave(held: address, thread: senders.a.identity) == .kept)
    #expect(core.subscribers.reader.load(ordering: .relaxed) == address | List.pending)
    #expect(core.subscribers.readerThread.load(ordering: .relaxed) == senders.a.identity)
    #expect(handOff(2, on: core, by: senders.c) == .busy, "C cannot take it meanwhile")
    #expect(core.runHandedOver(senders.a))
    #expect(core.subscribers.leave(held: address, thread: senders.a.identity) == .left)
    senders.a.exit()
    #expect(received.all == [0, 1, 2])
    #expect(core.subscribers.reader.load(ordering: .relaxed) == 0)
    withExtendedLifetime(sink) {}
  }

  @Test("a sender cannot take a turn while work is pending for it, even between two of its steps")
  func claimFailsWhileWorkIsPending() {
    let senders = Senders()
    let (subject, received, sink) = subjectWithSink()
    let core = subject.core
    guard let address = senderATakesTheListAndDelivers0(core, senders) else { return }
    #expect(handOff(1, on: core, by: senders.b) == .busy)
    // However the steps interleave, C's claim needs the word to be 0: never while A holds it
    // or work waits for A.
    #expect(core.subscribers.claim(by: senders.c.identity) == .busy)
    #expect(leave(core, as: senders.a, held: address))
    senders.a.exit()
    #expect(core.subscribers.claim(by: senders.c.identity) != .busy, "free again")
    #expect(core.subscribers.leave(held: address, thread: senders.c.identity) == .left)
    #expect(received.all == [0, 1])
    withExtendedLifetime(sink) {}
  }

  @Test("a hand-off that finds the turn free takes it and runs its own value (draining)")
  func handOffFindsTheTurnFree() {
    let senders = Senders()
    let (subject, received, sink) = subjectWithSink()
    let core = subject.core
    // Completion-like work that goes through `handOff` directly (a drain): the turn is free.
    let claim = core.state.withLock { state in
      core.subscribers.handOff(
        .value(7, state.subscribers.list.slots), &state.subscribers, by: senders.b,
        needsGrant: true)
    }
    #expect(claim == .draining)
    #expect(core.subscribers.reader.load(ordering: .relaxed) == List.draining | List.pending)
    #expect(leave(core, as: senders.b, held: List.draining))
    senders.b.exit()
    #expect(received.all == [7])
    #expect(core.subscribers.reader.load(ordering: .relaxed) == 0)
    withExtendedLifetime(sink) {}
  }

  // Past the grants a sender waits: the turn delivers its value for it while the holder's
  // allowance lasts, then hands the next waiter the turn at its place.
  @Test("past the grants, the allowance, then the turn passes")
  func grantsRunOutAndTheTurnPasses() {
    let senders = Senders()
    let (subject, received, sink) = subjectWithSink()
    let core = subject.core
    guard let address = senderATakesTheListAndDelivers0(core, senders) else { return }
    let grants = TurnWaiter.grantsPerTurn
    // A's call reserved `grants` of its allowance for its turn's grants; the rest pays for
    // waiting senders' values.
    let forWaiters = DeliveryContext.allowancePerCall - grants
    #expect(senders.a.allowance == forWaiters)
    for value in 1...grants { #expect(handOff(value, on: core, by: senders.b) == .busy) }
    // No grants left: each further value waits, B's and C's in turn; one more than the rest of
    // A's allowance.
    var waiters: [TurnWaiter] = []
    for index in 0...forWaiters {
      let sender = index.isMultiple(of: 2) ? senders.b : senders.c
      guard case .wait(let waiter) = handOff(grants + 1 + index, on: core, by: sender) else {
        Issue.record("a sender past the grants did not wait")
        return
      }
      #expect(waiter.thread == sender.identity)
      waiters.append(waiter)
    }
    // A leaves: it runs the granted values, delivers waiting values for their senders
    // (dismissing them) while its allowance lasts, then stops at the last waiter and hands it
    // the turn.
    #expect(leave(core, as: senders.a, held: address) == false, "handed over")
    senders.a.exit()
    #expect(received.all == Array(0...grants + forWaiters))
    let last = waiters.removeLast()
    #expect(waiters.allSatisfy { !$0.isGranted && $0.wait() == false }, "dismissed: delivered")
    #expect(last.isGranted)
    let lastSender = last.thread == senders.b.identity ? senders.b : senders.c
    #expect(core.subscribers.readerThread.load(ordering: .relaxed) == last.thread)
    #expect(List.holder(core.subscribers.reader.load(ordering: .relaxed)) == List.draining)
    // Once the last waiter takes the turn (what `send` does once granted) it offers grants of
    // its own.
    #expect(last.wait())
    core.subscribers.beginTurn(lastSender)
    #expect(handOff(100, on: core, by: senders.a) == .busy)
    // It delivers its value itself, runs A's and leaves.
    core.subscribers.forEach(inStorageAt: core.subscribers.current.load(ordering: .relaxed)) {
      $0.receiveInPlace(grants + forWaiters + 1)
    }
    #expect(leave(core, as: lastSender, held: List.draining))
    lastSender.exit()
    #expect(received.all == Array(0...grants + forWaiters + 1) + [100])
    #expect(core.subscribers.reader.load(ordering: .relaxed) == 0)
    withExtendedLifetime(sink) {}
  }

  @Test("no grant is taken while a sender waits: a later sender queues a waiter behind it")
  func noGrantsBehindAWaiter() {
    let senders = Senders()
    let (subject, received, sink) = subjectWithSink()
    let core = subject.core
    guard let address = senderATakesTheListAndDelivers0(core, senders) else { return }
    for value in 1...TurnWaiter.grantsPerTurn {
      #expect(handOff(value, on: core, by: senders.b) == .busy)
    }
    guard case .wait(let first) = handOff(100, on: core, by: senders.b) else {
      Issue.record("B did not wait past the grants")
      return
    }
    // Even if grants came back (they do not in a real turn), C must not be granted past B.
    core.subscribers.grants.store(1, ordering: .relaxed)
    guard case .wait(let second) = handOff(200, on: core, by: senders.c) else {
      Issue.record("C took a grant behind a waiting sender")
      return
    }
    #expect(leave(core, as: senders.a, held: address))
    senders.a.exit()
    #expect(first.wait() == false && second.wait() == false)
    #expect(received.all.suffix(2) == [100, 200])
    withExtendedLifetime(sink) {}
  }

  @Test("while a sender waits, even the holder's own send from inside its delivery waits")
  func ownSendBehindAWaiterWaits() {
    let senders = Senders()
    let (subject, received, sink) = subjectWithSink()
    let core = subject.core
    guard let address = senderATakesTheListAndDelivers0(core, senders) else { return }
    for value in 1...TurnWaiter.grantsPerTurn {
      #expect(handOff(value, on: core, by: senders.c) == .busy)
    }
    guard case .wait(let waiter) = handOff(100, on: core, by: senders.b) else {
      Issue.record("B did not wait")
      return
    }
    // A's subscriber sends from inside its delivery: with B waiting, queued as a waiter of A's
    // own (A defers it), so that nothing A could not hand on is queued behind B.
    guard case .wait(let own) = handOff(101, on: core, by: senders.a) else {
      Issue.record("the holder's own send was queued behind a waiter")
      return
    }
    #expect(own.thread == senders.a.identity)
    // A leaves: C's values, B's (for B, on A's allowance), then its own (free: its own).
    #expect(leave(core, as: senders.a, held: address))
    senders.a.exit()
    #expect(waiter.wait() == false && own.wait() == false, "both delivered for their senders")
    #expect(received.all.suffix(2) == [100, 101])
    withExtendedLifetime(sink) {}
  }

  @Test("a send from the holder's own thread is queued behind the value being delivered")
  func ownSendIsQueued() {
    let senders = Senders()
    let (subject, received, sink) = subjectWithSink()
    let core = subject.core
    guard let address = senderATakesTheListAndDelivers0(core, senders) else { return }
    #expect(handOff(1, on: core, by: senders.b) == .busy)
    // A's subscriber sends 2 from inside its delivery: queued after B's 1, never nested.
    #expect(handOff(2, on: core, by: senders.a) == .busy)
    #expect(received.all == [0])
    #expect(leave(core, as: senders.a, held: address))
    senders.a.exit()
    #expect(received.all == [0, 1, 2])
    withExtendedLifetime(sink) {}
  }
}
