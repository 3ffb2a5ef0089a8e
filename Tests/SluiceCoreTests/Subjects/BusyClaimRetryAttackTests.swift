import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// The busy-claim retry attacked: a `PassthroughSubject` send from outside
/// any delivery that finds another thread's turn offering no grant yields and tries the claim
/// again (``SubjectCore/busyClaimRetries`` times) before it locks. These tests drive it in the
/// shapes apps write — a `CurrentValueSubject` (which does not retry) fed by setters and sends
/// at once, subjects behind `eraseToAnyPublisher()`, `share()`, `multicast`, `merge`,
/// `flatMap`, `zip`, `combineLatest` and `receive(on:)` with more sending threads than cores, a
/// subscriber that completes the subject or cancels itself from inside `receive` while others
/// retry, subscribe/cancel churn — and check what a subscriber can observe: every value once,
/// each sender's in order, serially, nothing after completion or cancel, and no call
/// delivering more than ``DeliveryContext/allowancePerCall`` values of other threads.
@Suite("Subjects: a busy claim tried again, attacked", .onThreadsOfTheirOwn)
struct BusyClaimRetryAttackTests {
  typealias Meter = CallBoundTests.CallMeter

  static func spin(_ nanoseconds: UInt64) {
    guard nanoseconds > 0 else { return }
    let end = DispatchTime.now().uptimeNanoseconds + nanoseconds
    while DispatchTime.now().uptimeNanoseconds < end {}
  }

  /// Sender `sender`'s `index`th value (both from 0).
  static func value(_ sender: Int, _ index: Int) -> Int { (sender + 1) * 1_000_000 + index }

  /// Counts, for the calling sender's current call, a value of another sender it delivers.
  static func meter(_ value: Int) {
    if let meter = Meter.current, value >= 1_000_000, value / 1_000_000 - 1 != meter.sender {
      meter.othersInCall += 1
    }
  }

  /// A subscriber's record, written only from inside its deliveries (which must be serial):
  /// plain storage, so that the thread sanitizer sees a missing happens-before.
  final class OrderCheck: @unchecked Sendable {
    // Safety: written only by deliveries to one subscriber, which must be serial; `inside`
    // catches two at once.
    var last: [Int]
    var received = 0
    var outOfOrder = 0
    var duplicates = 0
    var lastValue = -1
    let inside = Atomic<Bool>(false)
    let overlaps = Atomic<Int>(0)
    let work: UInt64
    /// Whether this subscriber counts others' values against the sending call (one per test:
    /// the allowance counts values, not deliveries to each subscriber).
    let metered: Bool

    init(senders: Int, work: UInt64 = 0, metered: Bool = false) {
      last = Array(repeating: -1, count: senders)
      self.work = work
      self.metered = metered
    }

    func receive(_ value: Int) {
      if inside.exchange(true, ordering: .acquiring) { overlaps.add(1, ordering: .relaxed) }
      defer { inside.store(false, ordering: .releasing) }
      if metered { BusyClaimRetryAttackTests.meter(value) }
      guard value >= 1_000_000 else { return }  // a current value replayed on subscription
      let sender = value / 1_000_000 - 1
      let index = value % 1_000_000
      if index == last[sender] {
        duplicates += 1
      } else if index != last[sender] + 1 {
        outOfOrder += 1
      }
      last[sender] = index
      lastValue = value
      received += 1
      BusyClaimRetryAttackTests.spin(work)
    }

    /// Every value of `senders` × `perSender` once, each sender's in order, serially.
    func expectEverything(_ senders: Int, _ perSender: Int, _ label: String) {
      #expect(received == senders * perSender, "\(label): received \(received)")
      #expect(outOfOrder == 0, "\(label): \(outOfOrder) values out of order")
      #expect(duplicates == 0, "\(label): \(duplicates) duplicates")
      #expect(overlaps.load(ordering: .relaxed) == 0, "\(label): overlapping deliveries")
      #expect(last.allSatisfy { $0 == perSender - 1 }, "\(label): last per sender \(last)")
    }
  }

  /// Runs `senders` threads, each sending `perSender` values through `send(sender, value)`,
  /// each call metered; returns the worst call's count of others' values, or `nil` if a thread
  /// did not return.
  static func sendMetered(
    senders: Int, perSender: Int, _ send: @escaping @Sendable (Int, Int) -> Void
  ) async -> Int? {
    let meters = (0..<senders).map { Meter(sender: $0) }
    let shared = UncheckedSendable(meters)
    let returned = await allReturn(threads: senders, deadline: .seconds(300)) { sender in
      let meter = shared.value[sender]
      meter.install()
      for index in 0..<perSender {
        meter.call { send(sender, Self.value(sender, index)) }
      }
    }
    guard returned else { return nil }
    return meters.map(\.worst).max() ?? 0
  }

  // MARK: CurrentValueSubject (does not take the retry path)

  /// Half the threads set `value`, half `send`: one order for every subscriber, each thread's
  /// in order, the bound per call, and afterwards `value` is the last value delivered (the
  /// store and the hand-off are one lock round).
  @Test("CurrentValueSubject: value setters and sends from many threads", arguments: [2, 8, 16])
  func currentValueSettersAndSends(senders: Int) async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let fast = OrderCheck(senders: senders, metered: true)
    let slow = OrderCheck(senders: senders, work: 300)
    let cancellables = [subject.sink { fast.receive($0) }, subject.sink { slow.receive($0) }]
    let perSender = max(200, stressScaled(32_000) / senders)
    let worst = await Self.sendMetered(senders: senders, perSender: perSender) { sender, value in
      if sender % 2 == 0 { subject.value = value } else { subject.send(value) }
    }
    #expect(worst != nil, "every thread returned")
    #expect((worst ?? .max) <= DeliveryContext.allowancePerCall, "worst call \(worst ?? -1)")
    fast.expectEverything(senders, perSender, "fast")
    slow.expectEverything(senders, perSender, "slow")
    #expect(subject.value == fast.lastValue, "value \(subject.value), last \(fast.lastValue)")
    #expect(fast.lastValue == slow.lastValue)
    withExtendedLifetime(cancellables) {}
  }

  /// A CurrentValueSubject and a PassthroughSubject fed by the same threads, one subscriber on
  /// both through `merge`: the retrying subject and the locking one share the merge's turn.
  /// Each thread sends into one of the two, and its values come out in its order. (A thread
  /// that alternates between the two has no such promise: a send handed to another thread's
  /// turn returns before its value is delivered — see "Differences from Combine".)
  @Test("CurrentValueSubject merged with a PassthroughSubject, eight senders")
  func currentValueMergedWithPassthrough() async {
    let current = CurrentValueSubject<Int, Never>(0)
    let passthrough = PassthroughSubject<Int, Never>()
    let senders = 8
    let check = OrderCheck(senders: senders, metered: true)
    let sink = current.merge(with: passthrough).sink { check.receive($0) }
    let perSender = max(200, stressScaled(32_000) / senders)
    let worst = await Self.sendMetered(senders: senders, perSender: perSender) { sender, value in
      if sender % 2 == 0 { current.send(value) } else { passthrough.send(value) }
    }
    #expect(worst != nil, "every thread returned")
    #expect((worst ?? .max) <= DeliveryContext.allowancePerCall, "worst call \(worst ?? -1)")
    check.expectEverything(senders, perSender, "merged")
    withExtendedLifetime(sink) {}
  }

  // MARK: Operator shapes

  enum Shape: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case erased, share, multicast, merge, flatMap, receiveOn, mapFilterErased
    var testDescription: String { rawValue }
  }

  /// Builds `shape` over two subjects (senders alternate between them where there are two);
  /// returns the publisher subscribers attach to, what connects it, and the queue it hops to.
  static func build(
    _ shape: Shape, _ a: PassthroughSubject<Int, Never>, _ b: PassthroughSubject<Int, Never>,
    queue: DispatchQueue
  ) -> (AnyPublisher<Int, Never>, () -> (any Cancellable)?) {
    switch shape {
    case .erased: return (a.eraseToAnyPublisher(), { nil })
    case .share: return (a.eraseToAnyPublisher().share().eraseToAnyPublisher(), { nil })
    case .multicast:
      let connectable = a.multicast(subject: PassthroughSubject<Int, Never>())
      return (connectable.eraseToAnyPublisher(), { connectable.connect() })
    case .merge: return (a.merge(with: b).eraseToAnyPublisher(), { nil })
    case .flatMap: return ([a, b].publisher.flatMap { $0 }.eraseToAnyPublisher(), { nil })
    case .receiveOn: return (a.receive(on: queue).eraseToAnyPublisher(), { nil })
    case .mapFilterErased:
      return (a.map { $0 }.filter { _ in true }.eraseToAnyPublisher(), { nil })
    }
  }

  /// Eight threads (four times the cores) send through `shape` to three subscribers, one of
  /// them slow: every value once to each, each sender's in order, serially, and — where the
  /// values are delivered on the senders' threads — no call delivers more than its allowance
  /// of others' values, however many engines they pass through.
  @Test("operator shapes with eight sending threads", arguments: Shape.allCases)
  func operatorShape(shape: Shape) async {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<Int, Never>()
    let queue = DispatchQueue(label: "sluice.tests.retry-hop")
    let (publisher, connect) = Self.build(shape, a, b, queue: queue)
    let senders = 8
    let checks = [
      OrderCheck(senders: senders, metered: true), OrderCheck(senders: senders),
      OrderCheck(senders: senders, work: 500),
    ]
    let cancellables = checks.map { check in publisher.sink { check.receive($0) } }
    let connection = connect()
    let perSender = max(200, stressScaled(16_000) / senders)
    let twoSubjects = shape == .merge || shape == .flatMap
    let worst = await Self.sendMetered(senders: senders, perSender: perSender) { sender, value in
      (twoSubjects && sender % 2 == 1 ? b : a).send(value)
    }
    if shape == .receiveOn { queue.sync {} }
    #expect(worst != nil, "\(shape): every thread returned")
    #expect((worst ?? .max) <= DeliveryContext.allowancePerCall, "\(shape): worst \(worst ?? -1)")
    for (index, check) in checks.enumerated() {
      check.expectEverything(senders, perSender, "\(shape) subscriber \(index)")
    }
    withExtendedLifetime((cancellables, connection)) {}
  }

  /// Per component of `zip` / `combineLatest`: the indices each sender's values show in, in
  /// order of output.
  final class ComponentCheck: @unchecked Sendable {
    // Safety: written only by deliveries to one subscriber, which must be serial.
    var seen: [[Int]]
    init(senders: Int) { seen = Array(repeating: [], count: senders) }
    func note(_ value: Int) {
      let sender = value / 1_000_000 - 1
      let index = value % 1_000_000
      if seen[sender].last != index { seen[sender].append(index) }
    }
    /// Each sender's values appear in order (`consecutive`: none skipped from their first
    /// appearance; in `zip` from 0), up to its last (`throughTheLast`).
    func problems(
      perSender: Int, fromZero: Bool, consecutive: Bool = true, throughTheLast: Bool = true
    ) -> [String] {
      seen.enumerated().compactMap { sender, indices in
        guard let first = indices.first else { return "sender \(sender): none" }
        if fromZero, first != 0 { return "sender \(sender): first \(first)" }
        let pairs = zip(indices, indices.dropFirst())
        if let back = pairs.first(where: { $1 <= $0 }) {
          return "sender \(sender): out of order (\(back.0) then \(back.1))"
        }
        if consecutive, let gap = pairs.first(where: { $1 != $0 + 1 }) {
          return "sender \(sender): skipped (\(gap.0) then \(gap.1), first \(first))"
        }
        guard throughTheLast, indices.last != perSender - 1 else { return nil }
        return "sender \(sender): last \(indices.last!)"
      }
    }
  }

  /// Four threads send into each side of a `zip` and of a `combineLatest`: each side's values
  /// come out in each sender's order (zip: every one, paired), serially.
  @Test("zip and combineLatest with four sending threads per side")
  func zipAndCombineLatest() async {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<Int, Never>()
    let senders = 8
    let perSender = max(200, stressScaled(16_000) / senders)
    let zipLeft = ComponentCheck(senders: senders)
    let zipRight = ComponentCheck(senders: senders)
    let latestLeft = ComponentCheck(senders: senders)
    let latestRight = ComponentCheck(senders: senders)
    let zipInside = Atomic<Bool>(false)
    let latestInside = Atomic<Bool>(false)
    let overlaps = Atomic<Int>(0)
    let zipped = Atomic<Int>(0)
    let zipSink = a.zip(b).sink { pair in
      if zipInside.exchange(true, ordering: .acquiring) { overlaps.add(1, ordering: .relaxed) }
      zipLeft.note(pair.0)
      zipRight.note(pair.1)
      zipped.add(1, ordering: .relaxed)
      zipInside.store(false, ordering: .releasing)
    }
    let latestPair = Mutex((-1, -1))
    let latestSink = a.combineLatest(b).sink { pair in
      if latestInside.exchange(true, ordering: .acquiring) { overlaps.add(1, ordering: .relaxed) }
      latestLeft.note(pair.0)
      latestRight.note(pair.1)
      latestPair.withLock { $0 = pair }
      latestInside.store(false, ordering: .releasing)
    }
    let worst = await Self.sendMetered(senders: senders, perSender: perSender) { sender, value in
      (sender % 2 == 0 ? a : b).send(value)
    }
    #expect(worst != nil, "every thread returned")
    #expect((worst ?? .max) <= DeliveryContext.allowancePerCall, "worst call \(worst ?? -1)")
    #expect(overlaps.load(ordering: .relaxed) == 0)
    #expect(zipped.load(ordering: .relaxed) == senders / 2 * perSender)
    // Zip: sender s's values are on one side only; the other side's record for it is empty.
    let zipProblems =
      zipLeft.problems(perSender: perSender, fromZero: true).filter { !$0.hasSuffix("none") }
      + zipRight.problems(perSender: perSender, fromZero: true).filter { !$0.hasSuffix("none") }
    #expect(zipProblems.isEmpty, "zip: \(zipProblems)")
    // combineLatest: each sender's values in order. A value can be skipped — even a sender's
    // last: one that arrives while another thread delivers is combined only if it is still its
    // side's newest when the deliverer gets to it ("Differences from Combine") — but the last
    // combination is of each side's newest value, the last value of the sender whose last
    // send came last.
    let latestProblems =
      latestLeft.problems(
        perSender: perSender, fromZero: false, consecutive: false, throughTheLast: false
      ).filter { !$0.hasSuffix("none") }
      + latestRight.problems(
        perSender: perSender, fromZero: false, consecutive: false, throughTheLast: false
      ).filter { !$0.hasSuffix("none") }
    #expect(latestProblems.isEmpty, "combineLatest: \(latestProblems)")
    let last = latestPair.withLock { $0 }
    #expect(
      last.0 % 1_000_000 == perSender - 1 && last.1 % 1_000_000 == perSender - 1,
      "the last combination \(last) is not of each side's newest value")
    withExtendedLifetime((zipSink, latestSink)) {}
  }

  // MARK: Completion and cancel from inside receive while others retry

  /// A subscriber completes the subject from inside its `receive`, on whichever sender's turn
  /// delivers the chosen value, while eight threads send (and retry): every subscriber receives
  /// the completion once and nothing after it, nothing sent after the completion returned is
  /// delivered, and every sender returns.
  @Test("a subscriber completes the subject from inside receive while eight threads send")
  func completeFromInsideReceive() async {
    let rounds = max(20, stressScaled(200))
    let afterCompletion = Atomic<Int>(0)
    let extraCompletions = Atomic<Int>(0)
    let missingCompletions = Atomic<Int>(0)
    let late = Atomic<Int>(0)
    let returned = await allReturn(threads: 1, deadline: .seconds(300)) { _ in
      for round in 0..<rounds {
        let subject = PassthroughSubject<Int, Never>()
        let completed = Atomic<Bool>(false)  // send(completion:) returned
        let trigger = 200 + round * 37 % 1_500
        final class Ends: Sendable {
          let completions = Atomic<Int>(0)
        }
        let ends = (0..<3).map { _ in Ends() }
        let count = Atomic<Int>(0)
        var cancellables: [AnyCancellable] = []
        for index in 0..<3 {
          let end = ends[index]
          cancellables.append(
            subject.sink(
              receiveCompletion: { _ in
                if end.completions.add(1, ordering: .relaxed).newValue > 1 {
                  extraCompletions.add(1, ordering: .relaxed)
                }
              },
              receiveValue: { value in
                if end.completions.load(ordering: .relaxed) > 0 {
                  afterCompletion.add(1, ordering: .relaxed)
                }
                if value < 0 { late.add(1, ordering: .relaxed) }
                if index == 1, count.add(1, ordering: .relaxed).newValue == trigger {
                  subject.send(completion: .finished)
                  completed.store(true, ordering: .sequentiallyConsistent)
                }
              }))
        }
        runConcurrently(8) { _ in
          for value in 0..<600 {
            subject.send(completed.load(ordering: .sequentiallyConsistent) ? -1 : value)
          }
        }
        if !completed.load(ordering: .relaxed) { subject.send(completion: .finished) }
        for end in ends where end.completions.load(ordering: .relaxed) != 1 {
          missingCompletions.add(1, ordering: .relaxed)
        }
        withExtendedLifetime(cancellables) {}
      }
    }
    #expect(returned, "every sender returned")
    #expect(afterCompletion.load(ordering: .relaxed) == 0, "values after completion")
    #expect(extraCompletions.load(ordering: .relaxed) == 0, "second completions")
    #expect(missingCompletions.load(ordering: .relaxed) == 0, "subscribers without completion")
    #expect(late.load(ordering: .relaxed) == 0, "values sent after completion returned")
  }

  /// A subscriber that keeps its subscription and cancels it from inside `receive`.
  final class SelfCancelling: Subscriber, @unchecked Sendable {
    // Safety: `subscription` is in a lock; the counters are atomic.
    typealias Input = Int
    typealias Failure = Never
    let storedSubscription = Lock<(any Subscription)?>(nil)
    var subscription: (any Subscription)? {
      get { storedSubscription.withLock { $0 } }
      set { storedSubscription.withLock { $0 = newValue } }
    }
    let after: Int
    let received = Atomic<Int>(0)
    let cancelled = Atomic<Bool>(false)
    let afterCancel: SharedCounter
    init(after: Int, afterCancel: SharedCounter) {
      self.after = after
      self.afterCancel = afterCancel
    }
    func receive(subscription: any Subscription) {
      self.subscription = subscription
      subscription.request(.unlimited)
    }
    func receive(_ input: Int) -> Subscribers.Demand {
      if cancelled.load(ordering: .acquiring) { afterCancel.value.add(1, ordering: .relaxed) }
      if received.add(1, ordering: .relaxed).newValue == after {
        cancelled.store(true, ordering: .releasing)
        subscription?.cancel()
        subscription = nil
      }
      return .none
    }
    func receive(completion: Subscribers.Completion<Never>) {}
    /// Cancels the subscription if the subscriber has not cancelled it itself (it attached
    /// too late to receive its values before the senders stopped): an attached subscription
    /// keeps the subject, and the subject it (LeakSanitizer).
    func cancelIfAttached() { storedSubscription.withLock { $0.take() }?.cancel() }
  }

  /// Eight threads send without pause; a ninth attaches subscribers that cancel themselves from
  /// inside `receive` after 1–5 values, and subscribes and cancels others from outside. A
  /// subscriber that cancelled itself inside a delivery has no delivery in progress anywhere
  /// else (they are serial), so it must receive nothing more; one cancelled from outside must
  /// receive nothing whose send began after `cancel()` returned.
  @Test("self-cancel inside receive and subscribe/cancel churn racing eight senders")
  func cancelChurn() async {
    let subject = PassthroughSubject<Int, Never>()
    let keep = subject.sink { _ in Self.spin(200) }
    let stop = Atomic<Bool>(false)
    let afterSelfCancel = SharedCounter()
    let offeredAfterCancel = Atomic<Int>(0)
    let cancels = Atomic<Int>(0)
    let rounds = max(200, stressScaled(3_000))
    let returned = await allReturn(threads: 9, deadline: .seconds(300)) { index in
      guard index == 8 else {
        while !stop.load(ordering: .relaxed) {
          subject.send(cancels.load(ordering: .sequentiallyConsistent))
        }
        return
      }
      var selfCancelling: [SelfCancelling] = []
      for round in 0..<rounds {
        let subscriber = SelfCancelling(after: 1 + round % 5, afterCancel: afterSelfCancel)
        subject.subscribe(subscriber)
        selfCancelling.append(subscriber)
        let outside = subject.sink { tag in
          if tag > round { offeredAfterCancel.add(1, ordering: .relaxed) }
        }
        for _ in 0..<10 { sched_yield() }
        outside.cancel()
        cancels.add(1, ordering: .sequentiallyConsistent)
      }
      stop.store(true, ordering: .relaxed)
      for subscriber in selfCancelling { subscriber.cancelIfAttached() }
    }
    #expect(returned, "every thread returned")
    #expect(afterSelfCancel.value.load(ordering: .relaxed) == 0, "received after cancelling itself")
    #expect(offeredAfterCancel.load(ordering: .relaxed) == 0, "sent after cancel() returned")
    withExtendedLifetime(keep) {}
  }

  // MARK: Processor time while blocked

  /// The processor time the calling thread has used.
  static func threadCPUNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
  }

  /// Sixteen threads send behind a `receive` that sleeps 2 ms per value (the turn is held,
  /// offering no grant, nearly all the time): the senders' processor time (their threads',
  /// summed; other tests may run in the process meanwhile) stays a small part of the wall time
  /// — each blocked send yields at most twice and then sleeps. Senders that spun while blocked
  /// would use both cores for the whole run.
  @Test("sixteen senders behind a sleeping receive use little processor time")
  func blockedSendersSleep() async {
    let subject = PassthroughSubject<Int, Never>()
    let delivered = Atomic<Int>(0)
    let sink = subject.sink { _ in
      delivered.add(1, ordering: .relaxed)
      usleep(2_000)
    }
    let senders = 16
    let perSender = 10
    let used = Atomic<Int>(0)
    let start = DispatchTime.now().uptimeNanoseconds
    let returned = await allReturn(threads: senders, deadline: .seconds(300)) { sender in
      let cpu = Self.threadCPUNanoseconds()
      for index in 0..<perSender { subject.send(Self.value(sender, index)) }
      let total = Self.threadCPUNanoseconds() - cpu
      used.add(Int(total), ordering: .relaxed)
    }
    let wallMs = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
    let cpuMs = Double(used.load(ordering: .relaxed)) / 1e6
    print(
      "BusyClaimRetryAttackTests: 16 blocked senders: \(cpuMs) ms processor time over \(wallMs) ms")
    #expect(returned)
    #expect(delivered.load(ordering: .relaxed) == senders * perSender)
    // The sleeps alone take 320 ms; spinning senders would use about twice the wall time.
    #expect(cpuMs < wallMs * 0.25, "\(cpuMs) ms of processor time over \(wallMs) ms")
    withExtendedLifetime(sink) {}
  }
}
