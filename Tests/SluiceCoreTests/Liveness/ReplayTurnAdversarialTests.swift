import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// Adversarial checks of 93e7678 (issue 37): a `CurrentValueSubject` / `@Published` replay runs
/// at once on the requesting thread behind a turn waiter (``SubjectCore/withReplayTurn(_:)``).
/// Claimed: synchronous, never blocks, no deadlock in feedback, senders paced by a slow replay
/// (values queued for it bounded by about one turn's batch), every call delivers at most
/// ``DeliveryContext/allowancePerCall`` values of other threads.
@Suite("Replay behind a turn waiter, attacked (adv37c)", .onThreadsOfTheirOwn)
struct ReplayTurnAdversarialTests {
  typealias Probe = RequestTurnAttackTests.Probe
  static var stride: Int { SenderCoded.stride }
  static let actRounds = Int(ProcessInfo.processInfo.environment["ADV37C_ROUNDS"] ?? "") ?? 300

  /// Whether each sender's values (tagged `sender * stride + i`) arrive in order, none twice.
  static func inSendersOrder(_ values: [Int]) -> Bool {
    RequestTurnAttackTests.inSendersOrder(values)
  }

  static func spinUntil(_ deadlineSeconds: Double, _ condition: () -> Bool) -> Bool {
    let end = DispatchTime.now().uptimeNanoseconds + UInt64(deadlineSeconds * 1e9)
    while !condition() {
      if DispatchTime.now().uptimeNanoseconds > end { return false }
      usleep(100)
    }
    return true
  }

  /// A subscriber that requests only when the test says so, and counts what reaches it on the
  /// requesting thread while that thread is inside its `request` call.
  final class SlowReplaySubscriber: Subscriber, @unchecked Sendable {
    // Safety: `subscription` and `values` under `lock`; the rest atomics or set in `init`.
    typealias Input = Int
    typealias Failure = Never
    let combineIdentifier = CombineIdentifier()
    private let lock = NSLock()
    private var storedSubscription: (any Subscription)?
    private var storedValues: [Int] = []
    /// The thread inside `request` (its `pthread_self`, as a number), or 0.
    let requestingThread = Atomic<UInt>(0)
    let deliveredInsideRequest = Atomic<Int>(0)
    let onFirst: @Sendable () -> Void
    /// Values the requesting thread sent itself (from inside a delivery it made): its own
    /// work, not counted in ``deliveredInsideRequest``.
    let isOwn: @Sendable (Int) -> Bool
    let isFirst = Atomic<Bool>(true)

    init(
      isOwn: @escaping @Sendable (Int) -> Bool = { _ in false },
      onFirst: @escaping @Sendable () -> Void
    ) {
      self.isOwn = isOwn
      self.onFirst = onFirst
    }

    var values: [Int] { lock.withLock { storedValues } }

    func receive(subscription: any Subscription) {
      lock.withLock { storedSubscription = subscription }
    }

    /// Requests `demand` from this thread, counting what reaches it inside the call.
    func request(_ demand: Subscribers.Demand) {
      requestingThread.store(UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .relaxed)
      lock.withLock { storedSubscription }?.request(demand)
      requestingThread.store(0, ordering: .relaxed)
    }

    func receive(_ input: Int) -> Subscribers.Demand {
      if requestingThread.load(ordering: .relaxed)
        == UInt(bitPattern: Int(bitPattern: pthread_self())), !isOwn(input)
      {
        deliveredInsideRequest.add(1, ordering: .relaxed)
      }
      lock.withLock { storedValues.append(input) }
      if isFirst.exchange(false, ordering: .relaxed) { onFirst() }
      return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {}

    func lockedCancel() { lock.withLock { storedSubscription }?.cancel() }
  }

  /// Attaches `rounds` subscribers one after another, each with a 2 ms replay, and keeps in
  /// `worst` the most values of other threads one of them received inside its request call
  /// (values tagged 8 are the attaching thread's own: see `slowReplaysWhileASinkSendsBursts`).
  static func attachSlowReplays(
    to subject: CurrentValueSubject<Int, Never>, rounds: Int, worst: borrowing Atomic<Int>
  ) {
    for _ in 0..<rounds {
      let probe = SlowReplaySubscriber(isOwn: { $0 / Self.stride == 8 }) { usleep(2_000) }
      subject.subscribe(probe)
      probe.request(.unlimited)
      let inCall = probe.deliveredInsideRequest.load(ordering: .relaxed) - 1
      worst.max(inCall, ordering: .relaxed)
      probe.lockedCancel()
    }
  }

  // MARK: 1. Per-call bound and queue bound

  /// Another thread's turn has values queued behind its delivery (a sink that sends a burst
  /// into the same subject from inside `receive` — queued, as the README says) when a
  /// subscriber requests its replay. The replay runs without the turn (the other thread holds
  /// it); the holder delivers the whole burst to the new subscriber before it reaches the
  /// replay's waiter, so the burst queues in the conduit. The *request call* delivers the
  /// replay and at most its allowance of the burst (64 values of others) and hands the rest
  /// back to the holder, which waits at the replay's waiter and then delivers it.
  @Test("a slow replay's request call hands a burst queued ahead of its waiter back to its holder")
  func replayDrainsABurstQueuedAheadOfItsWaiter() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let burst = 1_000
    let dReceived = Atomic<Int>(0)
    let dBlocked = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    let waitedOut = Atomic<Bool>(false)
    // Attached first (no demand yet): offered value 1 while owed, so its replay is 1.
    let probe = SlowReplaySubscriber {
      go.signal()
      // A slow first `receive`: it returns once the holder has delivered the burst.
      if !Self.spinUntil(20, { dReceived.load(ordering: .relaxed) >= burst + 1 }) {
        waitedOut.store(true, ordering: .relaxed)
      }
    }
    subject.subscribe(probe)
    let d = subject.sink { value in
      dReceived.add(1, ordering: .relaxed)
      guard value == 1 else { return }
      for k in 2...(burst + 1) { subject.send(k) }  // queued behind this delivery
      dBlocked.signal()
      _ = go.wait(timeout: .now() + 20)
    }
    let returned = await allReturn(threads: 2, deadline: .seconds(120)) { index in
      if index == 0 {
        subject.send(1)
        return
      }
      dBlocked.wait()
      probe.request(.unlimited)
    }
    #expect(returned, "every call returned")
    let didWaitOut = waitedOut.load(ordering: .relaxed)
    #expect(!didWaitOut)
    let values = probe.values
    #expect(values == Array(1...(burst + 1)), "replay then the burst, in order")
    let inCall = probe.deliveredInsideRequest.load(ordering: .relaxed) - 1  // minus the replay
    print(
      "adv37c: replayDrainsABurst: the request call delivered \(inCall) values of another "
        + "thread (bound \(DeliveryContext.allowancePerCall))")
    #expect(
      inCall <= DeliveryContext.allowancePerCall,
      "one request call delivered \(inCall) values of another thread")
    probe.lockedCancel()  // a live subscription and its subscriber keep each other
    withExtendedLifetime(d) {}
  }

  /// The same shape as apps write it, without any blocking: one thread sends; a sink on the
  /// subject answers some values with a burst of follow-ups sent from inside its `receive`;
  /// another thread keeps attaching subscribers whose first `receive` (the replay) takes 2 ms,
  /// and measures what its `subscribe` call delivered of the sender's values.
  @Test("slow replays while a sink answers values with bursts: worst subscribe call")
  func slowReplaysWhileASinkSendsBursts() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let burst = 200
    let done = Atomic<Bool>(false)
    let worst = Atomic<Int>(0)
    let attacher = Atomic<UInt>(0)
    let feeder = subject.sink { value in
      // Values of sender 0 ending in 000 set off a burst of follow-ups: tag 9 if sent by the
      // sending thread, 8 if by the attaching thread (a delivery it made: its own values).
      guard value / Self.stride == 1, value % 1_000 == 0 else { return }
      let thread = UInt(bitPattern: Int(bitPattern: pthread_self()))
      let tag = attacher.load(ordering: .relaxed) == thread ? 8 : 9
      // (value % stride) / 1,000 < 1,000 and k < 1,000: the tag stays in its own million.
      let base = tag * Self.stride + (value % Self.stride) / 1_000 * 1_000
      for k in 0..<burst { subject.send(base + k) }
    }
    let returned = await allReturn(threads: 2, deadline: .seconds(300)) { index in
      if index == 0 {
        var i = 0
        while !done.load(ordering: .relaxed) {
          subject.send(1 * Self.stride + i)
          i += 1
        }
        return
      }
      defer { done.store(true, ordering: .relaxed) }
      attacher.store(UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .relaxed)
      Self.attachSlowReplays(to: subject, rounds: max(50, stressScaled(200)), worst: worst)
    }
    #expect(returned, "every call returned")
    let measured = worst.load(ordering: .relaxed)
    print(
      "adv37c: slowReplaysWhileASinkSendsBursts: worst subscribe+request call delivered "
        + "\(measured) values of another thread (bound \(DeliveryContext.allowancePerCall))")
    #expect(measured <= DeliveryContext.allowancePerCall, "worst request call: \(measured)")
    withExtendedLifetime(feeder) {}
  }

  /// No bursts: four threads send plain values (a second subscriber takes ~5 µs a value, so a
  /// turn is busy as in an app) while a fifth keeps attaching subscribers whose replay takes
  /// 2 ms. What reaches the new subscriber inside its request call, of the senders' values:
  /// the holder's batch ahead of the waiter (grants and waiting senders' values, drained by
  /// the replay without counting against the call's allowance) plus the allowance of the turn
  /// the call then takes.
  @Test("slow replays while four threads send: worst request call, no bursts")
  func slowReplaysWhileFourThreadsSend() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let busy = subject.sink { _ in
      let end = DispatchTime.now().uptimeNanoseconds + 5_000
      while DispatchTime.now().uptimeNanoseconds < end {}
    }
    let done = Atomic<Bool>(false)
    let worst = Atomic<Int>(0)
    let returned = await allReturn(threads: 5, deadline: .seconds(300)) { index in
      if index < 4 {
        var i = 0
        while !done.load(ordering: .relaxed) {
          subject.send((index + 1) * Self.stride + i)
          i += 1
        }
        return
      }
      defer { done.store(true, ordering: .relaxed) }
      Self.attachSlowReplays(to: subject, rounds: max(75, stressScaled(300)), worst: worst)
    }
    #expect(returned, "every call returned")
    let measured = worst.load(ordering: .relaxed)
    print(
      "adv37c: slowReplaysWhileFourThreadsSend: worst request call delivered \(measured) "
        + "values of others to the new subscriber (bound \(DeliveryContext.allowancePerCall))")
    #expect(measured <= DeliveryContext.allowancePerCall, "worst request call: \(measured)")
    withExtendedLifetime(busy) {}
  }

  // MARK: 2. The blocking-subscriber rule

  /// The README's rule: a subscriber that blocks until another thread's `send` returns
  /// deadlocks exactly when that send finds no grant — after other threads' sends used them
  /// up, another *sender* waits, or the turn is the third of its call. Here none of those
  /// holds: one other thread (the holder) is delivering one value with all its 32 grants
  /// unused, and one third thread sends one value. But a replay's waiter is queued, so the one
  /// send must wait (`waitersQueued > 0`), the holder waits at the replay's waiter, and the
  /// replay's thread is blocked in its replay waiting for the send: a deadlock that only the
  /// subscriber's timeout (1 s) breaks. Pinned as documented: the rule for blocking subscribers
  /// ("Differences from Combine") lists a replay in progress on another thread among the cases
  /// where a send finds no grant.
  @Test("a replay that waits for one other thread's send, the turn's grants unused")
  func replayWaitingForOneSendWithGrantsUnused() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let entered = DispatchSemaphore(value: 0)
    let replayStarted = DispatchSemaphore(value: 0)
    let sendNow = DispatchSemaphore(value: 0)
    let sendReturned = DispatchSemaphore(value: 0)
    let sawReturn = Mutex<Bool?>(nil)
    let holderSink = subject.sink { value in
      guard value == 1 else { return }
      entered.signal()
      _ = replayStarted.wait(timeout: .now() + 10)
      usleep(20_000)  // a little more work after the replay began
    }
    let holder = SharedBox<AnyCancellable?>(nil)
    let returned = await allReturn(threads: 3, deadline: .seconds(120)) { index in
      switch index {
      case 0:
        subject.send(1)
      case 1:
        entered.wait()
        let first = Atomic<Bool>(true)
        let cancellable = subject.sink { _ in
          guard first.exchange(false, ordering: .relaxed) else { return }
          replayStarted.signal()
          sendNow.signal()
          let got = sendReturned.wait(timeout: .now() + 1) == .success
          sawReturn.withLock { $0 = got }
        }
        holder.withLock { $0 = cancellable }
      default:
        sendNow.wait()
        subject.send(2)  // outside any delivery; the holder has 32 unused grants
        sendReturned.signal()
      }
    }
    #expect(returned)
    #expect(
      sawReturn.withLock { $0 } == false,
      "documented: a replay's waiter makes a send outside any delivery wait for the turn")
    withExtendedLifetime((holderSink, holder)) {}
  }

  /// The rule's other replay case: the replay's `receive` blocks until the *holder's* send
  /// returns. The holder's turn reaches the replay's waiter and waits there for the replay (so
  /// that nothing more is offered to the replaying subscriber meanwhile): a deadlock that only
  /// the subscriber's timeout (1 s) breaks — where Combine's send, which never meets the new
  /// subscriber, would return. Pinned as documented ("Differences from Combine": a replay in
  /// progress makes the turn in progress wait for it).
  @Test("a replay that waits for the send of the thread whose turn is in progress")
  func replayWaitingForTheHoldersSend() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let entered = DispatchSemaphore(value: 0)
    let replayStarted = DispatchSemaphore(value: 0)
    let holderReturned = DispatchSemaphore(value: 0)
    let sawReturn = Mutex<Bool?>(nil)
    let holderSink = subject.sink { value in
      guard value == 1 else { return }
      entered.signal()
      _ = replayStarted.wait(timeout: .now() + 10)
    }
    let holder = SharedBox<AnyCancellable?>(nil)
    let returned = await allReturn(threads: 2, deadline: .seconds(120)) { index in
      if index == 0 {
        subject.send(1)
        holderReturned.signal()
        return
      }
      entered.wait()
      let first = Atomic<Bool>(true)
      let cancellable = subject.sink { _ in
        guard first.exchange(false, ordering: .relaxed) else { return }
        replayStarted.signal()
        let got = holderReturned.wait(timeout: .now() + 1) == .success
        sawReturn.withLock { $0 = got }
      }
      holder.withLock { $0 = cancellable }
    }
    #expect(returned)
    #expect(
      sawReturn.withLock { $0 } == false,
      "documented: the turn in progress waits for a replay that began during it")
    withExtendedLifetime((holderSink, holder)) {}
  }

  // MARK: 3. Ordering and loss under churn

  /// Four threads set a `@Published`-like `CurrentValueSubject` without pause; four "views"
  /// keep attaching (a slow first `receive`, 0–1 ms), and two per thread stay until the senders
  /// are done. For those: the replay first, each sender's values in order, none twice, and
  /// nothing lost after the first value of a sender that it saw (demand is unlimited).
  @Test("views attaching with slow replays while four threads send: order, no loss")
  func viewsAttachingWhileFourThreadsSend() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let senders = 4
    let perSender = max(2_000, stressScaled(20_000))
    let kept = SharedBox<[(AnyCancellable, SharedBox<[Int]>)]>([])
    let sendersDone = Atomic<Int>(0)
    let bad = SharedBox<[String]>([])
    let returned = await allReturn(threads: senders + 4, deadline: .seconds(600)) { index in
      if index < senders {
        for i in 0..<perSender { subject.send((index + 1) * Self.stride + i) }
        sendersDone.add(1, ordering: .relaxed)
        return
      }
      var round = 0
      var keptHere = 0
      while sendersDone.load(ordering: .relaxed) < senders, round < 400 {
        round += 1
        let received = SharedBox<[Int]>([])
        let first = Atomic<Bool>(true)
        let cancellable = subject.sink { value in
          received.withLock { $0.append(value) }
          if first.exchange(false, ordering: .relaxed) { usleep(UInt32(round % 3) * 500) }
        }
        if received.withLock({ $0.isEmpty }) {
          bad.withLock { $0.append("no replay inside sink()") }
        }
        if round % 2 == 0 {
          cancellable.cancel()
          if !Self.inSendersOrder(Array(received.withLock { $0 }.dropFirst())) {
            bad.withLock { $0.append("order (cancelled view)") }
          }
        } else if round % 16 == 1, keptHere < 2 {
          keptHere += 1
          kept.withLock { $0.append((cancellable, received)) }
        } else {
          cancellable.cancel()
        }
      }
    }
    #expect(returned, "every call returned")
    for (_, received) in kept.withLock({ $0 }) {
      let values = received.withLock { $0 }
      let rest = Array(values.dropFirst())
      if !Self.inSendersOrder(rest) { bad.withLock { $0.append("order (kept view)") } }
      for sender in 1...senders {
        let mine = rest.filter { $0 / Self.stride == sender }.map { $0 % Self.stride }
        guard let firstSeen = mine.first else { continue }
        if mine != Array(firstSeen..<perSender) {
          bad.withLock {
            $0.append(
              "sender \(sender): saw \(mine.count) of \(perSender - firstSeen) after its first")
          }
        }
      }
    }
    let problems = bad.withLock { $0 }
    #expect(problems.isEmpty, "\(problems.prefix(5)) (\(problems.count) in all)")
  }

  /// Three threads call `request(.max(1))` on the *same* subscription (a pull consumer whose
  /// requests come from several threads, allowed by the rules) while two threads send: never
  /// two `receive`s at once, never beyond demand, each sender's values in order, none twice,
  /// and every request served.
  @Test(".max(1) re-requested from three threads on one subscription while two send")
  func maxOneFromThreeThreads() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let busy = subject.sink { _ in }
    let probe = Probe<Int>(initialDemand: .none)
    subject.subscribe(probe)
    let requesters = 3
    let perRequester = max(200, stressScaled(1_000))
    let requestersDone = Atomic<Int>(0)
    let returned = await allReturn(threads: requesters + 2, deadline: .seconds(600)) { index in
      if index < requesters {
        for _ in 0..<perRequester { probe.request(1) }
        requestersDone.add(1, ordering: .sequentiallyConsistent)
        return
      }
      var i = 1
      // Until every request is served (each request is served by a replay or the next send).
      while requestersDone.load(ordering: .sequentiallyConsistent) < requesters
        || probe.received.load(ordering: .sequentiallyConsistent) < requesters * perRequester
      {
        subject.send((index - requesters + 1) * Self.stride + i)
        i += 1
        if i > 50_000_000 { return }
      }
    }
    #expect(returned)
    #expect(probe.overlaps.load(ordering: .relaxed) == 0, "concurrent receives")
    #expect(probe.beyondDemand.load(ordering: .relaxed) == 0, "beyond demand")
    #expect(probe.received.load(ordering: .relaxed) == requesters * perRequester)
    #expect(Self.inSendersOrder(Array(probe.values.dropFirst())), "order")
    probe.cancel()  // a live subscription and its subscriber keep each other
    withExtendedLifetime(busy) {}
  }

  // MARK: 4. Feedback and re-entrancy

  /// Two `CurrentValueSubject`s whose permanent sinks subscribe to each other (a sink inside a
  /// sink, cancelled at once) and send into each other, two threads sending into each: the
  /// replays run from inside the other subject's deliveries, the turns feed each other.
  @Test("two CurrentValueSubjects whose sinks subscribe to and send into each other")
  func crossSubscribingPair() async {
    let a = CurrentValueSubject<Int, Never>(0)
    let b = CurrentValueSubject<Int, Never>(0)
    let replaysSeen = Atomic<Int>(0)
    let attempts = Atomic<Int>(0)
    let sa = a.sink { value in
      attempts.add(1, ordering: .relaxed)
      let got = Atomic<Bool>(false)
      let inner = b.sink { _ in got.store(true, ordering: .relaxed) }
      if got.load(ordering: .relaxed) { replaysSeen.add(1, ordering: .relaxed) }
      inner.cancel()
      if value % 5 == 0 { b.send(value + 1) }
    }
    let sb = b.sink { value in
      attempts.add(1, ordering: .relaxed)
      let got = Atomic<Bool>(false)
      let inner = a.sink { _ in got.store(true, ordering: .relaxed) }
      if got.load(ordering: .relaxed) { replaysSeen.add(1, ordering: .relaxed) }
      inner.cancel()
      if value % 5 == 0 { a.send(value + 1) }
    }
    let perThread = max(1_000, stressScaled(10_000))
    let returned = await allReturn(threads: 4, deadline: .seconds(600)) { index in
      for i in 0..<perThread {
        let value = (index + 1) * Self.stride + i * 10
        if index % 2 == 0 { a.send(value) } else { b.send(value) }
      }
    }
    #expect(returned, "every call returned")
    #expect(
      replaysSeen.load(ordering: .relaxed) == attempts.load(ordering: .relaxed),
      "a replay not delivered inside sink()")
    withExtendedLifetime((sa, sb)) {}
  }

  /// Replays whose first `receive` does what apps do there, while three threads send: cancel
  /// its own subscription, request more, send 50 values into the subject, or complete a second
  /// subject the pipeline also watches. Nothing hangs, each subscriber's values come in order,
  /// and a subscriber that cancelled in its replay receives nothing after it.
  @Test("replays that cancel, request more, or send many, while three threads send")
  func replaysThatActUnderContention() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let busy = subject.sink { _ in }
    let afterCancel = Atomic<Int>(0)
    let outOfOrder = Atomic<Int>(0)
    let ownMissing = Atomic<Int>(0)
    let done = Atomic<Int>(0)
    let returned = await allReturn(threads: 5, deadline: .seconds(600)) { index in
      if index < 3 {
        var i = 0
        while done.load(ordering: .relaxed) < 2 {
          subject.send((index + 1) * Self.stride + i)
          i += 1
        }
        return
      }
      defer { done.add(1, ordering: .relaxed) }
      for round in 0..<Self.actRounds {
        let kind = (round + index) % 3
        let cancelled = Atomic<Bool>(false)
        let values = SharedBox<[Int]>([])
        let probe = Probe<Int>(initialDemand: .max(1)) { probe, value in
          if cancelled.load(ordering: .relaxed) { afterCancel.add(1, ordering: .relaxed) }
          values.withLock { $0.append(value) }
          guard probe.received.load(ordering: .relaxed) == 1 else { return 0 }
          switch kind {
          case 0:
            cancelled.store(true, ordering: .relaxed)
            probe.cancel()
            return 0
          case 1:
            return 1_000
          default:
            for k in 0..<50 { subject.send((10 + index) * Self.stride + round * 100 + k) }
            return 100_000_000  // the senders must not use it up before the own values
          }
        }
        subject.subscribe(probe)
        // This round's own values (the replay may be an older round's).
        func own(_ got: [Int]) -> [Int] {
          got.dropFirst().filter {
            $0 / Self.stride == 10 + index && ($0 % Self.stride) / 100 == round
          }
        }
        if kind == 2 {
          // The own values were sent inside this call: delivered by it, or — while the
          // subscriber was still attaching, more than a drain's share queued behind another
          // thread's turn — by that turn just after (see "Differences from Combine").
          let deadline = ContinuousClock.now + .seconds(10)
          while own(values.withLock { $0 }).count < 50, ContinuousClock.now < deadline {
            usleep(100)
          }
        }
        let got = values.withLock { $0 }
        probe.cancel()
        if !Self.inSendersOrder(Array(got.dropFirst())) { outOfOrder.add(1, ordering: .relaxed) }
        if kind == 2 {
          let own = own(got)
          if own.count != 50 {
            ownMissing.add(1, ordering: .relaxed)
            let expected = (0..<50).map { (10 + index) * Self.stride + round * 100 + $0 }
            print(
              "adv37c: replaysThatAct: round \(round): \(own.count) of its 50 own values "
                + "(\(got.count) values in all, \(probe.completions) completions); own == "
                + "expected: \(own == expected); own: \(own.map { $0 % 100 })")
          }
        }
      }
    }
    #expect(returned, "every call returned")
    #expect(afterCancel.load(ordering: .relaxed) == 0, "values after a cancel in the replay")
    #expect(outOfOrder.load(ordering: .relaxed) == 0, "a sender's values out of order")
    #expect(
      ownMissing.load(ordering: .relaxed) == 0,
      "values a replay sent did not all reach it")
    withExtendedLifetime(busy) {}
  }

  /// A replay that completes the subject while other threads send: every subscriber receives
  /// exactly one completion and nothing after it; nothing hangs.
  @Test("replays that complete the subject, while two threads send")
  func replayCompletesTheSubject() async {
    for _ in 0..<50 {
      let subject = CurrentValueSubject<Int, Never>(0)
      let probes = SharedBox<[Probe<Int>]>([])
      let returned = await allReturn(threads: 4, deadline: .seconds(120)) { index in
        if index < 2 {
          for i in 0..<2_000 { subject.send((index + 1) * Self.stride + i) }
          return
        }
        for round in 0..<20 {
          let probe = Probe<Int>(initialDemand: .unlimited) { _, _ in
            if round == 10, index == 2 { subject.send(completion: .finished) }
            return 0
          }
          probes.withLock { $0.append(probe) }
          subject.subscribe(probe)
        }
      }
      subject.send(completion: .finished)
      #expect(returned)
      for probe in probes.withLock({ $0 }) {
        #expect(probe.completions == 1)
        #expect(probe.afterCompletion.load(ordering: .relaxed) == 0)
        #expect(Self.inSendersOrder(Array(probe.values.dropFirst())))
      }
    }
  }

  // MARK: 5. Operators in front

  /// `combineLatest` of two `CurrentValueSubject`s, `first()`, `prefix(1)`, `share()` in front
  /// and `switchToLatest` over a subject of `CurrentValueSubject`s, subscribed again and again
  /// while threads send into every subject: each subscription has its replay inside
  /// `sink()`, nothing hangs.
  @Test("combineLatest, first, prefix, share, switchToLatest over contended subjects")
  func operatorsOverContendedSubjects() async {
    let a = CurrentValueSubject<Int, Never>(0)
    let b = CurrentValueSubject<Int, Never>(0)
    let outer = CurrentValueSubject<CurrentValueSubject<Int, Never>, Never>(a)
    let shared = a.share()
    let keepShared = shared.sink { _ in }
    let missing = SharedBox<[String]>([])
    let done = Atomic<Int>(0)
    let returned = await allReturn(threads: 6, deadline: .seconds(600)) { index in
      if index < 3 {
        var i = 0
        while done.load(ordering: .relaxed) < 3 {
          switch index {
          case 0: a.send(Self.stride + i)
          case 1: b.send(2 * Self.stride + i)
          default: outer.send(i % 2 == 0 ? a : b)
          }
          i += 1
        }
        return
      }
      defer { done.add(1, ordering: .relaxed) }
      for round in 0..<300 {
        let got = Atomic<Int>(0)
        let cancellables: [AnyCancellable] = [
          a.combineLatest(b).sink { _ in got.add(1, ordering: .relaxed) },
          a.first().sink { _ in got.add(1, ordering: .relaxed) },
          b.prefix(1).sink { _ in got.add(1, ordering: .relaxed) },
          outer.switchToLatest().sink { _ in got.add(1, ordering: .relaxed) },
        ]
        let now = got.load(ordering: .relaxed)
        if now < 4 { missing.withLock { $0.append("thread \(index) round \(round): \(now) of 4") } }
        for c in cancellables { c.cancel() }
      }
    }
    #expect(returned, "every call returned")
    let problems = missing.withLock { $0 }
    #expect(
      problems.isEmpty, "replays not inside sink(): \(problems.prefix(5)) (\(problems.count))")
    withExtendedLifetime(keepShared) {}
  }

  // MARK: 6. Values whose deinit calls back

  /// Values whose `deinit` sends into the subject, reads its value and subscribes to it,
  /// released on the replay's path (an owed value replaced while the replay is pending, the
  /// replay itself, values the turn queued for the replaying subscriber), three threads
  /// sending: nothing traps or hangs.
  @Test("values whose deinit sends into, reads and subscribes to the subject, during replays")
  func deinitCallsBackDuringReplays() async {
    await #expect(processExitsWith: .success) {
      final class Token: @unchecked Sendable {
        // Safety: set once before the token is sent.
        let tag: Int
        var onDeinit: ((Int) -> Void)?
        init(_ tag: Int) { self.tag = tag }
        deinit { onDeinit?(tag) }
      }
      let subject = CurrentValueSubject<Token, Never>(Token(0))
      let hook: @Sendable (Int) -> Void = { tag in
        switch tag % 4 {
        case 0: _ = subject.value
        case 1:
          let t = Token(-1)
          subject.send(t)
        case 2:
          let c = subject.sink { _ in }
          c.cancel()
        default: break
        }
      }
      let busy = subject.sink { _ in }
      let done = Atomic<Int>(0)
      let finished = DispatchSemaphore(value: 0)
      for index in 0..<5 {
        Thread.detachNewThread {
          defer { finished.signal() }
          if index < 3 {
            for i in 1...3_000 {
              let t = Token(i)
              t.onDeinit = hook
              subject.send(t)
            }
            done.add(1, ordering: .relaxed)
            return
          }
          while done.load(ordering: .relaxed) < 3 {
            let probe = RequestTurnAttackTests.Probe<Token>(initialDemand: .none)
            subject.subscribe(probe)
            probe.request(1)
            usleep(50)
            probe.request(1)
            probe.cancel()
          }
        }
      }
      for _ in 0..<5 {
        if finished.wait(timeout: .now() + 300) == .timedOut { exit(3) }
      }
      // The current value's hook captures the subject: replace it with a token without one,
      // so that the subject and its value do not keep each other (LeakSanitizer).
      subject.send(Token(3))
      busy.cancel()
    }
  }
}
