import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// The documented rule for a subscriber that blocks inside `receive` until another thread's call
/// returns, tested sentence by sentence: that call returns if the turn the blocked subscriber
/// is in still has a grant for it, or if it is made from inside a delivery; it waits — and,
/// without a timeout, the two would deadlock — when it is made outside any delivery and the
/// turn has no grant left (other threads used them). The blocked subscriber waits with a
/// timeout, so the last case ends; whether it got the other thread's signal tells which case
/// happened (no timing is asserted: the timeouts only end the waits).
@Suite("Liveness: when a subscriber that blocks for another thread's send deadlocks")
struct BlockingSubscriberTests {
  /// A subject whose subscriber, on its first value, blocks until `otherReturned` is
  /// signalled or `timeout` passes; `sawOtherReturn` tells which.
  final class BlockingSetup: @unchecked Sendable {
    // Safety: `cancellable` is written once, in `init`, before the object is shared.
    let subject = PassthroughSubject<Int, Never>()
    let entered = DispatchSemaphore(value: 0)
    let otherReturned = DispatchSemaphore(value: 0)
    let sawOtherReturn = Mutex<Bool?>(nil)
    let received = Mutex<[Int]>([])
    var cancellable: AnyCancellable?

    init(timeout: Int) {
      // Weakly: `self` holds the sink, which holds the closure.
      cancellable = subject.sink { [weak self] value in
        guard let self else { return }
        received.withLock { $0.append(value) }
        guard value == 0 else { return }
        entered.signal()
        let got = otherReturned.wait(timeout: .now() + .seconds(timeout)) == .success
        sawOtherReturn.withLock { $0 = got }
      }
    }

    /// Sends 0 from a thread of its own (its subscriber blocks) and waits until the
    /// subscriber is inside `receive`.
    func holdTheTurn() -> DispatchSemaphore {
      let done = DispatchSemaphore(value: 0)
      Thread.detachNewThread { [self] in
        subject.send(0)
        done.signal()
      }
      entered.wait()
      return done
    }
  }

  @Test("another thread's send returns while the turn has a grant for it")
  func grantLeft() async {
    let setup = BlockingSetup(timeout: 600)
    let returned = await allReturn(threads: 1) { _ in
      let holder = setup.holdTheTurn()
      setup.subject.send(1)
      setup.otherReturned.signal()
      holder.wait()
    }
    #expect(returned)
    #expect(setup.sawOtherReturn.withLock { $0 } == true, "no deadlock: the send was granted")
    #expect(setup.received.withLock { $0 } == [0, 1])
  }

  @Test("it waits — a deadlock without the timeout — once other threads used the turn's grants")
  func grantsUsedUp() async {
    let setup = BlockingSetup(timeout: 1)
    let returned = await allReturn(threads: 1) { _ in
      let holder = setup.holdTheTurn()
      // A third thread's sends use the turn's grants (each returns at once: handed over).
      let third = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        for value in 1...TurnWaiter.grantsPerTurn { setup.subject.send(value) }
        third.signal()
      }
      third.wait()
      // This send finds no grant: it waits for the blocked turn, which waits for it.
      setup.subject.send(100)
      setup.otherReturned.signal()
      holder.wait()
    }
    #expect(returned)
    #expect(
      setup.sawOtherReturn.withLock { $0 } == false,
      "the subscriber's wait timed out: the send could not return while it blocked")
    #expect(setup.received.withLock { $0 } == [0] + Array(1...TurnWaiter.grantsPerTurn) + [100])
  }

  @Test("a send made from inside another delivery never waits, even with no grant left")
  func fromInsideADelivery() async {
    let setup = BlockingSetup(timeout: 600)
    let relay = PassthroughSubject<Int, Never>()
    // The other thread's send into the blocked subject happens inside a delivery of `relay`.
    let relaySink = relay.sink { value in
      setup.subject.send(value)
      setup.otherReturned.signal()  // the inner send returned
    }
    let returned = await allReturn(threads: 1) { _ in
      let holder = setup.holdTheTurn()
      let third = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        for value in 1...TurnWaiter.grantsPerTurn { setup.subject.send(value) }
        third.signal()
      }
      third.wait()
      // The relay's call returns once its deferred turn is done, after the blocked subscriber.
      relay.send(100)
      holder.wait()
    }
    #expect(returned)
    #expect(setup.sawOtherReturn.withLock { $0 } == true, "no deadlock: the inner send returned")
    #expect(setup.received.withLock { $0 } == [0] + Array(1...TurnWaiter.grantsPerTurn) + [100])
    withExtendedLifetime(relaySink) {}
  }
}
