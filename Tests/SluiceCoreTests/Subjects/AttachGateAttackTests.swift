import Dispatch
import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// Adversarial tests of the attach's pacing (commit 721d1f1: a sender of another thread waits
/// at the conduit's `AttachGate` once 32 values are queued for a subscriber still inside
/// `receive(subscription:)`; the subscribe call runs with the thread's `DeliveryContext`
/// entered). Shapes apps write: subscribers that announce themselves into another subject,
/// replays, nested attaches, cancels from a third thread, feedback through merge, on/off
/// demand, churn. Every wait is bounded; a hang fails (and is undone by cancelling the
/// attaching subscriptions, which opens the gates).
@Suite("Subjects: the attach gate, attacked", .onThreadsOfTheirOwn)
struct AttachGateAttackTests {
  // The recording subscriber and helpers of ``AttachAttackTests``.
  typealias Spy = AttachAttackTests.Spy
  typealias Senders = AttachAttackTests.Senders

  @discardableResult
  static func onAnotherThread(
    timeout: Double = 10, _ body: @escaping @Sendable () -> Void
  ) -> Bool {
    AttachAttackTests.onAnotherThread(timeout: timeout, body)
  }

  static func start(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
    AttachAttackTests.start(body)
  }

  static func eventually(_ released: () -> Bool) -> Bool {
    AttachAttackTests.eventually(released)
  }

  static func isAscending(_ values: [Int]) -> Bool { AttachAttackTests.isAscending(values) }

  // MARK: Cycles between two attaches

  /// Two components subscribe at the same time, each to its own subject, and each announces
  /// itself with ONE value into the other's subject from inside `receive(subscription:)`
  /// (nothing waits for the other thread's sends: each only waits, for the test's timing, until
  /// the other is inside its own `receive(subscription:)` and a producer has sent 31 values —
  /// fewer than the 32 the documented rule speaks of — into each subject). Each announcement
  /// is the 32nd value queued for the other, still attaching: each sender waits at the other's
  /// gate, and neither attach ever ends.
  @Test func twoAttachesAnnouncingIntoEachOthersSubjectDeadlock() {
    let s1 = PassthroughSubject<Int, Never>()
    let s2 = PassthroughSubject<Int, Never>()
    let shared = Shared((s1, s2))
    let aInside = DispatchSemaphore(value: 0)
    let bInside = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    let x = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      aInside.signal()
      _ = go.wait(timeout: .now() + 5)
      shared.value.1.send(-1)  // "X is here", into s2
    }
    let y = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      bInside.signal()
      _ = go.wait(timeout: .now() + 5)
      shared.value.0.send(-2)  // "Y is here", into s1
    }
    let a = Self.start { x.attach(to: shared.value.0) }
    let b = Self.start { y.attach(to: shared.value.1) }
    #expect(aInside.wait(timeout: .now() + 5) == .success)
    #expect(bInside.wait(timeout: .now() + 5) == .success)
    // A producer's burst: 31 values into each subject (each send returns: below the limit).
    let burst = Self.start {
      for value in 0..<31 {
        shared.value.0.send(value)
        shared.value.1.send(100 + value)
      }
    }
    #expect(burst.wait(timeout: .now() + 5) == .success, "the burst of 31 returned")
    go.signal()
    go.signal()
    let aReturned = a.wait(timeout: .now() + 3) == .success
    let bReturned = b.wait(timeout: .now() + 3) == .success
    #expect(
      aReturned && bReturned, "both subscribe calls returned (a: \(aReturned), b: \(bReturned))")
    if !(aReturned && bReturned) {
      // Undo the deadlock: a cancel opens the gate.
      x.cancel()
      y.cancel()
      _ = a.wait(timeout: .now() + 3)
      _ = b.wait(timeout: .now() + 3)
    } else {
      #expect(x.values == Array(0..<31) + [-2])
      #expect(y.values == Array(100..<131) + [-1])
    }
    x.expectRules("x")
    y.expectRules("y")
    x.cancel()
    y.cancel()
  }

  /// The same without any waiting inside `receive(subscription:)`: two threads start together;
  /// each subscribes a component that, set up, publishes its initial state (200 values) into
  /// the other subject. How many of 8 rounds hang?
  @Test func twoAttachesPublishingInitialStateIntoEachOther() {
    var hung = 0
    for _ in 0..<8 {
      let s1 = PassthroughSubject<Int, Never>()
      let s2 = PassthroughSubject<Int, Never>()
      let shared = Shared((s1, s2))
      let x = Spy { spy, subscription in
        spy.request(subscription, .unlimited)
        for value in 0..<200 { shared.value.1.send(value) }
      }
      let y = Spy { spy, subscription in
        spy.request(subscription, .unlimited)
        for value in 0..<200 { shared.value.0.send(value) }
      }
      let ready = DispatchSemaphore(value: 0)
      let start = DispatchSemaphore(value: 0)
      let a = Self.start {
        ready.signal()
        start.wait()
        x.attach(to: shared.value.0)
      }
      let b = Self.start {
        ready.signal()
        start.wait()
        y.attach(to: shared.value.1)
      }
      ready.wait()
      ready.wait()
      start.signal()
      start.signal()
      let ok = a.wait(timeout: .now() + 2) == .success && b.wait(timeout: .now() + 2) == .success
      if !ok {
        hung += 1
        x.cancel()
        y.cancel()
        _ = a.wait(timeout: .now() + 3)
        _ = b.wait(timeout: .now() + 3)
      } else {
        #expect(Self.isAscending(x.values))
        #expect(Self.isAscending(y.values))
      }
      x.expectRules("x")
      y.expectRules("y")
      x.cancel()
      y.cancel()
    }
    #expect(hung == 0, "\(hung) of 8 rounds hung")
  }

  // MARK: Replay beside a blocked holder

  /// CurrentValueSubject: a slow subscriber (about 0.2 ms a value, asked `.unlimited`) attaches
  /// while another thread floods; its request inside `receive(subscription:)` replays beside the
  /// flooder's turn (the flooder may block at the gate meanwhile). No hang; every value from
  /// the replay on in order, the last one included; the subscribe call bounded (its allowance
  /// of 64 values of another thread, its own replay, and the values queued for the subscriber
  /// while it attached, up to the gate's 32, which it delivers as it ends).
  @Test(arguments: [(true, 200), (true, 0), (false, 200), (false, 0)])
  func replayBesideAFlooderBlockedAtTheGate(current: Bool, microseconds: Int) {
    for round in 0..<4 {
      let passthrough = PassthroughSubject<Int, Never>()
      let cvs = CurrentValueSubject<Int, Never>(-1)
      let shared = Shared((passthrough, cvs))
      let send: @Sendable (Int) -> Void = {
        if current { shared.value.1.send($0) } else { shared.value.0.send($0) }
      }
      let publisher = Shared(
        current ? cvs.eraseToAnyPublisher() : passthrough.eraseToAnyPublisher())
      let count = 3_000
      let flooderStarted = DispatchSemaphore(value: 0)
      let flooder = Self.start {
        flooderStarted.signal()
        for value in 0..<count { send(value) }
      }
      flooderStarted.wait()
      let inside = Atomic<Int>(0)
      let atEnd = Atomic<Int>(0)
      let subscribingThread = SharedBox<pthread_t?>(nil)
      let spy = Spy { spy, subscription in
        spy.request(subscription, .unlimited)
        usleep(20_000)  // slow set-up
      } onValue: { spy, _ in
        if subscribingThread.withLock({ $0 }) == pthread_self() {
          if spy.state.withLock({ $0.inside }) {
            inside.add(1, ordering: .relaxed)
          } else {
            atEnd.add(1, ordering: .relaxed)
          }
        }
        if microseconds > 0 { usleep(UInt32(microseconds)) }
        return .none
      }
      let attached = Self.start {
        subscribingThread.withLock { $0 = pthread_self() }
        spy.attach(to: publisher.value)
        subscribingThread.withLock { $0 = nil }
      }
      let attachReturned = attached.wait(timeout: .now() + 8) == .success
      #expect(attachReturned, "round \(round): the subscribe call returned")
      let flooderReturned = flooder.wait(timeout: .now() + 8) == .success
      #expect(flooderReturned, "round \(round): the flooder returned")
      if !(attachReturned && flooderReturned) {
        spy.cancel()
        return
      }
      _ = Self.eventually { spy.values.last == count - 1 }
      let values = spy.values
      // (A PassthroughSubject's flood may be over before the attach: nothing to receive then.)
      #expect(
        values.last == count - 1 || (!current && values.isEmpty),
        "round \(round): the last value reached it")
      #expect(Self.isAscending(values), "round \(round)")
      let (i, e) = (inside.load(ordering: .relaxed), atEnd.load(ordering: .relaxed))
      #expect(
        i + e <= 65 + 32,
        "round \(round): the subscribe call delivered \(i) values inside receive(subscription:), \(e) after it"
      )
      spy.expectRules("round \(round)")
      spy.cancel()
    }
  }

  /// A holder waiting at a replay's waiter while the replaying thread blocks at another
  /// subscriber's gate: thread R's late request replays beside H's turn (H pauses at R's
  /// waiter); the replayed value's subscriber forwards into a second subject where a subscriber
  /// attaches with 31 values queued. No hang.
  @Test func replayingThreadBlocksAtAnotherSubjectsGate() {
    let cvs = CurrentValueSubject<Int, Never>(0)
    let out = PassthroughSubject<Int, Never>()
    let shared = Shared((cvs, out))
    // Forwarder: its replay is forwarded into `out`.
    let forwarder = Spy { _, _ in
    } onValue: { _, value in
      shared.value.1.send(value)
      return .none
    }
    forwarder.attach(to: cvs)
    let inside = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    let attacher = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      inside.signal()
      _ = go.wait(timeout: .now() + 5)
      // Set-up touches the first subject: its current value and a send.
      _ = shared.value.0.value
      shared.value.0.send(-5)
    }
    let attach = Self.start { attacher.attach(to: shared.value.1) }
    #expect(inside.wait(timeout: .now() + 5) == .success)
    for value in 1...31 { out.send(1_000 + value) }  // 31 queued for the attacher
    // H: holds the cvs turn for a while (a slow second subscriber).
    let slow = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
    } onValue: { _, _ in
      usleep(50_000)
      return .none
    }
    slow.attach(to: cvs)
    let holder = Self.start { shared.value.0.send(7) }
    usleep(10_000)
    // R: the forwarder's request replays beside H (its replay is forwarded into `out`: the
    // 32nd value for the attacher).
    let replayer = Self.start { forwarder.request(.max(1)) }
    usleep(20_000)
    go.signal()
    let ok = [attach, holder, replayer].allSatisfy { $0.wait(timeout: .now() + 5) == .success }
    #expect(ok, "no call hung")
    if !ok { attacher.cancel(); forwarder.cancel(); slow.cancel() }
    forwarder.expectRules("forwarder")
    attacher.expectRules("attacher")
    attacher.cancel()
    forwarder.cancel()
    slow.cancel()
  }

  // MARK: Cancel from a third thread

  /// A slow set-up (sleeping, waiting for no sender) while another thread floods (it blocks at
  /// the gate); a third thread cancels the attaching subscription: the flooder goes on at once,
  /// nothing reaches the subscriber after the cancel, and it is released once subscribe returns.
  @Test func cancelFromAThirdThreadReleasesTheBlockedSender() {
    final class WeakBox: @unchecked Sendable { weak var spy: Spy? }
    let box = WeakBox()
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let bystander = Spy { spy, subscription in spy.request(subscription, .unlimited) }
    bystander.attach(to: subject)
    let flooderDone = Atomic<Bool>(false)
    let flooderReturnedWhileAttaching = Atomic<Bool>(false)
    do {
      let senders = Senders()
      let spy = Spy { spy, subscription in
        spy.request(subscription, .unlimited)
        senders.start {
          for value in 0..<2_000 { shared.value.send(value) }
          flooderDone.store(true, ordering: .relaxed)
        }
        // The flooder is blocked at the gate now (32 queued). A third thread cancels.
        let sub = Shared(subscription)
        _ = Self.onAnotherThread(timeout: 5) { sub.value.cancel() }
        spy.state.withLock { $0.cancelled = true }
        // Slow set-up goes on; the flooder should finish meanwhile.
        for _ in 0..<200 where !flooderDone.load(ordering: .relaxed) { usleep(5_000) }
        flooderReturnedWhileAttaching.store(
          flooderDone.load(ordering: .relaxed), ordering: .relaxed)
      }
      box.spy = spy
      spy.attach(to: subject)
      #expect(senders.waitAll())
      #expect(spy.values.isEmpty, "values after the cancel: \(spy.values.count)")
      spy.expectRules()
    }
    let flooderWentOn = flooderReturnedWhileAttaching.load(ordering: .relaxed)
    #expect(flooderWentOn, "the cancel let the flooder go on")
    #expect(Self.eventually { box.spy == nil }, "the cancelled subscriber was released")
    #expect(bystander.values == Array(0..<2_000))
    bystander.expectRules()
    bystander.cancel()
  }

  // MARK: Nested attaches and engines the blocked sender is inside

  /// A flooder sends into s2; s2's sink forwards into s1 (the flooder holds both turns and
  /// blocks at the gate of X, attaching to s1). X's set-up subscribes Z to s2 (a
  /// CurrentValueSubject: its request replays beside the flooder's turn), Z's set-up sends into
  /// s2 and s1. No hang; every rule holds; values of one sender in order.
  @Test func nestedAttachToTheSubjectWhoseSenderIsBlocked() {
    for round in 0..<5 {
      let s1 = PassthroughSubject<Int, Never>()
      let s2 = CurrentValueSubject<Int, Never>(-1)
      let shared = Shared((s1, s2))
      let forward = s2.sink { shared.value.0.send($0) }
      let senders = Senders()
      let z = Spy { spy, subscription in
        spy.request(subscription, .unlimited)
        shared.value.1.send(-10)
        shared.value.0.send(-11)
      }
      let x = Spy { spy, subscription in
        spy.request(subscription, .unlimited)
        senders.start { for value in 0..<500 { shared.value.1.send(value) } }
        usleep(5_000)
        z.attach(to: shared.value.1)
      }
      let attached = Self.start { x.attach(to: shared.value.0) }
      let ok = attached.wait(timeout: .now() + 5) == .success
      #expect(ok, "round \(round): the subscribe call returned")
      #expect(senders.waitAll(timeout: 5), "round \(round): the flooder returned")
      if !ok { x.cancel(); z.cancel(); forward.cancel(); return }
      _ = Self.eventually { x.values.contains(499) && z.values.contains(499) }
      #expect(Self.isAscending(x.values.filter { $0 >= 0 }), "round \(round)")
      #expect(Self.isAscending(z.values.filter { $0 >= 0 }), "round \(round)")
      #expect(x.values.filter { $0 >= 0 } == Array(0..<500), "round \(round): x got every value")
      #expect(x.values.contains(-10) && x.values.contains(-11), "round \(round)")
      #expect(z.values.contains(-10), "round \(round)")
      x.expectRules("x \(round)")
      z.expectRules("z \(round)")
      x.cancel()
      z.cancel()
      forward.cancel()
    }
  }

  /// Feedback through merge: a sink on `s1.merge(with: s2)` forwards each first-hop value into
  /// s2; a flooder sends into s1 while a subscriber of s2 attaches slowly (the flooder, inside
  /// the merge's turn and s2's, blocks at its gate). The attaching subscriber's set-up sends
  /// into s1 and s2 (through the merge's turn the blocked flooder holds). No hang; nothing lost.
  @Test func feedbackThroughMergeWithAnAttachMeanwhile() {
    let s1 = PassthroughSubject<Int, Never>()
    let s2 = PassthroughSubject<Int, Never>()
    let shared = Shared((s1, s2))
    let seen = SharedBox<[Int]>([])
    let loop = s1.merge(with: s2).sink { value in
      seen.withLock { $0.append(value) }
      if value >= 0, value < 100_000 { shared.value.1.send(value + 100_000) }
    }
    let senders = Senders()
    let x = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      senders.start { for value in 0..<1_000 { shared.value.0.send(value) } }
      usleep(10_000)
      shared.value.0.send(-1)
      shared.value.1.send(-2)
    }
    let attached = Self.start { x.attach(to: shared.value.1) }
    let ok = attached.wait(timeout: .now() + 5) == .success
    #expect(ok, "the subscribe call returned")
    #expect(senders.waitAll(timeout: 5), "the flooder returned")
    if !ok { x.cancel(); loop.cancel(); return }
    _ = Self.eventually { seen.withLock { $0.count } >= 2_000 + 2 }
    let all = seen.withLock { $0 }
    #expect(Set(all.filter { $0 >= 0 && $0 < 100_000 }) == Set(0..<1_000))
    #expect(Set(all.filter { $0 >= 100_000 }) == Set((0..<1_000).map { $0 + 100_000 }))
    #expect(all.count == 2_002, "\(all.count) deliveries")
    #expect(Self.isAscending(all.filter { $0 >= 0 && $0 < 100_000 }))
    #expect(Self.isAscending(x.values.filter { $0 >= 100_000 }))
    x.expectRules()
    x.cancel()
    loop.cancel()
  }

  // MARK: The context after subscribe

  /// After subscribe calls whose `receive(subscription:)` sent into a subject whose turn
  /// another thread held (deferred), cancelled, completed the subject, attached nested: the
  /// thread's context is back to depth 0, not resuming, and a later send blocks normally for a
  /// turn (and returns once delivered).
  @Test func theContextIsSaneAfterEveryKindOfAttach() {
    let busy = PassthroughSubject<Int, Never>()
    let sharedBusy = Shared(busy)
    let slowSeen = SharedBox<[Int]>([])
    let slow = busy.sink { value in
      slowSeen.withLock { $0.append(value) }
      if value == 0 { usleep(100_000) }
    }
    let holder = Self.start { sharedBusy.value.send(0) }  // holds busy's turn for 100 ms
    usleep(10_000)
    let depths = SharedBox<[String: (Int, Bool)]>([:])
    let done = Self.start {
      func record(_ label: String) {
        let context = DeliveryContext.current
        depths.withLock { $0[label] = (context.depth, context.mustNotBlock) }
      }
      let s = PassthroughSubject<Int, Never>()
      let a = Spy { spy, subscription in
        spy.request(subscription, .unlimited)
        sharedBusy.value.send(1)  // deferred: the holder sleeps
      }
      a.attach(to: s)
      record("deferred send")
      let b = Spy { spy, subscription in
        spy.request(subscription, .unlimited)
        spy.cancel()
      }
      b.attach(to: s)
      record("cancel inside")
      let c = Spy { spy, subscription in
        spy.request(subscription, .unlimited)
        let inner = Spy { spy, subscription in spy.request(subscription, .max(1)) }
        inner.attach(to: s)
        s.send(5)
        inner.cancel()
      }
      c.attach(to: s)
      record("nested")
      let d = Spy { spy, subscription in
        spy.request(subscription, .unlimited)
        s.send(completion: .finished)
      }
      d.attach(to: s)
      record("completion inside")
      // A later send into a busy subject: blocks for the turn, returns after delivery.
      sharedBusy.value.send(2)
      record("after")
      a.cancel()
      c.cancel()
    }
    #expect(done.wait(timeout: .now() + 5) == .success, "the subscribing thread returned")
    #expect(holder.wait(timeout: .now() + 5) == .success)
    for (label, state) in depths.withLock({ $0 }) {
      #expect(state.0 == 0 && !state.1, "\(label): depth \(state.0), mustNotBlock \(state.1)")
    }
    #expect(slowSeen.withLock { $0 } == [0, 1, 2])
    slow.cancel()
  }

  /// A subscriber attached from inside a delivery (its thread holds another subject's turn)
  /// cancels — or completes its own subject — inside `receive(subscription:)` while another
  /// thread is blocked at its gate. Everyone returns; the sender's later values flow; the
  /// delivering thread's context is sane after its delivery.
  @Test func cancelOrCompleteInsideAnAttachMadeInsideADelivery() {
    for completes in [false, true] {
      let outer = PassthroughSubject<Int, Never>()
      let target = PassthroughSubject<Int, Never>()
      let shared = Shared(target)
      let bystander = Spy { spy, subscription in spy.request(subscription, .unlimited) }
      bystander.attach(to: target)
      let senders = Senders()
      let inner = Spy { spy, subscription in
        spy.request(subscription, .unlimited)
        senders.start { for value in 0..<300 { shared.value.send(value) } }
        if completes { shared.value.send(completion: .finished) } else { spy.cancel() }
      }
      let depthAfter = SharedBox<Int>(-1)
      let trigger = outer.sink { _ in inner.attach(to: shared.value) }
      let delivered = Self.start {
        outer.send(1)
        depthAfter.withLock { $0 = DeliveryContext.current.depth }
      }
      #expect(delivered.wait(timeout: .now() + 5) == .success, "completes \(completes)")
      #expect(senders.waitAll(timeout: 5), "completes \(completes): the sender returned")
      #expect(depthAfter.withLock { $0 } == 0)
      let values = inner.values
      #expect(values.count <= 32 || completes, "cancelled: \(values.count) values")
      if completes {
        #expect(inner.snapshot.completions == 1)
        #expect(Self.isAscending(values))
      } else {
        #expect(values.isEmpty, "values after the cancel: \(values.count)")
      }
      inner.expectRules("completes \(completes)")
      bystander.expectRules()
      trigger.cancel()
      inner.cancel()
      bystander.cancel()
    }
  }

  // MARK: On/off demand

  /// `@Published` and `objectWillChange`: two subscribers attach slowly at once while two
  /// threads mutate the model (each attach paces its mutators); a third subscriber's set-up
  /// mutates the model itself. No hang; every value sent after the attach received, in order.
  @Test func publishedWithSlowAttachesAndMutatorsOnSeveralThreads() {
    final class Model: ObservableObject, @unchecked Sendable {
      @Published var count = 0
    }
    let model = Model()
    let shared = Shared(model)
    let willChange = Spy { spy, subscription in
      spy.request(subscription, .max(1))
      usleep(20_000)
    }
    let published = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      usleep(20_000)
      shared.value.count += 0  // a set-up that writes the model
    }
    let mutators = (0..<2).map { _ in
      Self.start { for _ in 0..<500 { shared.value.count += 1 } }
    }
    let a = Self.start { willChange.attach(to: shared.value.objectWillChange.map { _ in 1 }) }
    let b = Self.start { published.attach(to: shared.value.$count) }
    let ok = ([a, b] + mutators).allSatisfy { $0.wait(timeout: .now() + 8) == .success }
    #expect(ok, "every call returned")
    if !ok { willChange.cancel(); published.cancel(); return }
    _ = Self.eventually { published.values.last == model.count }
    #expect(published.values.last == model.count)
    // On/off demand: every value after the request (not counted against `.max(1)`).
    #expect(willChange.overlaps.load(ordering: .relaxed) == 0)
    #expect(willChange.snapshot.otherThreadWhileInside == 0)
    published.expectRules("published")
    willChange.cancel()
    published.cancel()
  }

  // MARK: The blocked sender's call

  /// A sender blocks at the gate holding the turn (its one value is the 32nd queued for a slow
  /// attach); two other threads flood meanwhile (handed to its turn, then waiting), a third
  /// completes the subject. Once the attach ends: the blocked sender's one `send` call delivers
  /// at most 64 values of the others; the attacher gets every value sent after its request, in
  /// each sender's order, and one completion after them.
  @Test func theBlockedSendersCallStaysBounded() {
    for round in 0..<3 {
      let subject = PassthroughSubject<Int, Never>()
      let shared = Shared(subject)
      let blockedThread = SharedBox<pthread_t?>(nil)
      let othersOnBlocked = Atomic<Int>(0)
      let bystander = Spy { spy, subscription in
        spy.request(subscription, .unlimited)
      } onValue: {
        _, value in
        if value >= 1_000, blockedThread.withLock({ $0 }) == pthread_self() {
          othersOnBlocked.add(1, ordering: .relaxed)
        }
        return .none
      }
      bystander.attach(to: subject)
      let inside = DispatchSemaphore(value: 0)
      let x = Spy { spy, subscription in
        spy.request(subscription, .unlimited)
        inside.signal()
        usleep(100_000)  // slow set-up
      }
      let attach = Self.start { x.attach(to: shared.value) }
      inside.wait()
      for value in 0..<31 { subject.send(value) }
      let blocked = Self.start {
        blockedThread.withLock { $0 = pthread_self() }
        shared.value.send(31)  // the 32nd: waits at the gate, holding the turn
        blockedThread.withLock { $0 = nil }
      }
      usleep(10_000)
      let flooders = (1...2).map { index in
        Self.start { for value in 0..<2_000 { shared.value.send(index * 1_000_000 + value) } }
      }
      usleep(10_000)
      let completer = Self.start { shared.value.send(completion: .finished) }
      let ok = ([attach, blocked, completer] + flooders).allSatisfy {
        $0.wait(timeout: .now() + 8) == .success
      }
      #expect(ok, "round \(round): every call returned")
      if !ok { x.cancel(); bystander.cancel(); return }
      _ = Self.eventually { x.snapshot.completions == 1 }
      let values = x.values
      #expect(Array(values.prefix(32)) == Array(0...31), "round \(round)")
      for index in 1...2 {
        let mine = values.filter { $0 / 1_000_000 == index }
        #expect(Self.isAscending(mine), "round \(round): sender \(index) in order")
        #expect(
          mine == bystander.values.filter { $0 / 1_000_000 == index },
          "round \(round): sender \(index): x and the bystander agree")
      }
      #expect(x.snapshot.completions == 1)
      let others = othersOnBlocked.load(ordering: .relaxed)
      #expect(
        others <= 64,
        "round \(round): the blocked sender's call delivered \(others) values of others")
      x.expectRules("x \(round)")
      bystander.expectRules("bystander \(round)")
    }
  }

  // MARK: Churn

  /// Four threads subscribe sinks and cancel them (some with a slow set-up, some sending into
  /// the subject in it) while two threads send: done in bounded time.
  @Test func churnOfSinksAndSlowAttachesWhileSending() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let stop = Atomic<Bool>(false)
    let attached = Atomic<Int>(0)
    let begin = ContinuousClock.now
    let sendersDone = (0..<2).map { index in
      Self.start {
        var value = 0
        while !stop.load(ordering: .relaxed) {
          shared.value.send(index * 1_000_000 + value)
          value += 1
        }
      }
    }
    let churners = (0..<4).map { index in
      Self.start {
        for n in 0..<400 {
          if n % 50 == 0 {
            let spy = Spy { spy, subscription in
              spy.request(subscription, .unlimited)
              usleep(2_000)
              if index % 2 == 0 { shared.value.send(-1) }
            }
            spy.attach(to: shared.value)
            spy.cancel()
          } else {
            let sink = shared.value.sink { _ in }
            sink.cancel()
          }
          attached.add(1, ordering: .relaxed)
        }
      }
    }
    let ok = churners.allSatisfy { $0.wait(timeout: .now() + 15) == .success }
    stop.store(true, ordering: .relaxed)
    let sendersOk = sendersDone.allSatisfy { $0.wait(timeout: .now() + 5) == .success }
    let elapsed = ContinuousClock.now - begin
    #expect(ok, "churn finished: \(attached.load(ordering: .relaxed)) of 1600 in \(elapsed)")
    #expect(sendersOk, "senders returned")
    #expect(elapsed < .seconds(10), "took \(elapsed)")
  }
}
