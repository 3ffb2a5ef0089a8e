import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// The hand-over's rare branches, reached deterministically: two or three senders are played by
/// one test thread under made-up thread identities, and the steps a real sender takes
/// (``SharedSubscriberList/claim(by:)``, the give-back half of ``SharedSubscriberList/leave()``,
/// hand-offs under the subject's lock) are run in the interleaving a race would produce. The
/// stress tests reach these windows only by chance.
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

  // Made-up identities of the senders the test plays (no real thread has them).
  let senderA: UInt = 0x1000
  let senderB: UInt = 0x2000
  let senderC: UInt = 0x3000

  /// A subject with one sink recording what it receives.
  func subjectWithSink() -> (PassthroughSubject<Int, Never>, Received, AnyCancellable) {
    let subject = PassthroughSubject<Int, Never>()
    let received = Received()
    let sink = subject.sink { received.append($0) }
    return (subject, received, sink)
  }

  /// Sender A takes the free list and delivers 0 in place, as a `send(0)` does before it
  /// leaves; the address it holds, or `nil` (recorded as an issue) if it could not take it.
  func senderATakesTheListAndDelivers0(_ core: SubjectCore<Int, Never>) -> UInt? {
    guard case .claimed(let address) = core.subscribers.claim(by: senderA) else {
      Issue.record("A could not take a free list")
      return nil
    }
    core.subscribers.forEach(inStorageAt: address) { $0.receiveInPlace(0) }
    return address
  }

  /// `sender` hands `value` over under the subject's lock, as a `send` that found the list
  /// taken does.
  func handOff(_ value: Int, on core: SubjectCore<Int, Never>, by sender: UInt) -> List.Claim {
    core.state.withLock { state in
      core.subscribers.claimOrHandOff(by: sender, &state.subscribers) { .value(value, $0) }
    }
  }

  /// The first half of ``SharedSubscriberList/leave()``: `reader` given back, the flag not yet
  /// loaded — the window in which a hand-over races a leaving sender.
  func giveBackOnly(_ core: SubjectCore<Int, Never>) {
    core.subscribers.readerThread.store(0, ordering: .relaxed)
    core.subscribers.reader.store(0, ordering: .sequentiallyConsistent)
  }

  func isPending(_ core: SubjectCore<Int, Never>) -> Bool {
    core.subscribers.handOver.load(ordering: .sequentiallyConsistent) & List.pending != 0
  }

  @Test("a hand-off that finds the list free after queueing takes it and runs the queue (draining)")
  func handOffFindsTheListFree() {
    let (subject, received, sink) = subjectWithSink()
    let core = subject.core
    guard senderATakesTheListAndDelivers0(core) != nil else { return }
    #expect(handOff(1, on: core, by: senderB) == .busy)  // queued for A, pending set
    // In the window between A's give-back and its load of the flag, …
    giveBackOnly(core)
    // … B hands off again: the list is free now, so B takes it to run the queue itself.
    #expect(handOff(2, on: core, by: senderB) == .draining)
    // A's load of the flag sees it set (raced), but B holds the list: A leaves it to B.
    #expect(isPending(core))
    #expect(
      core.state.withLock { core.subscribers.claimToDrain(&$0.subscribers, by: senderA) } == false)
    #expect(core.runHandedOver())
    #expect(core.subscribers.leave() == .left)
    #expect(received.all == [0, 1, 2])
    #expect(!isPending(core))
    subject.send(3)  // the list is free again for a real send
    #expect(received.all == [0, 1, 2, 3])
    withExtendedLifetime(sink) {}
  }

  @Test(
    "a sender that sees work handed over only after giving the list back takes it again (raced)")
  func leavingSenderRaced() {
    let (subject, received, sink) = subjectWithSink()
    let core = subject.core
    guard senderATakesTheListAndDelivers0(core) != nil else { return }
    // B's hand-off lands after A loaded the flag (clear) and before A's give-back: B finds A
    // still holding the list and leaves the work to it.
    #expect(handOff(1, on: core, by: senderB) == .busy)
    giveBackOnly(core)
    // A's load of the flag after its give-back: set. Under the lock it takes the list back.
    #expect(isPending(core))
    #expect(core.state.withLock { core.subscribers.claimToDrain(&$0.subscribers, by: senderA) })
    #expect(core.runHandedOver())
    #expect(core.subscribers.leave() == .left)
    #expect(received.all == [0, 1])
    #expect(!isPending(core))
    withExtendedLifetime(sink) {}
  }

  @Test("a sender that claims the list while work waits delivers its value after that work")
  func claimBehindHandedOverWork() {
    let (subject, received, sink) = subjectWithSink()
    let core = subject.core
    guard senderATakesTheListAndDelivers0(core) != nil else { return }
    #expect(handOff(1, on: core, by: senderB) == .busy)
    giveBackOnly(core)  // A is between its give-back and its load of the flag
    // C claims the free list and finds work waiting: it queues its value behind the work and
    // runs the queue.
    guard case .claimedBehind(let behind) = core.subscribers.claim(by: senderC) else {
      Issue.record("C did not find the handed-over work")
      return
    }
    #expect(behind != 0)
    core.state.withLock {
      core.subscribers.queueBehind(.value(2, $0.subscribers.list.slots), &$0.subscribers)
    }
    #expect(core.runHandedOver())
    #expect(core.subscribers.leave() == .left)
    // A's load of the flag now: clear (C ran the work), so A is done; had it seen the flag
    // still set, its claimToDrain would find the queue empty and stop.
    #expect(!isPending(core))
    #expect(
      core.state.withLock { core.subscribers.claimToDrain(&$0.subscribers, by: senderA) } == false)
    #expect(received.all == [0, 1, 2])
    withExtendedLifetime(sink) {}
  }

  @Test(
    "a sender leaving while work waits keeps the list, runs the work, then gives it back (kept)")
  func leavingSenderKeepsTheList() {
    let (subject, received, sink) = subjectWithSink()
    let core = subject.core
    guard let address = senderATakesTheListAndDelivers0(core) else { return }
    #expect(handOff(1, on: core, by: senderB) == .busy)
    #expect(handOff(2, on: core, by: senderC) == .busy)
    #expect(core.subscribers.leave() == .kept)
    #expect(core.subscribers.reader.load(ordering: .relaxed) == address, "A still holds the list")
    #expect(handOff(3, on: core, by: senderB) == .busy, "B cannot take it meanwhile")
    #expect(core.runHandedOver())
    #expect(core.subscribers.leave() == .left)
    #expect(received.all == [0, 1, 2, 3])
    withExtendedLifetime(sink) {}
  }
  // Past the grants a sender waits: the turn delivers its value for it while its budget lasts,
  // then hands the next waiter the turn at its place.
  @Test("past the grants, the budget, then the turn passes")
  func grantsRunOutAndTheTurnPasses() {
    let (subject, received, sink) = subjectWithSink()
    let core = subject.core
    guard senderATakesTheListAndDelivers0(core) != nil else { return }
    let grants = TurnWaiter.grantsPerTurn
    for value in 1...grants { #expect(handOff(value, on: core, by: senderB) == .busy) }
    // No grants left: each further value waits, B's and C's in turn; one more than the budget.
    var waiters: [TurnWaiter] = []
    for index in 0...grants {
      let sender = index.isMultiple(of: 2) ? senderB : senderC
      guard case .wait(let waiter) = handOff(grants + 1 + index, on: core, by: sender) else {
        Issue.record("a sender past the grants did not wait")
        return
      }
      #expect(waiter.thread == sender)
      waiters.append(waiter)
    }
    // A leaves: it runs the granted values, delivers the first `budget` waiting values for
    // their senders (dismissing them), then stops at the last waiter and hands it the turn.
    #expect(core.subscribers.leave() == .kept)
    #expect(core.runHandedOver() == false)
    #expect(received.all == Array(0...2 * grants))
    let last = waiters.removeLast()
    #expect(waiters.allSatisfy { !$0.isGranted && $0.wait() == false }, "dismissed: delivered")
    #expect(last.isGranted)
    #expect(core.subscribers.readerThread.load(ordering: .relaxed) == last.thread)
    #expect(core.subscribers.reader.load(ordering: .relaxed) == List.draining)
    // The turn is the last waiter's, with fresh grants: a hand-off from A is queued for it.
    #expect(handOff(100, on: core, by: senderA) == .busy)
    // It delivers its value itself (what `send` does once granted), runs A's and leaves.
    core.subscribers.forEach(inStorageAt: core.subscribers.current.load(ordering: .relaxed)) {
      $0.receiveInPlace(2 * grants + 1)
    }
    #expect(core.subscribers.leave() == .kept)
    #expect(core.runHandedOver())
    #expect(core.subscribers.leave() == .left)
    #expect(received.all == Array(0...2 * grants + 1) + [100])
    #expect(!isPending(core))
    withExtendedLifetime(sink) {}
  }

  @Test("a send from the holder's own thread is queued behind the value being delivered")
  func ownSendIsQueued() {
    let (subject, received, sink) = subjectWithSink()
    let core = subject.core
    guard senderATakesTheListAndDelivers0(core) != nil else { return }
    #expect(handOff(1, on: core, by: senderB) == .busy)
    // A's subscriber sends 2 from inside its delivery: queued after B's 1, never nested.
    #expect(handOff(2, on: core, by: senderA) == .busy)
    #expect(received.all == [0])
    #expect(core.subscribers.leave() == .kept)
    #expect(core.runHandedOver())
    #expect(core.subscribers.leave() == .left)
    #expect(received.all == [0, 1, 2])
    withExtendedLifetime(sink) {}
  }
}
