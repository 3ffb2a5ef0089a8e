import Dispatch
import Foundation
import SluiceTestSupport
import SluiceTesting
import Synchronization
import Testing

@testable import SluiceCore

/// What a subject does with a send, a completion or a cancel made on one thread while another
/// thread's send is being delivered (``SharedSubscriberList``'s hand-over): nothing waits, and
/// what was handed over is delivered by the sender in flight, in order, before its `send`
/// returns.
@Suite("Subjects: sends racing a delivery are handed to the sender in flight", .onThreadsOfTheirOwn)
struct SubjectHandOverTests {
  final class Log: @unchecked Sendable {
    // Safety: every access takes `lock`.
    let lock = NSLock()
    var entries: [String] = []
    func append(_ entry: String) { lock.withLock { entries.append(entry) } }
    var all: [String] { lock.withLock { entries } }
  }

  /// Where a subscriber's closure stops, on its delivery of 1, until the test lets it go on.
  final class Parking: Sendable {
    let entered = DispatchSemaphore(value: 0)
    let goOn = DispatchSemaphore(value: 0)

    /// From the closure: signals `entered` and waits for `goOn` if `value` is 1.
    func stop(at value: Int) {
      guard value == 1 else { return }
      entered.signal()
      goOn.wait()
    }
  }

  /// Sinks "first" (which waits inside its delivery of 1 until `goOn`) and "second".
  struct Parked {
    let subscriptions: [AnyCancellable]
    let entered: DispatchSemaphore
    let goOn: DispatchSemaphore
  }

  func park(_ subject: PassthroughSubject<Int, Never>, log: Log) -> Parked {
    let parking = Parking()
    let first = subject.sink(
      receiveCompletion: { _ in log.append("first finished") },
      receiveValue: { value in
        log.append("first \(value)")
        parking.stop(at: value)
      })
    let second = subject.sink(
      receiveCompletion: { _ in log.append("second finished") },
      receiveValue: { log.append("second \($0)") })
    return Parked(subscriptions: [first, second], entered: parking.entered, goOn: parking.goOn)
  }

  /// Sends 1 from another thread; returns once it is inside "first", with a semaphore signalled
  /// when that `send` returns.
  func sendOne(_ subject: PassthroughSubject<Int, Never>, _ parked: Parked) -> DispatchSemaphore {
    let returned = DispatchSemaphore(value: 0)
    let shared = Shared(subject)
    Thread.detachNewThread {
      shared.value.send(1)
      returned.signal()
    }
    parked.entered.wait()
    return returned
  }

  @Test("values sent meanwhile return at once and follow, in order, to who was attached then")
  func valuesFollowInOrder() {
    let subject = PassthroughSubject<Int, Never>()
    let log = Log()
    let parked = park(subject, log: log)
    let returned = sendOne(subject, parked)
    subject.send(2)  // does not wait for the delivery of 1
    let third = subject.sink { log.append("third \($0)") }
    subject.send(3)
    #expect(log.all == ["first 1"])
    parked.goOn.signal()
    returned.wait()
    // The sender in flight delivered 2 and 3 before its own `send` returned; `third`,
    // attached after 2 was sent, receives 3 only.
    #expect(
      log.all == [
        "first 1", "second 1", "first 2", "second 2", "first 3", "second 3", "third 3",
      ])
    subject.send(4)  // nobody in flight: delivered at once
    #expect(log.all.suffix(3) == ["first 4", "second 4", "third 4"])
    withExtendedLifetime((parked, third)) {}
  }

  @Test("a completion sent meanwhile comes after the values handed over before it, once")
  func completionFollowsTheValues() {
    let subject = PassthroughSubject<Int, Never>()
    let log = Log()
    let parked = park(subject, log: log)
    let returned = sendOne(subject, parked)
    subject.send(2)
    subject.send(completion: .finished)
    subject.send(3)  // after the completion: ignored
    let late = subject.sink(
      receiveCompletion: { _ in log.append("late finished") }, receiveValue: { _ in })
    #expect(log.all == ["first 1", "late finished"])
    parked.goOn.signal()
    returned.wait()
    #expect(
      log.all == [
        "first 1", "late finished", "second 1", "first 2", "second 2", "first finished",
        "second finished",
      ])
    withExtendedLifetime((parked, late)) {}
  }

  @Test("CurrentValueSubject: the value is stored at once, and delivered after the one in flight")
  func currentValueIsStoredAtOnce() {
    let subject = CurrentValueSubject<Int, Never>(0)
    let log = Log()
    let parking = Parking()
    let sink = subject.sink { value in
      log.append("\(value)")
      parking.stop(at: value)
    }
    let returned = DispatchSemaphore(value: 0)
    let shared = Shared(subject)
    Thread.detachNewThread {
      shared.value.value = 1
      returned.signal()
    }
    parking.entered.wait()
    subject.value = 2
    #expect(subject.value == 2)
    // A subscriber attaching now gets 2 once: replayed (it was not attached when 2 was sent),
    // by the turn in flight after the value it delivers (see the README: a replay goes
    // through the subject's turn, so that senders never queue behind a slow first value
    // without bound).
    let late = subject.sink { log.append("late \($0)") }
    #expect(log.all == ["0", "1"])
    parking.goOn.signal()
    returned.wait()
    #expect(log.all == ["0", "1", "2", "late 2"])
    withExtendedLifetime((sink, late)) {}
  }

  @Test("a sender from inside a handed-over delivery is nested, and nothing is lost")
  func nestedSendInsideHandedOverWork() {
    let subject = PassthroughSubject<Int, Never>()
    let log = Log()
    let parking = Parking()
    let sink = subject.sink { value in
      log.append("\(value)")
      parking.stop(at: value)
      if value == 2 { subject.send(20) }  // runs on the sender in flight
    }
    let returned = sendOneFromAnotherThread(subject, until: parking.entered)
    subject.send(2)
    parking.goOn.signal()
    returned.wait()
    #expect(log.all == ["1", "2", "20"])
    withExtendedLifetime(sink) {}
  }

  @Test("threads sending while others cancel and one completes: serial, in order, released")
  func racingSendsCancelsAndCompletion() async {
    final class Seen: @unchecked Sendable {
      // Safety: a subscriber's signals are serial (checked with `inFlight`).
      let inFlight = Atomic<Int>(0)
      var overlaps = 0
      var last = [Int](repeating: -1, count: 4)
      var outOfOrder = 0
      var afterCompletion = 0
      var completions = 0
    }
    final class Token: Sendable {}
    for _ in 0..<20 {
      let subject = PassthroughSubject<Int, Never>()
      let shared = Shared(subject)
      let seen = (0..<4).map { _ in Seen() }
      weak var captured: Token?
      var all: [AnyCancellable] = []
      for observer in seen {
        let token = Token()
        captured = token
        let cancellable = subject.sink(
          receiveCompletion: { _ in
            observer.completions += 1
            withExtendedLifetime(token) {}
          },
          receiveValue: { value in
            if observer.inFlight.add(1, ordering: .acquiring).newValue != 1 {
              observer.overlaps += 1
            }
            if observer.completions > 0 { observer.afterCompletion += 1 }
            let (sender, index) = value.quotientAndRemainder(dividingBy: 1_000_000)
            if index <= observer.last[sender] { observer.outOfOrder += 1 }
            observer.last[sender] = index
            observer.inFlight.subtract(1, ordering: .releasing)
          })
        all.append(cancellable)
      }
      let cancelled = Shared(Array(all.prefix(2)))
      await concurrently(6) { worker in
        switch worker {
        case 0..<4:
          for index in 0..<500 { shared.value.send(worker * 1_000_000 + index) }
        case 4:
          for cancellable in cancelled.value { cancellable.cancel() }
        default:
          shared.value.send(completion: .finished)
        }
      }
      for observer in seen {
        #expect(observer.overlaps == 0)
        #expect(observer.outOfOrder == 0)
        #expect(observer.afterCompletion == 0)
        #expect(observer.completions <= 1)
      }
      all.removeAll()
      #expect(captured == nil, "every closure released once nothing is in flight")
    }
  }

  /// Counts what one sink receives from two racing senders (values `sender * 1_000_000 + i`).
  final class Tally: @unchecked Sendable {
    // Safety: a subscriber's signals are serial (checked with `inFlight`).
    let inFlight = Atomic<Int>(0)
    var overlaps = 0
    var received = 0
    var last = [-1, -1]
    var outOfOrder = 0
    var finishedAfter: Int?

    func receive(_ value: Int) {
      if inFlight.add(1, ordering: .acquiring).newValue != 1 { overlaps += 1 }
      let (sender, index) = value.quotientAndRemainder(dividingBy: 1_000_000)
      if index <= last[sender] { outOfOrder += 1 }
      last[sender] = index
      received += 1
      inFlight.subtract(1, ordering: .releasing)
    }
  }

  @Test("two threads racing on new subjects: every value once, in each sender's order")
  func racingSendersLoseNothing() async {
    // Many short races on new subjects, so that hand-offs often land while the other sender
    // is leaving, and turns pass to waiting senders.
    for _ in 0..<300 {
      let subject = PassthroughSubject<Int, Never>()
      let tally = Tally()
      let sink = subject.sink { tally.receive($0) }
      let shared = Shared(subject)
      await concurrently(2) { sender in
        for index in 0..<200 { shared.value.send(sender * 1_000_000 + index) }
      }
      #expect(tally.received == 400)
      #expect(tally.overlaps == 0)
      #expect(tally.outOfOrder == 0)
      let word = subject.core.subscribers.reader.load(ordering: .relaxed)
      #expect(word == 0, "the turn is free and nothing is left waiting")
      withExtendedLifetime(sink) {}
    }
  }

  @Test("a completion sent after values that were handed over reaches every sink after them")
  func completionAfterHandedOverValuesLosesNothing() async {
    for _ in 0..<200 {
      let subject = PassthroughSubject<Int, Never>()
      let tally = Tally()
      let sink = subject.sink(
        receiveCompletion: { _ in tally.finishedAfter = tally.received },
        receiveValue: { tally.receive($0) })
      let shared = Shared(subject)
      // Sender 0 completes once its 100 sends have returned (some handed over to sender 1).
      await concurrently(2) { sender in
        for index in 0..<100 { shared.value.send(sender * 1_000_000 + index) }
        if sender == 0 { shared.value.send(completion: .finished) }
      }
      #expect(tally.overlaps == 0)
      #expect(tally.outOfOrder == 0)
      #expect(tally.last[0] == 99, "every value of the completing sender arrived")
      #expect(tally.finishedAfter == tally.received, "nothing after the completion")
      withExtendedLifetime(sink) {}
    }
  }
}
