import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// A `send` that finds another thread's turn offering no grant yields and tries the claim again
/// (``SubjectCore/busyClaimRetries`` times) before it locks and waits. More senders than cores
/// make those retries happen on almost every value; these tests check that they change nothing
/// a subscriber can observe — every value once, each sender's in order, deliveries serial, no
/// value overtaking one whose `send` had returned before it was sent — and that a blocked send
/// still sleeps rather than spins.
@Suite("Subjects: a busy claim tried again", .onThreadsOfTheirOwn)
struct BusyClaimRetryTests {
  /// A subscriber's record, written only from inside its deliveries (which the subject
  /// serialises): plain storage, so that the thread sanitizer sees a missing happens-before.
  final class Record: @unchecked Sendable {
    // Safety: written only by deliveries to one subscriber, which must be serial; `inside`
    // catches two at once.
    var last: [Int]
    var received = 0
    var outOfOrder = 0
    let inside = Atomic<Bool>(false)
    let overlaps = Atomic<Int>(0)
    let work: UInt64

    init(senders: Int, work: UInt64) {
      last = Array(repeating: -1, count: senders)
      self.work = work
    }

    func receive(_ value: Int) {
      if inside.exchange(true, ordering: .acquiring) { overlaps.add(1, ordering: .relaxed) }
      let sender = value / 1_000_000 - 1
      if value % 1_000_000 != last[sender] + 1 { outOfOrder += 1 }
      last[sender] = value % 1_000_000
      received += 1
      if work > 0 {
        let end = DispatchTime.now().uptimeNanoseconds + work
        while DispatchTime.now().uptimeNanoseconds < end {}
      }
      inside.store(false, ordering: .releasing)
    }
  }

  @Test(
    "every value once, each sender's in order, serially, to a fast and a slow subscriber",
    arguments: [2, 8, 16])
  func everyValueOnceInOrder(senders: Int) async {
    let subject = PassthroughSubject<Int, Never>()
    let fast = Record(senders: senders, work: 0)
    let slow = Record(senders: senders, work: 300)
    let cancellables = [subject.sink { fast.receive($0) }, subject.sink { slow.receive($0) }]
    let perSender = max(200, stressScaled(40_000) / senders)
    let returned = await allReturn(threads: senders, deadline: .seconds(300)) { sender in
      for index in 0..<perSender { subject.send((sender + 1) * 1_000_000 + index) }
    }
    #expect(returned)
    for record in [fast, slow] {
      #expect(record.received == senders * perSender)
      #expect(record.outOfOrder == 0)
      #expect(record.overlaps.load(ordering: .relaxed) == 0)
      #expect(record.last.allSatisfy { $0 == perSender - 1 })
    }
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
        var highest = highestReturned.load(ordering: .relaxed)
        while ticket > highest {
          let (exchanged, original) = highestReturned.compareExchange(
            expected: highest, desired: ticket, ordering: .sequentiallyConsistent)
          if exchanged { break }
          highest = original
        }
      }
    }
    #expect(returned)
    #expect(delivered.overtaken == 0)
    withExtendedLifetime(sink) {}
  }

  /// The processor time the calling thread has used.
  static func threadCPUNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
  }

  /// A `receive` holds the turn for 200 ms; another thread sends 40 values meanwhile: 32 on the
  /// turn's grants, then the turn offers none. Its sends yield a bounded number of times and
  /// then sleep until the turn comes to them: the sending thread uses a few milliseconds of
  /// processor time at most, not the hold (a retry loop that spun would).
  @Test("a send blocked behind a slow receive sleeps rather than spins")
  func blockedSendSleeps() async {
    let subject = PassthroughSubject<Int, Never>()
    let holding = Atomic<Bool>(false)
    let sink = subject.sink { value in
      guard value == -1 else { return }
      holding.store(true, ordering: .releasing)
      usleep(200_000)
    }
    let used = Atomic<Int>(0)
    let returned = await allReturn(threads: 2, deadline: .seconds(120)) { index in
      guard index == 1 else { return subject.send(-1) }
      while !holding.load(ordering: .acquiring) { usleep(100) }
      let start = Self.threadCPUNanoseconds()
      for value in 0..<(TurnWaiter.grantsPerTurn + 8) { subject.send(value) }
      used.store(Int(Self.threadCPUNanoseconds() - start), ordering: .relaxed)
    }
    #expect(returned)
    let milliseconds = Double(used.load(ordering: .relaxed)) / 1e6
    #expect(milliseconds < 50, "the blocked sender used \(milliseconds) ms of processor time")
    withExtendedLifetime(sink) {}
  }
}
