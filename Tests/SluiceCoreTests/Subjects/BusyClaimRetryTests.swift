import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// A `send` that finds another thread's turn offering no grant yields and tries the claim again
/// (``SubjectCore/busyClaimRetries`` times) before it locks and waits. More senders than cores
/// make those retries happen on almost every value; these tests check that they change nothing
/// a subscriber can observe — every value once, each sender's in order, deliveries serial, no
/// value overtaking one whose `send` had returned before it was sent (a blocked send still
/// sleeps rather than spins: `BusyClaimRetryAttackTests`).
@Suite("Subjects: a busy claim tried again", .onThreadsOfTheirOwn)
struct BusyClaimRetryTests {
  typealias OrderCheck = BusyClaimRetryAttackTests.OrderCheck

  @Test(
    "every value once, each sender's in order, serially, to a fast and a slow subscriber",
    arguments: [2, 8, 16])
  func everyValueOnceInOrder(senders: Int) async {
    let subject = PassthroughSubject<Int, Never>()
    let fast = OrderCheck(senders: senders)
    let slow = OrderCheck(senders: senders, work: 300)
    let cancellables = [subject.sink { fast.receive($0) }, subject.sink { slow.receive($0) }]
    let perSender = max(200, stressScaled(40_000) / senders)
    let returned = await allReturn(threads: senders, deadline: .seconds(300)) { sender in
      for index in 0..<perSender { subject.send((sender + 1) * 1_000_000 + index) }
    }
    #expect(returned)
    fast.expectEverything(senders, perSender, "fast")
    slow.expectEverything(senders, perSender, "slow")
    withExtendedLifetime(cancellables) {}
  }

  /// Each send takes a ticket and notes the highest ticket whose `send` had returned before
  /// it began; the subscriber checks that one was delivered first. A retry that took a free
  /// turn ahead of a value queued for the turn before it would fail this.
  @Test("a value sent after another's send returned is delivered after it", arguments: [2, 8])
  func causalOrder(senders: Int) async {
    let total = max(2_000, stressScaled(40_000))
    final class Delivered: @unchecked Sendable {
      // Safety: written only by deliveries to the one subscriber, which the subject serialises.
      var tickets: [Bool]
      var overtaken = 0
      init(_ count: Int) { tickets = Array(repeating: false, count: count) }
    }
    let delivered = Delivered(total + senders)
    let subject = PassthroughSubject<(ticket: Int, after: Int), Never>()
    let sink = subject.sink { value in
      if value.after >= 0, !delivered.tickets[value.after] { delivered.overtaken += 1 }
      delivered.tickets[value.ticket] = true
    }
    let nextTicket = Atomic<Int>(0)
    let highestReturned = Atomic<Int>(-1)
    let returned = await allReturn(threads: senders, deadline: .seconds(300)) { _ in
      while true {
        let ticket = nextTicket.add(1, ordering: .relaxed).oldValue
        guard ticket < total else { return }
        subject.send((ticket, highestReturned.load(ordering: .sequentiallyConsistent)))
        highestReturned.max(ticket, ordering: .sequentiallyConsistent)
      }
    }
    #expect(returned)
    #expect(delivered.overtaken == 0)
    withExtendedLifetime(sink) {}
  }
}
