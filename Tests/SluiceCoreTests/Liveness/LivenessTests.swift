import Foundation
import SluiceTestSupport
import SluiceTesting
import Synchronization
import Testing

@testable import SluiceCore

/// Every call returns after bounded work while another thread sends without pause: the engines
/// where one thread delivers what others hand over (subjects, merge, flatMap) must never make a
/// caller deliver another thread's unbounded stream. Each test runs a producer thread that never
/// stops and checks that a second thread's calls all return while it is still running: what
/// fails is a call held while the producer runs (a minute with no call returning), not a slow
/// machine (see ``callsReturn(whileRunning:stall:limit:_:)``).
@Suite("Liveness: calls return while another thread sends without pause")
struct LivenessTests {
  /// A subscriber's record: how many values it received and, per sender (value / 1_000_000),
  /// whether they came in order.
  final class Record: Sendable {
    struct State {
      var count = 0
      var last: [Int: Int] = [:]
      var outOfOrder = 0
      var overlaps = 0
      var inside = false
    }
    let state = Mutex(State())
    /// How much work each value costs (200: about a microsecond, as a real sink might).
    let work: Int

    init(work: Int = 200) { self.work = work }

    /// Records `value` and does `work` steps of work.
    func receive(_ value: Int) {
      state.withLock { state in
        if state.inside { state.overlaps += 1 }
        state.inside = true
        state.count += 1
        let sender = value / 1_000_000
        if let last = state.last[sender], last >= value { state.outOfOrder += 1 }
        state.last[sender] = value
      }
      var spin = 0
      for step in 0..<work { spin &+= step }
      state.withLock { $0.inside = false }
      withExtendedLifetime(spin) {}
    }

    var snapshot: State { state.withLock { $0 } }
  }

  /// The caller's values: sender 1's numbers (the producer is sender 0).
  static func callerValue(_ index: Int) -> Int { 1_000_000 + index }

  /// A subject with a recording sink, and a producer thread sending into it without pause.
  func racedSubject() -> (PassthroughSubject<Int, Never>, Record, AnyCancellable, RacingProducer) {
    let subject = PassthroughSubject<Int, Never>()
    let record = Record()
    let sink = subject.sink { record.receive($0) }
    let producer = RacingProducer { subject.send($0) }
    return (subject, record, sink, producer)
  }

  @Test("PassthroughSubject: a second thread's sends return while the first sends without pause")
  func subjectSend() async {
    let (subject, record, sink, producer) = racedSubject()
    let returned = await callsReturn(whileRunning: producer) { progress in
      for index in 0..<200 {
        subject.send(Self.callerValue(index))
        progress.tick()
        usleep(100)  // paced like taps, not waiting for anything
      }
    }
    #expect(returned, "every call returned while the producer ran")
    let state = record.snapshot
    #expect(state.last[1] == Self.callerValue(199), "every value of the caller arrived")
    #expect(state.outOfOrder == 0)
    #expect(state.overlaps == 0)
    withExtendedLifetime(sink) {}
  }

  @Test("PassthroughSubject: values sent back to back from two threads all return, in order")
  func subjectSendBackToBack() async {
    let (subject, record, sink, producer) = racedSubject()
    let returned = await callsReturn(whileRunning: producer) { progress in
      for index in 0..<20_000 {
        subject.send(Self.callerValue(index))
        progress.tick()
      }
    }
    #expect(returned, "every call returned while the producer ran")
    let state = record.snapshot
    #expect(state.last[1] == Self.callerValue(19_999))
    #expect(state.outOfOrder == 0)
    #expect(state.overlaps == 0)
    #expect(subject.core.state.withLock { $0.subscribers.isIdle }, "nothing left queued")
    withExtendedLifetime(sink) {}
  }

  @Test("PassthroughSubject: send(completion:) from a second thread returns")
  func subjectCompletion() async {
    let subject = PassthroughSubject<Int, Never>()
    let record = Record()
    let finished = Atomic<Int>(0)
    let sink = subject.sink(
      receiveCompletion: { _ in finished.add(1, ordering: .relaxed) },
      receiveValue: { record.receive($0) })
    let producer = RacingProducer { subject.send($0) }
    let returned = await callsReturn(whileRunning: producer) {
      subject.send(completion: .finished)
    }
    #expect(returned, "every call returned while the producer ran")
    #expect(finished.load(ordering: .relaxed) == 1)
    withExtendedLifetime(sink) {}
  }

  @Test(
    "PassthroughSubject: subscribe and cancel from a second thread return; memory stays bounded")
  func subjectSubscribeAndCancel() async {
    let (subject, _, sink, producer) = racedSubject()
    let returned = await callsReturn(whileRunning: producer) { progress in
      for _ in 0..<2_000 {
        let other = Record()
        let subscription = subject.sink { other.receive($0) }
        subscription.cancel()
        progress.tick()
      }
    }
    #expect(returned, "every call returned while the producer ran")
    #expect(subject.core.state.withLock { $0.subscribers.isIdle }, "nothing left queued")
    #expect(subject.core.subscriberCount == 1)
    withExtendedLifetime(sink) {}
  }

  @Test("CurrentValueSubject: subscribe (with its replay) and cancel from a second thread return")
  func currentValueSubjectSubscribeAndCancel() async {
    let subject = CurrentValueSubject<Int, Never>(-1)
    let record = Record()
    let sink = subject.sink { record.receive($0) }
    let producer = RacingProducer { subject.value = $0 }
    let disordered = Atomic<Int>(0)
    let returned = await callsReturn(whileRunning: producer) { progress in
      for _ in 0..<2_000 {
        let other = Record()
        let subscription = subject.sink { other.receive($0) }
        subscription.cancel()
        progress.tick()
        disordered.add(other.snapshot.outOfOrder, ordering: .relaxed)
      }
    }
    #expect(returned, "every call returned while the producer ran")
    #expect(disordered.load(ordering: .relaxed) == 0)
    #expect(subject.core.subscriberCount == 1)
    withExtendedLifetime(sink) {}
  }

  @Test("PassthroughSubject: request from a second thread returns")
  func subjectRequest() async {
    let subject = PassthroughSubject<Int, Never>()
    let record = Record()
    let subscription = Box<any Subscription>()
    let subscriber = AnySubscriber<Int, Never>(
      receiveSubscription: { subscription.set($0) },
      receiveValue: { value in
        record.receive(value)
        return .none
      },
      receiveCompletion: { _ in })
    subject.subscribe(subscriber)
    let producer = RacingProducer { subject.send($0) }
    let returned = await callsReturn(whileRunning: producer) { progress in
      for _ in 0..<2_000 {
        subscription.value?.request(.max(1))
        progress.tick()
      }
    }
    #expect(returned, "every call returned while the producer ran")
    #expect(record.snapshot.count <= 2_000, "never more than demanded")
    #expect(record.snapshot.overlaps == 0)
    subscription.value?.cancel()
  }

  @Test("CurrentValueSubject: setting value from a second thread returns")
  func currentValueSubject() async {
    let subject = CurrentValueSubject<Int, Never>(-1)  // below the producer's first value
    let record = Record()
    let sink = subject.sink { record.receive($0) }
    let producer = RacingProducer { subject.value = $0 }
    let returned = await callsReturn(whileRunning: producer) { progress in
      for index in 0..<2_000 {
        subject.value = Self.callerValue(index)
        progress.tick()
      }
    }
    #expect(returned, "every call returned while the producer ran")
    #expect(record.snapshot.last[1] == Self.callerValue(1_999))
    #expect(record.snapshot.outOfOrder == 0)
    withExtendedLifetime(sink) {}
  }

  /// Subscribes `pipeline` over two subjects; a producer sends into `b` without pause while
  /// a second thread sends 2,000 values into `a`. Returns what the subscriber saw.
  func secondUpstreamRacing(
    _ pipeline: (PassthroughSubject<Int, Never>, PassthroughSubject<Int, Never>, Record) ->
      AnyCancellable
  ) async -> Record.State {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<Int, Never>()
    let record = Record()
    let subscription = pipeline(a, b, record)
    let producer = RacingProducer { b.send($0) }
    let returned = await callsReturn(whileRunning: producer) { progress in
      for index in 0..<2_000 {
        a.send(Self.callerValue(index))
        progress.tick()
      }
    }
    #expect(returned, "every call returned while the producer ran")
    withExtendedLifetime(subscription) {}
    return record.snapshot
  }

  @Test("merge: a second thread's sends into one upstream return while another never stops")
  func merge() async {
    let state = await secondUpstreamRacing { a, b, record in
      a.merge(with: b).sink { record.receive($0) }
    }
    #expect(state.last[1] == Self.callerValue(1_999), "every value of the caller arrived")
    #expect(state.outOfOrder == 0)
    #expect(state.overlaps == 0)
  }

  @Test("flatMap: a second thread's sends into one inner return while another never stops")
  func flatMap() async {
    let state = await secondUpstreamRacing { a, b, record in
      [a, b].publisher.flatMap { $0 }.sink { record.receive($0) }
    }
    #expect(state.last[1] == Self.callerValue(1_999), "every value of the caller arrived")
    #expect(state.outOfOrder == 0)
    #expect(state.overlaps == 0)
  }

  @Test("merge with limited demand: request from a second thread returns")
  func mergeRequest() async {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<Int, Never>()
    let record = Record()
    let subscription = Box<any Subscription>()
    a.merge(with: b).subscribe(
      AnySubscriber<Int, Never>(
        receiveSubscription: { subscription.set($0) },
        receiveValue: { value in
          record.receive(value)
          return .max(1)
        },
        receiveCompletion: { _ in }))
    let producer = RacingProducer { b.send($0) }
    let returned = await callsReturn(whileRunning: producer) { progress in
      for _ in 0..<2_000 {
        subscription.value?.request(.max(1))
        progress.tick()
      }
    }
    #expect(returned, "every call returned while the producer ran")
    #expect(record.snapshot.overlaps == 0)
    subscription.value?.cancel()
  }

  @Test("combineLatest: a second thread's sends return while the other upstream never stops")
  func combineLatest() async {
    let state = await secondUpstreamRacing { a, b, record in
      a.combineLatest(b).sink { record.receive($0.0) }
    }
    #expect(state.overlaps == 0)
  }

  // (Foundation on Linux may serialise the two threads' posts itself; the test holds either way.)
  @Test("NotificationCenter.publisher: a second thread's posts return while another never stops")
  func notificationCenter() async {
    let center = NotificationCenter()
    let name = Notification.Name("LivenessTests.tick")
    let record = Record(work: 20_000)  // slower than a post: the deliverer falls behind
    let sink = center.publisher(for: name).sink { note in
      record.receive(note.userInfo?["value"] as? Int ?? -1)
    }
    let producer = RacingProducer { center.post(name: name, object: nil, userInfo: ["value": $0]) }
    let returned = await callsReturn(whileRunning: producer) { progress in
      for index in 0..<2_000 {
        center.post(name: name, object: nil, userInfo: ["value": Self.callerValue(index)])
        progress.tick()
      }
    }
    #expect(returned, "every call returned while the producer ran")
    let state = record.snapshot
    #expect(state.last[1] == Self.callerValue(1_999), "every post of the caller arrived")
    #expect(state.outOfOrder == 0)
    #expect(state.overlaps == 0)
    withExtendedLifetime(sink) {}
  }

  /// The check itself: a call held until the producer stops fails it, even after other calls
  /// made progress; calls that all return pass it however slowly they come.
  @Test("the check fails a call held until the producer stops, and passes slow calls")
  func theCheckFailsAHeldCall() async {
    let producer = RacingProducer { _ in usleep(1_000) }
    let held = await callsReturn(whileRunning: producer, stall: .seconds(2)) { progress in
      for _ in 0..<3 {
        usleep(300_000)
        progress.tick()
      }
      // Held: only the producer's stop lets it go (the producer stops after the stall).
      while !producer.stopped.load(ordering: .relaxed) { usleep(1_000) }
    }
    #expect(!held, "a call held until the producer stopped fails the check")
    let slow = RacingProducer { _ in usleep(1_000) }
    let returned = await callsReturn(whileRunning: slow, stall: .seconds(2)) { progress in
      for _ in 0..<6 {
        usleep(500_000)  // each call within the stall window, the whole beyond it
        progress.tick()
      }
    }
    #expect(returned, "slow calls that each return pass the check")
  }
}
