import Dispatch
import Foundation
import SluiceTestSupport
import SluiceTesting
import Testing

@testable import SluiceCore

/// The subscriber list a subject's senders read without its lock (``SharedSubscriberList``)
/// and its storage (``SlotArray``): copy-on-write, release of what it held, and what a sender
/// sees while subscribers attach and detach on other threads or from inside a delivery.
@Suite("Subjects: the subscriber list senders read without a lock", .onThreadsOfTheirOwn)
struct SharedSubscriberListTests {
  final class Token {
    let id: Int
    init(_ id: Int) { self.id = id }
  }

  final class Log: @unchecked Sendable {
    // Safety: every access takes `lock`.
    let lock = NSLock()
    var entries: [String] = []
    func append(_ entry: String) { lock.withLock { entries.append(entry) } }
    var all: [String] { lock.withLock { entries } }
  }

  // MARK: SlotArray

  @Test("a copy keeps its slots when the original changes, and the other way round")
  func slotArrayIsCopyOnWrite() {
    let tokens = (0..<5).map(Token.init)
    var original = SlotArray<Token>()
    for token in tokens { original.append(token) }
    let copy = original
    #expect(original.take(at: 1)?.id == 1)
    original.append(nil)
    #expect(original.removeLast() == nil)
    #expect(original.removeLast()?.id == 4)
    #expect(copy.count == 5)
    #expect((0..<5).map { copy[$0]?.id } == [0, 1, 2, 3, 4])
    #expect((0..<4).map { original[$0]?.id } == [0, nil, 2, 3])
    #expect(copy.storageAddress != original.storageAddress)
    var visited: [Int] = []
    original.forEach { visited.append($0.id) }
    #expect(visited == [0, 2, 3], "empty slots are skipped")
  }

  @Test("growing keeps the order, and dropping every copy releases each element once")
  func slotArrayReleasesWhatItHeld() {
    weak var first: Token?
    weak var last: Token?
    do {
      var array = SlotArray<Token>()
      var copies: [SlotArray<Token>] = []
      for id in 0..<100 {
        let token = Token(id)
        if id == 0 { first = token }
        if id == 99 { last = token }
        array.append(token)
        if id % 30 == 0 { copies.append(array) }  // shared storage, then copied on growth
      }
      var visited: [Int] = []
      array.forEach { visited.append($0.id) }
      #expect(visited == Array(0..<100))
      #expect(array.firstIndex { $0?.id == 42 } == 42)
      #expect(copies.map(\.count) == [1, 31, 61, 91])
      #expect(first != nil && last != nil)
    }
    #expect(first == nil && last == nil)
  }

  // MARK: Senders and writers

  /// A sink logged as "first", which waits inside its delivery of 1 (after signalling
  /// `entered`) until the test signals `goOn`.
  func parkingSink(on subject: PassthroughSubject<Int, Never>, log: Log) -> (
    AnyCancellable, entered: DispatchSemaphore, goOn: DispatchSemaphore
  ) {
    let entered = DispatchSemaphore(value: 0)
    let goOn = DispatchSemaphore(value: 0)
    let first = subject.sink { value in
      log.append("first \(value)")
      if value == 1 {
        entered.signal()
        goOn.wait()
      }
    }
    return (first, entered, goOn)
  }

  @Test("a subscriber attached while a send is being delivered does not receive that value")
  func attachingDuringASend() {
    let subject = PassthroughSubject<Int, Never>()
    let log = Log()
    let (first, entered, goOn) = parkingSink(on: subject, log: log)
    // A sender on another thread reads the list in place and waits inside `first`.
    let delivered = sendOneFromAnotherThread(subject, until: entered)
    // Attaching now changes a copy of the list; the sender keeps reading the old one.
    let late = subject.sink { log.append("late \($0)") }
    goOn.signal()
    delivered.wait()
    subject.send(2)
    #expect(log.all == ["first 1", "first 2", "late 2"])
    withExtendedLifetime((first, late)) {}
  }

  @Test("a subscriber cancelled while another thread's send is delivered is released by it")
  func cancellingDuringASend() {
    let subject = PassthroughSubject<Int, Never>()
    let log = Log()
    weak var captured: Token?
    let (first, entered, goOn) = parkingSink(on: subject, log: log)
    var second: AnyCancellable?
    do {
      let token = Token(2)
      captured = token
      second = subject.sink { log.append("second \($0) \(token.id)") }
    }
    let delivered = sendOneFromAnotherThread(subject, until: entered)
    // The sender is reading the list that holds `second`'s subscription: it is kept (retired),
    // and since nothing tells whether the sender is inside `second` now, the subscription
    // hands the release of its subscriber to the sender, which runs it as it leaves.
    second?.cancel()
    second = nil
    goOn.signal()
    delivered.wait()
    #expect(captured == nil, "the cancelled sink and what its closure captured are released")
    // A later attach frees the retired list; the next send reaches the survivors only.
    let third = subject.sink { log.append("third \($0)") }
    subject.send(3)
    #expect(log.all == ["first 1", "first 3", "third 3"])
    withExtendedLifetime((first, third)) {}
  }

  @Test("a subscriber that sends, attaches and cancels from inside its delivery")
  func reentrantChanges() {
    let subject = PassthroughSubject<Int, Never>()
    let log = Log()
    var added: [AnyCancellable] = []
    var victim: AnyCancellable?
    let reentrant = subject.sink { value in
      log.append("reentrant \(value)")
      guard value == 1 else { return }
      added.append(subject.sink { log.append("added \($0)") })
      victim?.cancel()
      subject.send(10)  // queued behind the value being delivered, with the list as it is now
    }
    victim = subject.sink { log.append("victim \($0)") }
    subject.send(1)
    subject.send(2)
    // The send from inside the delivery reaches the subscriber added just before it; the outer
    // send does not. It is delivered once 1 has reached every subscriber, to each in list order
    // (never nested: every subscriber receives the values in one order).
    #expect(
      log.all == ["reentrant 1", "reentrant 10", "added 10", "reentrant 2", "added 2"])
    withExtendedLifetime((reentrant, added)) {}
  }

  @Test("senders on several threads, subscribers attaching and cancelling meanwhile")
  func concurrentSendersAndWriters() async {
    final class PerSender: @unchecked Sendable {
      // Safety: a subscriber's values are serial, so `last` has one writer at a time.
      var last = [Int](repeating: -1, count: 4)
      var count = 0
      var outOfOrder = 0
    }
    let subject = PassthroughSubject<Int, Never>()
    let stayers = (0..<3).map { _ in PerSender() }
    let keep = stayers.map { seen in
      subject.sink { value in
        let (sender, index) = value.quotientAndRemainder(dividingBy: 1_000_000)
        if index <= seen.last[sender] { seen.outOfOrder += 1 }
        seen.last[sender] = index
        seen.count += 1
      }
    }
    await concurrently(6) { worker in
      if worker < 4 {
        for index in 0..<5_000 { subject.send(worker * 1_000_000 + index) }
      } else {
        for round in 0..<1_000 {
          let transient = subject.sink { _ in }
          if round % 3 == 0 { _ = subject.sink { _ in } }  // cancelled when dropped
          transient.cancel()
        }
      }
    }
    for seen in stayers {
      #expect(seen.count == 4 * 5_000, "every value, once")
      #expect(seen.outOfOrder == 0, "each sender's values in its order")
    }
    #expect(subject.hasSubscribers)
    withExtendedLifetime(keep) {}
  }

  @Test("CurrentValueSubject: a subscriber attaching while values are sent gets them in order")
  func currentValueAttachRacingSends() async {
    for _ in 0..<200 {
      let subject = CurrentValueSubject<Int, Never>(0)
      let shared = Shared(subject)
      let received = Log()
      let holder = CancellableHolder()
      await simultaneously(
        { for value in 1...200 { shared.value.send(value) } },
        { holder.set(shared.value.sink { received.append("\($0)") }) })
      let values = received.all.compactMap(Int.init)
      // In the order sent, nothing missed at the end. (The first value can come twice, as in
      // Combine: replayed on the first request and offered by a send that had already read
      // the list.)
      #expect(zip(values, values.dropFirst()).allSatisfy { $0 <= $1 }, "\(values)")
      #expect(Set(values).count >= values.count - 1, "\(values)")
      #expect(values.last == 200)
      holder.cancel()
    }
  }

  final class CancellableHolder: @unchecked Sendable {
    // Safety: every access takes `lock`.
    let lock = NSLock()
    var cancellable: AnyCancellable?
    func set(_ cancellable: AnyCancellable) { lock.withLock { self.cancellable = cancellable } }
    func cancel() { lock.withLock { cancellable }?.cancel() }
  }
}
