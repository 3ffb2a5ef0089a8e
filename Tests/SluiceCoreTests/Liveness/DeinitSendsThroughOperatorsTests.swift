import Dispatch
import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// Values whose `deinit` sends, from several threads at once, through the engines where one
/// thread delivers what others hand over (`merge`, `zip`, `combineLatest`, `flatMap`,
/// `share`, `receive(on:)`, `CurrentValueSubject.value`), with feedback. Every call returns and
/// every value arrives once. Each test runs in a process of its own with a deadline.
@Suite(
  "Liveness: values whose deinit sends, through operators, from several threads", .serialized)
struct DeinitSendsThroughOperatorsTests {
  typealias Echo = ResumingDeferredTests.Echo
  static let senders = 4
  static let perSender = max(250, stressScaled(2_000))
  static let generations = 3

  static func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("\(message)\n".utf8))
    exit(4)
  }

  /// Waits until `count()` reaches `expected` (values delivered on another queue); exits 3 past
  /// the deadline.
  static func await(_ expected: Int, _ count: () -> Int) {
    let deadline = Date().addingTimeInterval(60)
    while count() < expected {
      if Date() > deadline {
        fail("received \(count()) of \(expected) (hang)")
      }
      usleep(1_000)
    }
  }

  /// `merge`: values of `a` whose `deinit` sends the next generation into `b`.
  @Test("merge: a value's deinit sends into the other upstream")
  func mergeDeinitSendsIntoOtherUpstream() async {
    await #expect(processExitsWith: .success) {
      let a = PassthroughSubject<Echo, Never>()
      let b = PassthroughSubject<Echo, Never>()
      let received = Atomic<Int>(0)
      let sink = a.merge(with: b).sink { _ in received.add(1, ordering: .relaxed) }
      let last = Self.generations - 1
      ResumingDeferredTests.onThreads(Self.senders) {
        for _ in 0..<Self.perSender { a.send(Echo(0, last: last) { b.send($0) }) }
      }
      let expected = Self.senders * Self.perSender * Self.generations
      let got = received.load(ordering: .relaxed)
      if got != expected { Self.fail("received \(got) of \(expected)") }
      sink.cancel()
    }
  }

  /// `merge` with feedback: the sink sends every generation-0 value's successor back into `a`
  /// and the value's `deinit` sends into `b`.
  @Test("merge: feedback from the sink and sends from deinit")
  func mergeFeedbackAndDeinitSends() async {
    await #expect(processExitsWith: .success) {
      let a = PassthroughSubject<Echo, Never>()
      let b = PassthroughSubject<Echo, Never>()
      let received = Atomic<Int>(0)
      let sink = a.merge(with: b).sink { echo in
        received.add(1, ordering: .relaxed)
        if echo.generation == 0 { a.send(Echo(echo.last, last: echo.last) { _ in }) }
      }
      ResumingDeferredTests.onThreads(Self.senders) {
        for _ in 0..<Self.perSender { a.send(Echo(0, last: 1) { b.send($0) }) }
      }
      // Each sent value: itself, its deinit's echo (generation 1), and the feedback value.
      let expected = Self.senders * Self.perSender * 3
      let got = received.load(ordering: .relaxed)
      if got != expected { Self.fail("received \(got) of \(expected)") }
      sink.cancel()
    }
  }

  /// `zip`: a paired value's `deinit` sends the partner of the next one into `b`.
  @Test("zip: a paired value's deinit sends into the other upstream")
  func zipDeinitSendsIntoOtherUpstream() async {
    await #expect(processExitsWith: .success) {
      let a = PassthroughSubject<Echo, Never>()
      let b = PassthroughSubject<Int, Never>()
      let pairs = Atomic<Int>(0)
      let sink = a.zip(b).sink { _ in pairs.add(1, ordering: .relaxed) }
      b.send(0)
      ResumingDeferredTests.onThreads(Self.senders) {
        for _ in 0..<Self.perSender { a.send(Echo(0, last: 1) { _ in b.send(1) }) }
      }
      let expected = Self.senders * Self.perSender
      let got = pairs.load(ordering: .relaxed)
      if got != expected { Self.fail("pairs \(got) of \(expected)") }
      sink.cancel()
    }
  }

  /// `combineLatest`, several threads: replaced latest values whose `deinit` sends into the
  /// other upstream (the single-thread case is `ResumingDeferredTests`). Combinations made
  /// while another is delivered are coalesced (by design), so only liveness and the last
  /// combination are checked.
  @Test("combineLatest: replaced values' deinit sends into the other upstream, many threads")
  func combineLatestDeinitSendsManyThreads() async {
    await #expect(processExitsWith: .success) {
      let a = PassthroughSubject<Echo, Never>()
      let b = PassthroughSubject<Int, Never>()
      let lastSeen = Mutex<(Int, Int)>((-1, -1))
      let sink = a.combineLatest(b).sink { echo, n in
        lastSeen.withLock { $0 = (echo.generation, n) }
      }
      b.send(0)
      ResumingDeferredTests.onThreads(Self.senders) {
        for _ in 0..<Self.perSender { a.send(Echo(0, last: 1) { _ in b.send(1) }) }
      }
      a.send(Echo(1, last: 1) { _ in })
      let final = lastSeen.withLock { $0 }
      if final != (1, 1) { Self.fail("last combination \(final)") }
      sink.cancel()
    }
  }

  /// `flatMap`: inner publishers carry values whose `deinit` sends into the outer subject.
  @Test("flatMap: an inner value's deinit sends into the outer subject")
  func flatMapDeinitSendsIntoOuter() async {
    await #expect(processExitsWith: .success) {
      let outer = PassthroughSubject<Echo, Never>()
      let received = Atomic<Int>(0)
      let sink = outer.flatMap { Just($0) }.sink { _ in received.add(1, ordering: .relaxed) }
      let last = Self.generations - 1
      ResumingDeferredTests.onThreads(Self.senders) {
        for _ in 0..<Self.perSender { outer.send(Echo(0, last: last) { outer.send($0) }) }
      }
      let expected = Self.senders * Self.perSender * Self.generations
      let got = received.load(ordering: .relaxed)
      if got != expected { Self.fail("received \(got) of \(expected)") }
      sink.cancel()
    }
  }

  /// `share()`: two subscribers; a value's `deinit` sends into the shared upstream subject.
  @Test("share: a value's deinit sends into the shared upstream")
  func shareDeinitSendsIntoUpstream() async {
    await #expect(processExitsWith: .success) {
      let source = PassthroughSubject<Echo, Never>()
      let shared = source.share()
      let received = Atomic<Int>(0)
      let sinks = [
        shared.sink { _ in received.add(1, ordering: .relaxed) },
        shared.sink { _ in received.add(1, ordering: .relaxed) },
      ]
      let last = Self.generations - 1
      ResumingDeferredTests.onThreads(Self.senders) {
        for _ in 0..<Self.perSender { source.send(Echo(0, last: last) { source.send($0) }) }
      }
      let expected = 2 * Self.senders * Self.perSender * Self.generations
      let got = received.load(ordering: .relaxed)
      if got != expected { Self.fail("received \(got) of \(expected)") }
      withExtendedLifetime(sinks) {}
    }
  }

  /// `CurrentValueSubject.value` set from several threads; the replaced value's `deinit` sets
  /// `value` again (the next generation) and the sink sends into a second subject.
  @Test("CurrentValueSubject.value: a replaced value's deinit sets value")
  func currentValueSetterDeinitSets() async {
    await #expect(processExitsWith: .success) {
      let subject = CurrentValueSubject<Echo?, Never>(nil)
      let echoes = PassthroughSubject<Int, Never>()
      let firsts = Atomic<Int>(0)
      let sinks = [
        subject.sink { echo in
          if let echo {
            if echo.generation == 0 { firsts.add(1, ordering: .relaxed) }
            echoes.send(echo.generation)
          }
        },
        echoes.sink { _ in },
      ]
      let last = Self.generations - 1
      ResumingDeferredTests.onThreads(Self.senders) {
        for _ in 0..<Self.perSender { subject.value = Echo(0, last: last) { subject.value = $0 } }
      }
      subject.value = nil
      subject.value = nil
      subject.value = nil
      let got = firsts.load(ordering: .relaxed)
      if got != Self.senders * Self.perSender { Self.fail("first values \(got)") }
      withExtendedLifetime(sinks) {}
    }
  }

  /// `receive(on:)`: values released on the queue's thread (after delivery) send into the
  /// source subject, while senders of other threads send into it too.
  @Test("receive(on:): a value's deinit on the queue sends into the source")
  func receiveOnDeinitSendsIntoSource() async {
    await #expect(processExitsWith: .success) {
      let source = PassthroughSubject<Echo, Never>()
      let queue = DispatchQueue(label: "receive-on")
      let received = Atomic<Int>(0)
      let sink = source.receive(on: queue).sink { _ in received.add(1, ordering: .relaxed) }
      let last = Self.generations - 1
      ResumingDeferredTests.onThreads(Self.senders) {
        for _ in 0..<Self.perSender { source.send(Echo(0, last: last) { source.send($0) }) }
      }
      let expected = Self.senders * Self.perSender * Self.generations
      Self.await(expected) { received.load(ordering: .relaxed) }
      sink.cancel()
    }
  }

  /// Subjects forwarding to each other: `a`'s sink sends into `b`, `b`'s into `a` (bounded by
  /// generation); every value's `deinit` sends into the other subject too.
  @Test("two subjects feeding each other, and deinits that send")
  func ringOfSubjectsWithDeinitSends() async {
    await #expect(processExitsWith: .success) {
      let a = PassthroughSubject<Echo, Never>()
      let b = PassthroughSubject<Echo, Never>()
      let received = Atomic<Int>(0)
      let sinks = [
        a.sink { echo in
          received.add(1, ordering: .relaxed)
          if echo.generation == 0 { b.send(Echo(1, last: 1) { _ in }) }
        },
        b.sink { _ in received.add(1, ordering: .relaxed) },
      ]
      ResumingDeferredTests.onThreads(Self.senders) {
        for _ in 0..<Self.perSender { a.send(Echo(0, last: 1) { b.send($0) }) }
      }
      let expected = Self.senders * Self.perSender * 3
      let got = received.load(ordering: .relaxed)
      if got != expected { Self.fail("received \(got) of \(expected)") }
      withExtendedLifetime(sinks) {}
    }
  }
}

extension DeinitSendsThroughOperatorsTests {
  /// An object that subscribes to `subject` when made and whose `deinit` cancels that
  /// subscription (its `AnyCancellable` is released) and sends a "closed" value.
  final class Owner: @unchecked Sendable {
    // Safety: `subscription` is set once, by the thread that made the owner, before the owner
    // is sent; `closed` is set in `init`.
    var subscription: AnyCancellable?
    let closed: () -> Void
    init(closed: @escaping () -> Void) { self.closed = closed }
    deinit { closed() }
  }

  /// `CurrentValueSubject`: values that subscribe to the subject as they are made (a replay,
  /// beside another thread's turn) and whose `deinit` cancels that subscription and sends,
  /// from several threads.
  @Test("CurrentValueSubject: values that subscribe, and cancel and send from deinit")
  func currentValueOwnersSubscribeAndCancel() async {
    await #expect(processExitsWith: .success) {
      let subject = CurrentValueSubject<Owner?, Never>(nil)
      let sink = subject.sink { _ in }
      ResumingDeferredTests.onThreads(Self.senders) {
        for _ in 0..<500 {
          let owner = Owner { subject.send(nil) }
          owner.subscription = subject.sink { _ in }
          subject.send(owner)
        }
      }
      subject.send(nil)
      sink.cancel()
    }
  }

  /// The same through a `PassthroughSubject` behind `eraseToAnyPublisher()` and `merge`.
  @Test("merge of subjects: values that subscribe, and cancel and send from deinit")
  func mergedOwnersSubscribeAndCancel() async {
    await #expect(processExitsWith: .success) {
      let a = PassthroughSubject<Owner?, Never>()
      let b = PassthroughSubject<Owner?, Never>()
      // Safety (test): AnyPublisher is a value wrapping a Sendable merge of two subjects.
      nonisolated(unsafe) let merged = a.merge(with: b).eraseToAnyPublisher()
      let received = Atomic<Int>(0)
      let sink = merged.sink { _ in received.add(1, ordering: .relaxed) }
      ResumingDeferredTests.onThreads(Self.senders) {
        for _ in 0..<500 {
          let owner = Owner { b.send(nil) }
          owner.subscription = merged.sink { _ in }
          a.send(owner)
        }
      }
      let expected = 2 * Self.senders * 500
      let got = received.load(ordering: .relaxed)
      if got != expected { Self.fail("received \(got) of \(expected)") }
      sink.cancel()
    }
  }
}
