import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// Adversarial feedback shapes (issue 37): pipelines as apps build them, fed back into their own
/// sources from inside deliveries, with many threads, churn, cancels and completions racing.
/// Deadlines are only nets against hangs.
@Suite("Liveness, attacked: feedback shapes under load")
struct AdversarialFeedbackTests {
  typealias Tally = FeedbackTests.Tally

  static let count = max(1_000, stressScaled(5_000))
  static func value(_ sender: Int, _ index: Int) -> Int { (sender + 1) * 1_000_000 + index + 1 }
  static func fedBack(_ value: Int) -> Bool { value > 0 && value % 7 == 0 }
  static var fedBackPerSender: Int { (0..<count).count { fedBack(value(0, $0)) } }
  /// How many values of senders `0..<senders` are fed back.
  static func fedBackTotal(_ senders: Int) -> Int {
    (0..<senders).reduce(0) { sum, sender in sum + (0..<count).count { fedBack(value(sender, $0)) }
    }
  }

  /// Eight subjects merged through `Publishers.MergeMany` and chained `merge(with:)`, erased and
  /// shared with two subscribers that each feed back into a subject, eight sending threads.
  @Test("eight subjects, merged, shared, two sinks feeding back, eight threads")
  func eightSubjectsSharedFeedback() async {
    let subjects = (0..<8).map { _ in PassthroughSubject<Int, Never>() }
    let merged = subjects[0].merge(with: subjects[1], subjects[2])
      .merge(with: Publishers.MergeMany(subjects[3...].map { $0.eraseToAnyPublisher() }))
      .eraseToAnyPublisher()
      .share()
    let tallyA = Tally()
    let tallyB = Tally()
    let a = merged.sink { value in
      tallyA.record(value)
      if Self.fedBack(value) { subjects[abs(value) % 8].send(-value) }
    }
    let b = merged.sink { value in
      tallyB.record(value)
      if Self.fedBack(value) { subjects[(abs(value) / 7) % 8].send(-(value + 1)) }
    }
    let returned = await allReturn(threads: 8, deadline: .seconds(600)) { sender in
      for index in 0..<Self.count { subjects[sender].send(Self.value(sender, index)) }
    }
    #expect(returned, "every sender returned (no deadlock)")
    let stateA = tallyA.snapshot
    let stateB = tallyB.snapshot
    #expect(stateA.positive == 8 * Self.count)
    #expect(stateB.positive == 8 * Self.count)
    #expect(stateA.negative == 2 * Self.fedBackTotal(8))
    #expect(stateB.negative == 2 * Self.fedBackTotal(8))
    #expect(stateA.outOfOrder == 0)
    #expect(stateB.outOfOrder == 0)
    withExtendedLifetime((a, b)) {}
  }

  /// Subscribe/cancel churn on the subjects of a feedback merge while four threads send, and
  /// cancels of subscribers whose closures send into the subjects as they are released.
  @Test("feedback through merge while two threads churn subscribe/cancel")
  func feedbackWithChurn() async {
    let subjects = (0..<4).map { _ in PassthroughSubject<Int, Never>() }
    let tally = Tally()
    let merged = subjects[0].merge(with: subjects[1], subjects[2], subjects[3])
    let sink = merged.sink { value in
      tally.record(value)
      if Self.fedBack(value) { subjects[abs(value) % 4].send(-value) }
    }
    final class SendsOnDeinit: @unchecked Sendable {
      let subject: PassthroughSubject<Int, Never>
      init(_ subject: PassthroughSubject<Int, Never>) { self.subject = subject }
      deinit { subject.send(-1) }
    }
    let stop = Atomic<Bool>(false)
    let churned = Atomic<Int>(0)
    let returned = await allReturn(threads: 6, deadline: .seconds(600)) { index in
      if index >= 4 {
        var round = 0
        while !stop.load(ordering: .relaxed) {
          round += 1
          let target = subjects[(round + index) % 4]
          let token = SendsOnDeinit(subjects[(round + index + 1) % 4])
          let cancellable = target.sink { value in
            withExtendedLifetime(token) {}
            if value == Self.value(0, 70) { subjects[2].send(-3) }
          }
          if round % 3 == 0 { target.send(-2) }
          cancellable.cancel()
          churned.add(1, ordering: .relaxed)
        }
        return
      }
      for i in 0..<Self.count { subjects[index].send(Self.value(index, i)) }
      if index == 0 {
        // The other senders may still be going; the churners stop when sender 0 is done.
        stop.store(true, ordering: .relaxed)
      }
    }
    #expect(returned, "every thread returned (no deadlock)")
    let state = tally.snapshot
    #expect(state.positive == 4 * Self.count)
    #expect(state.outOfOrder == 0)
    print("liveness: churn: \(churned.load(ordering: .relaxed)) subscribe/cancel rounds")
    withExtendedLifetime(sink) {}
  }

  /// flatMap with a limit on concurrent children, children that feed the outer publisher (new
  /// children from inside a delivery) and each other, four threads.
  @Test("flatMap(maxPublishers: 2) and switchToLatest with children feeding back")
  func flatMapLimitedAndSwitch() async {
    let outer = PassthroughSubject<AnyPublisher<Int, Never>, Never>()
    let children = (0..<2).map { _ in PassthroughSubject<Int, Never>() }
    let tally = Tally()
    let sink = outer.flatMap(maxPublishers: .max(2)) { $0 }.sink { value in
      tally.record(value)
      guard Self.fedBack(value) else { return }
      // Queued by the outer (the two slots are taken by the long-lived children).
      outer.send(Just(-value).eraseToAnyPublisher())
      children[abs(value) % 2].send(-value)
    }
    for child in children { outer.send(child.eraseToAnyPublisher()) }

    let switching = PassthroughSubject<AnyPublisher<Int, Never>, Never>()
    let sources = (0..<2).map { _ in PassthroughSubject<Int, Never>() }
    let switched = Atomic<Int>(0)
    let switchSink = switching.switchToLatest().sink { value in
      switched.add(1, ordering: .relaxed)
      guard Self.fedBack(value) else { return }
      switching.send(sources[abs(value) % 2].eraseToAnyPublisher())
      sources[(abs(value) + 1) % 2].send(-value)
    }
    switching.send(sources[0].eraseToAnyPublisher())

    let returned = await allReturn(threads: 4, deadline: .seconds(600)) { index in
      if index < 2 {
        for i in 0..<Self.count { children[index].send(Self.value(index, i)) }
      } else {
        for i in 0..<Self.count { sources[index - 2].send(Self.value(index, i)) }
      }
    }
    #expect(returned, "every sender returned (no deadlock)")
    let state = tally.snapshot
    #expect(state.positive == 2 * Self.count)
    // The Justs are dropped: the outer is a PassthroughSubject whose two requested slots are
    // taken by the long-lived children (as in Combine); the children's feedback arrives.
    #expect(state.negative == Self.fedBackTotal(2))
    #expect(state.outOfOrder == 0)
    #expect(switched.load(ordering: .relaxed) > 0)
    withExtendedLifetime((sink, switchSink)) {}
  }

  /// combineLatest of CurrentValueSubjects and zip, each sink feeding back into the other's
  /// upstreams, one thread per subject (four).
  @Test("combineLatest and zip cross-feeding, four threads")
  func crossFedFanIn() async {
    let a = CurrentValueSubject<Int, Never>(0)
    let b = CurrentValueSubject<Int, Never>(0)
    let c = PassthroughSubject<Int, Never>()
    let d = PassthroughSubject<Int, Never>()
    let latest = Atomic<Int>(0)
    let zipped = Atomic<Int>(0)
    let zipOrder = Mutex<(Int, Int, Int)>((0, 0, 0))
    let s1 = a.combineLatest(b).sink { x, y in
      latest.add(1, ordering: .relaxed)
      if x > 0, Self.fedBack(x) { c.send(-x) }
      if y > 0, Self.fedBack(y) { d.send(-y) }
    }
    let s2 = c.zip(d).sink { x, y in
      zipped.add(1, ordering: .relaxed)
      if x > 0, Self.fedBack(x) { b.send(-x) }
      if y > 0, Self.fedBack(y) { a.send(-y) }
      zipOrder.withLock { state in
        if x > 0 {
          if x <= state.0 { state.2 += 1 }
          state.0 = x
        }
        if y > 0 {
          if y <= state.1 { state.2 += 1 }
          state.1 = y
        }
      }
    }
    let subjects: [(Int) -> Void] = [
      { a.send($0) }, { b.send($0) }, { c.send($0) }, { d.send($0) },
    ]
    let shared = UncheckedSendable(subjects)
    let returned = await allReturn(threads: 4, deadline: .seconds(600)) { index in
      for i in 0..<Self.count { shared.value[index](Self.value(index, i)) }
    }
    #expect(returned, "every sender returned (no deadlock)")
    #expect(latest.load(ordering: .relaxed) > 0)
    #expect(zipOrder.withLock { $0.2 } == 0, "zip kept each side's order")
    withExtendedLifetime((s1, s2)) {}
  }

  /// receive(on: ImmediateScheduler), delay on ImmediateScheduler and a merge, with a
  /// subscriber of limited demand fed `request(.max(1))` from a consumer thread, and feedback.
  @Test("immediate receive(on:) + delay + merge, limited demand from another thread, feedback")
  func limitedDemandFeedback() async {
    final class Consumer: Subscriber, @unchecked Sendable {
      typealias Input = Int
      typealias Failure = Never
      let subscription = SharedBox<(any Subscription)?>(nil)
      let requested = Atomic<Int>(0)
      let received = Atomic<Int>(0)
      let overflow = Atomic<Int>(0)
      let concurrent = Atomic<Int>(0)
      let overlapped = Atomic<Int>(0)
      let feedback: (Int) -> Void
      init(feedback: @escaping (Int) -> Void) { self.feedback = feedback }
      func receive(subscription: any Subscription) {
        self.subscription.withLock { $0 = subscription }
      }
      func receive(_ input: Int) -> Subscribers.Demand {
        if concurrent.add(1, ordering: .relaxed).newValue > 1 {
          overlapped.add(1, ordering: .relaxed)
        }
        let got = received.add(1, ordering: .relaxed).newValue
        if got > requested.load(ordering: .relaxed) { overflow.add(1, ordering: .relaxed) }
        feedback(input)
        concurrent.subtract(1, ordering: .relaxed)
        return .none
      }
      func receive(completion: Subscribers.Completion<Never>) {}
    }
    let s1 = PassthroughSubject<Int, Never>()
    let s2 = PassthroughSubject<Int, Never>()
    let consumer = Consumer { value in if Self.fedBack(value) { s2.send(-value) } }
    s1.merge(with: s2)
      .receive(on: ImmediateScheduler.shared)
      .delay(for: .zero, scheduler: ImmediateScheduler.shared)
      .subscribe(consumer)
    let stop = Atomic<Bool>(false)
    let returned = await allReturn(threads: 3, deadline: .seconds(600)) { index in
      if index == 2 {
        while !stop.load(ordering: .relaxed) {
          // One at a time, once the previous one has arrived (a consumer's pace).
          while consumer.received.load(ordering: .relaxed)
            < consumer.requested.load(ordering: .relaxed), !stop.load(ordering: .relaxed)
          {
            sched_yield()
          }
          consumer.requested.add(1, ordering: .relaxed)
          consumer.subscription.withLock { $0 }?.request(.max(1))
        }
        return
      }
      for i in 0..<Self.count { (index == 0 ? s1 : s2).send(Self.value(index, i)) }
      if index == 0 {
        usleep(10_000)
        stop.store(true, ordering: .relaxed)
      }
    }
    #expect(returned, "every thread returned (no deadlock)")
    #expect(consumer.overflow.load(ordering: .relaxed) == 0, "never more than demanded")
    #expect(consumer.overlapped.load(ordering: .relaxed) == 0, "serial signals")
    #expect(consumer.received.load(ordering: .relaxed) > 0)
    consumer.subscription.withLock { $0 }?.cancel()
  }

  /// Completion racing sends in feedback: two subjects forwarding to each other, each sink
  /// completes the other subject at some value (from inside its delivery), other threads keep
  /// sending. Nothing after completion, one completion per subscriber, no hang.
  @Test("completion sent from inside a delivery while threads send into a feedback pair")
  func completionRacingFeedback() async {
    for round in 0..<20 {
      let a = PassthroughSubject<Int, Never>()
      let b = PassthroughSubject<Int, Never>()
      struct Log {
        var completions = 0
        var afterCompletion = 0
      }
      let logA = SharedBox(Log())
      let logB = SharedBox(Log())
      let endAt = 200 + round * 37
      let sinkA = a.sink(
        receiveCompletion: { _ in logA.withLock { $0.completions += 1 } },
        receiveValue: { value in
          logA.withLock { if $0.completions > 0 { $0.afterCompletion += 1 } }
          if Self.fedBack(value) { b.send(-value) }
          if value == Self.value(0, endAt) {
            b.send(completion: .finished)
            a.send(completion: .finished)
          }
        })
      let sinkB = b.sink(
        receiveCompletion: { _ in logB.withLock { $0.completions += 1 } },
        receiveValue: { value in
          logB.withLock { if $0.completions > 0 { $0.afterCompletion += 1 } }
          if Self.fedBack(value) { a.send(-value) }
        })
      let returned = await allReturn(threads: 4, deadline: .seconds(600)) { index in
        let subject = index % 2 == 0 ? a : b
        for i in 0..<1_000 { subject.send(Self.value(index, i)) }
      }
      #expect(returned, "round \(round): every sender returned (no deadlock)")
      for log in [logA, logB] {
        let state = log.withLock { $0 }
        #expect(state.completions == 1, "round \(round)")
        #expect(state.afterCompletion == 0, "round \(round)")
      }
      withExtendedLifetime((sinkA, sinkB)) {}
      if !returned { break }
    }
  }

  /// A subscriber whose `receive(subscription:)` sends into the subject it subscribes to (and
  /// into a second one that feeds the first), attached from inside deliveries and from other
  /// threads while four threads send.
  @Test("send from inside receive(subscription:) while attaching during deliveries")
  func sendFromReceiveSubscription() async {
    final class Greeter: Subscriber, @unchecked Sendable {
      typealias Input = Int
      typealias Failure = Never
      let greet: () -> Void
      /// The subscription, or `nil` with `cancelled` once `cancel()` ran: a greeter cancelled
      /// before its subscription arrives cancels it on arrival (its closure holds the subjects,
      /// and the subject holds it: left attached, the pair is a cycle the leak checker reports).
      let subscription = SharedBox<(subscription: (any Subscription)?, cancelled: Bool)>(
        (nil, false))
      init(greet: @escaping () -> Void) { self.greet = greet }
      func receive(subscription: any Subscription) {
        let cancelled = self.subscription.withLock { state in
          if !state.cancelled { state.subscription = subscription }
          return state.cancelled
        }
        if cancelled {
          subscription.cancel()
          return
        }
        greet()
        subscription.request(.max(3))
      }
      func receive(_ input: Int) -> Subscribers.Demand { .none }
      func receive(completion: Subscribers.Completion<Never>) {}
      func cancel() {
        self.subscription.withLock { state in
          defer { state = (nil, true) }
          return state.subscription
        }?.cancel()
      }
    }
    let a = PassthroughSubject<Int, Never>()
    let b = CurrentValueSubject<Int, Never>(0)
    let attached = Mutex<[Greeter]>([])
    let tally = Tally()
    let sink = a.merge(with: b.dropFirst()).sink { value in
      tally.record(value)
      guard Self.fedBack(value) else { return }
      let greeter = Greeter {
        a.send(-1); b.send(-2)
      }
      a.subscribe(greeter)
      attached.withLock { $0.append(greeter) }
    }
    let sendersDone = Atomic<Int>(0)
    let returned = await allReturn(threads: 5, deadline: .seconds(600)) { index in
      if index == 4 {
        while sendersDone.load(ordering: .relaxed) < 4 {
          let greeter = Greeter {
            b.send(-4); a.send(-5)
          }
          b.subscribe(greeter)
          greeter.cancel()
          for old in attached.withLock({ list in
            defer { list.removeAll() }; return list
          }) {
            old.cancel()
          }
        }
        return
      }
      for i in 0..<Self.count {
        if index % 2 == 0 { a.send(Self.value(index, i)) } else { b.send(Self.value(index, i)) }
      }
      sendersDone.add(1, ordering: .relaxed)
    }
    #expect(returned, "every thread returned (no deadlock)")
    // The greeters attached after the canceller's last sweep.
    for greeter in attached.withLock({ list in
      defer { list.removeAll() }; return list
    }) {
      greeter.cancel()
    }
    let state = tally.snapshot
    #expect(state.positive == 4 * Self.count)
    #expect(state.outOfOrder == 0)
    withExtendedLifetime(sink) {}
  }

  /// Sixteen threads on two cores: eight subjects merged, the sink feeds back; a second
  /// pipeline whose cancel handler sends into the subjects is cancelled and re-subscribed from
  /// inside its own deliveries and from another thread.
  @Test("sixteen threads, feedback, cancel handlers that send, re-subscribing from inside")
  func sixteenThreadsCancelHandlers() async {
    let subjects = (0..<8).map { _ in PassthroughSubject<Int, Never>() }
    let merged = Publishers.MergeMany(subjects).eraseToAnyPublisher()
    let tally = Tally()
    let sink = merged.sink { value in
      tally.record(value)
      if Self.fedBack(value) { subjects[abs(value) % 8].send(-value) }
    }
    let current = SharedBox<AnyCancellable?>(nil)
    let mergedBox = UncheckedSendable(merged)
    let resubscribed = Atomic<Int>(0)
    @Sendable func subscribe() {
      let cancellable = mergedBox.value
        .handleEvents(receiveCancel: { subjects[3].send(-7) })
        .sink { value in
          if value > 0, value % 101 == 0 {
            // Re-subscribe from inside this delivery: the old one's cancel handler sends.
            resubscribed.add(1, ordering: .relaxed)
            let old = current.withLock { $0.take() }
            old?.cancel()
            subscribe()
          }
        }
      let previous = current.withLock { box in
        defer { box = cancellable }
        return box
      }
      previous?.cancel()
    }
    subscribe()
    let perSender = Self.count / 4
    let returned = await allReturn(threads: 16, deadline: .seconds(600)) { index in
      if index >= 8 {
        for i in 0..<perSender {
          subjects[index - 8].send(Self.value(index, i))
          if index == 15, i % 50 == 0 { subscribe() }
        }
        return
      }
      for i in 0..<perSender { subjects[index].send(Self.value(index, i)) }
    }
    #expect(returned, "every sender returned (no deadlock)")
    let state = tally.snapshot
    #expect(state.positive == 16 * perSender)
    #expect(state.outOfOrder == 0)
    print(
      "liveness: sixteen: re-subscribed \(resubscribed.load(ordering: .relaxed)) times from inside")
    current.withLock { $0 }?.cancel()
    withExtendedLifetime(sink) {}
  }

  /// cancel() racing sends in a feedback ring: three subjects forwarding around, each sink
  /// cancelled from another thread mid-flight. A value whose `send` began after `cancel()`
  /// returned (marked) must never reach the cancelled sink; a value in flight may.
  @Test("cancel racing sends in a ring of three subjects")
  func cancelRacingRing() async {
    let marker = 500_000
    var totalLate = 0
    var totalInFlight = 0
    for round in 0..<10 {
      let subjects = (0..<3).map { _ in PassthroughSubject<Int, Never>() }
      let cancelled = (0..<3).map { _ in SharedCounter() }
      let late = Atomic<Int>(0)
      let inFlight = Atomic<Int>(0)
      let concurrent = (0..<3).map { _ in SharedCounter() }
      let overlapped = Atomic<Int>(0)
      let sinks = (0..<3).map { index in
        subjects[index].sink { value in
          if concurrent[index].value.add(1, ordering: .relaxed).newValue > 1 {
            overlapped.add(1, ordering: .relaxed)
          }
          if value > 0, value % 1_000_000 > marker {
            late.add(1, ordering: .relaxed)
          } else if cancelled[index].value.load(ordering: .acquiring) != 0 {
            inFlight.add(1, ordering: .relaxed)
          }
          if value > 0, Self.fedBack(value) {
            subjects[(index + 1) % 3].send(-value)
          }
          concurrent[index].value.subtract(1, ordering: .relaxed)
        }
      }
      let box = UncheckedSendable(sinks)
      let returned = await allReturn(threads: 4, deadline: .seconds(600)) { index in
        if index == 3 {
          usleep(UInt32(500 + round * 300))
          for i in 0..<3 {
            box.value[i].cancel()
            cancelled[i].value.store(1, ordering: .releasing)
          }
          return
        }
        for i in 0..<2_000 {
          let after = cancelled[index].value.load(ordering: .acquiring) != 0
          subjects[index].send(Self.value(index, i) + (after ? marker : 0))
        }
      }
      #expect(returned, "round \(round): no deadlock")
      #expect(overlapped.load(ordering: .relaxed) == 0, "round \(round): serial")
      totalLate += late.load(ordering: .relaxed)
      totalInFlight += inFlight.load(ordering: .relaxed)
      if !returned { break }
    }
    print(
      "liveness: cancelRacingRing: \(totalLate) sent after cancel() returned and received, "
        + "\(totalInFlight) received after cancel() returned that were sent before")
    #expect(totalLate == 0, "nothing sent after cancel() returned is received")
  }
}

/// A counter that can live in an array.
final class SharedCounter: Sendable {
  let value = Atomic<Int>(0)
}

/// A mutex-guarded value that can live in an array.
final class SharedBox<T>: @unchecked Sendable {
  // Safety: `value` only under `lock`.
  private let lock = NSLock()
  private var value: T
  init(_ value: T) { self.value = value }
  func withLock<R>(_ body: (inout T) -> R) -> R { lock.withLock { body(&value) } }
}
