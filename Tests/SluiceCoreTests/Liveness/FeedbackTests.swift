import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// Pipelines that feed their own sources, sent into from several threads at once: a send made
/// from inside a delivery never blocks for another turn (``DeliveryContext``), so these cycles
/// complete. Each test runs its senders on threads of their own with a deadline against a hang
/// only (a deadlock fails the test; it used to hang the suite).
@Suite("Liveness: feedback between a pipeline and its own sources never deadlocks")
struct FeedbackTests {
  /// Values seen by a subscriber: how many, and whether each sender's came in order.
  final class Tally: Sendable {
    struct State {
      var positive = 0
      var negative = 0
      var last: [Int: Int] = [:]
      var outOfOrder = 0
    }
    let state = Mutex(State())

    /// `value`'s sender is `value / 1_000_000` (positive values only).
    func record(_ value: Int) {
      state.withLock { state in
        guard value > 0 else {
          state.negative += 1
          return
        }
        state.positive += 1
        let sender = value / 1_000_000
        if let last = state.last[sender], last >= value { state.outOfOrder += 1 }
        state.last[sender] = value
      }
    }

    var snapshot: State { state.withLock { $0 } }
  }

  static let count = max(2_000, stressScaled(20_000))

  /// The `index`th value of sender `sender` (positive, ordered per sender).
  static func value(_ sender: Int, _ index: Int) -> Int { (sender + 1) * 1_000_000 + index + 1 }

  /// Whether a positive value is one that the pipeline sends back (every fifth).
  static func fedBack(_ value: Int) -> Bool { value > 0 && value % 5 == 0 }

  static var fedBackPerSender: Int { (1...count).count { fedBack(value(0, $0 - 1)) } }

  @Test("merge whose sink sends back into one of its upstreams, a thread sending to each")
  func mergeFeedback() async {
    let s1 = PassthroughSubject<Int, Never>()
    let s2 = PassthroughSubject<Int, Never>()
    let tally = Tally()
    let sink = s1.merge(with: s2).sink { value in
      tally.record(value)
      if Self.fedBack(value) { s2.send(-value) }
    }
    let subjects = [s1, s2]
    let returned = await allReturn(threads: 2) { sender in
      for index in 0..<Self.count { subjects[sender].send(Self.value(sender, index)) }
    }
    #expect(returned, "both senders returned (no deadlock)")
    let state = tally.snapshot
    #expect(state.positive == 2 * Self.count)
    #expect(state.negative == 2 * Self.fedBackPerSender)
    #expect(state.outOfOrder == 0)
    withExtendedLifetime(sink) {}
  }

  @Test("two subjects whose sinks forward some values to each other, a thread sending to each")
  func subjectsForwardingToEachOther() async {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<Int, Never>()
    let tallyA = Tally()
    let tallyB = Tally()
    let sinkA = a.sink { value in
      tallyA.record(value)
      if Self.fedBack(value) { b.send(-value) }
    }
    let sinkB = b.sink { value in
      tallyB.record(value)
      if Self.fedBack(value) { a.send(-value) }
    }
    let subjects = [a, b]
    let returned = await allReturn(threads: 2) { sender in
      for index in 0..<Self.count { subjects[sender].send(Self.value(sender, index)) }
    }
    #expect(returned, "both senders returned (no deadlock)")
    for tally in [tallyA, tallyB] {
      let state = tally.snapshot
      #expect(state.positive == Self.count)
      #expect(state.negative == Self.fedBackPerSender)
      #expect(state.outOfOrder == 0)
    }
    withExtendedLifetime((sinkA, sinkB)) {}
  }

  @Test("three subjects in a ring, each forwarding to the next, a thread sending to each")
  func ringOfThree() async {
    let subjects = (0..<3).map { _ in PassthroughSubject<Int, Never>() }
    let received = Atomic<Int>(0)
    // A value forwarded carries its hop count in the lowest digit of its negative: forwarded
    // twice at most, so each value crosses all three subjects once.
    let sinks = (0..<3).map { index in
      subjects[index].sink { value in
        received.add(1, ordering: .relaxed)
        let next = subjects[(index + 1) % 3]
        if value > 0 {
          if Self.fedBack(value) { next.send(-(value * 10 + 1)) }
        } else if -value % 10 < 2 {
          next.send(value - 1)
        }
      }
    }
    let returned = await allReturn(threads: 3) { sender in
      for index in 0..<Self.count { subjects[sender].send(Self.value(sender, index)) }
    }
    #expect(returned, "every sender returned (no deadlock)")
    #expect(received.load(ordering: .relaxed) == 3 * Self.count + 3 * 2 * Self.fedBackPerSender)
    withExtendedLifetime(sinks) {}
  }

  @Test("a merge of merges whose sink sends back into every upstream, a thread sending to each")
  func mergeOfMergesFeedback() async {
    let subjects = (0..<4).map { _ in PassthroughSubject<Int, Never>() }
    let tally = Tally()
    let merged = subjects[0].merge(with: subjects[1])
      .merge(with: subjects[2].merge(with: subjects[3]))
    let sink = merged.sink { value in
      tally.record(value)
      if Self.fedBack(value) { subjects[(value / 5) % 4].send(-value) }
    }
    let returned = await allReturn(threads: 4) { sender in
      for index in 0..<Self.count { subjects[sender].send(Self.value(sender, index)) }
    }
    #expect(returned, "every sender returned (no deadlock)")
    let state = tally.snapshot
    #expect(state.positive == 4 * Self.count)
    #expect(state.negative == 4 * Self.fedBackPerSender)
    #expect(state.outOfOrder == 0)
    withExtendedLifetime(sink) {}
  }

  @Test("flatMap whose children feed the outer publisher and each other, a thread per child")
  func flatMapChildrenFeedingTheOuter() async {
    let outer = PassthroughSubject<AnyPublisher<Int, Never>, Never>()
    let children = (0..<2).map { _ in PassthroughSubject<Int, Never>() }
    let tally = Tally()
    let sink = outer.flatMap { $0 }.sink { value in
      tally.record(value)
      guard Self.fedBack(value) else { return }
      // A new child from inside the delivery (it completes at once), and a value into the
      // other child, which another thread is sending into.
      outer.send(Just(-value).eraseToAnyPublisher())
      children[(value / 5) % 2].send(-value)
    }
    for child in children { outer.send(child.eraseToAnyPublisher()) }
    let returned = await allReturn(threads: 2) { sender in
      for index in 0..<Self.count { children[sender].send(Self.value(sender, index)) }
    }
    #expect(returned, "every sender returned (no deadlock)")
    let state = tally.snapshot
    #expect(state.positive == 2 * Self.count)
    #expect(state.negative == 2 * 2 * Self.fedBackPerSender)
    #expect(state.outOfOrder == 0)
    withExtendedLifetime(sink) {}
  }

  @Test("combineLatest and zip whose sink sends back into their upstreams, a thread per side")
  func fanInFeedback() async {
    for kind in ["combineLatest", "zip"] {
      let a = PassthroughSubject<Int, Never>()
      let b = PassthroughSubject<Int, Never>()
      let received = Atomic<Int>(0)
      let combined: AnyPublisher<(Int, Int), Never> =
        kind == "zip" ? a.zip(b).eraseToAnyPublisher() : a.combineLatest(b).eraseToAnyPublisher()
      // Only pairs of positive values send back (the negative values sent back pair with
      // later ones without sending again: combineLatest keeps the other side's latest value,
      // so feedback on every combination would never end, in Combine too).
      let sink = combined.sink { first, second in
        received.add(1, ordering: .relaxed)
        guard first > 0, second > 0 else { return }
        if Self.fedBack(first) { b.send(-first) }
        if Self.fedBack(second) { a.send(-second) }
      }
      let subjects = [a, b]
      let returned = await allReturn(threads: 2) { sender in
        for index in 0..<Self.count { subjects[sender].send(Self.value(sender, index)) }
      }
      #expect(returned, "\(kind): both senders returned (no deadlock)")
      #expect(received.load(ordering: .relaxed) > 0)
      withExtendedLifetime(sink) {}
    }
  }

  @Test("feedback through receive(on:)'s and delay's delivery (SerialDelivery) never deadlocks")
  func serialDeliveryFeedback() async {
    let s1 = PassthroughSubject<Int, Never>()
    let s2 = PassthroughSubject<Int, Never>()
    let tally = Tally()
    // `ImmediateScheduler`: delivery runs on the sending thread, through the operator's turn.
    let sink = s1.merge(with: s2)
      .delay(for: .zero, scheduler: ImmediateScheduler.shared)
      .sink { value in
        tally.record(value)
        if Self.fedBack(value) { s2.send(-value) }
      }
    let subjects = [s1, s2]
    let returned = await allReturn(threads: 2) { sender in
      for index in 0..<Self.count { subjects[sender].send(Self.value(sender, index)) }
    }
    #expect(returned, "both senders returned (no deadlock)")
    let state = tally.snapshot
    #expect(state.positive == 2 * Self.count)
    #expect(state.negative == 2 * Self.fedBackPerSender)
    withExtendedLifetime(sink) {}
  }
}
