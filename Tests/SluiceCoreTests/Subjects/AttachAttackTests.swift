import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import Synchronization
import Testing

/// Adversarial tests of the attaching conduit (commit 1a44c6a, by the adversary of that
/// change; adapted to the pacing that its findings led to): a subject's subscriber still
/// inside `receive(subscription:)` receives nothing from another thread; what other threads
/// bring meanwhile is queued (a sender waits once a drain's share is queued) and delivered as
/// that call returns. Shapes apps write: floods
/// during a slow set-up, replays requested elsewhere, completion and cancel while attaching,
/// feedback, nested attaches, operators in front, churn.
@Suite("Subjects: attaching subscribers, attacked", .onThreadsOfTheirOwn)
struct AttachAttackTests {
  /// Records every signal and catches what the rules forbid: two signals at once, a signal
  /// from another thread while inside `receive(subscription:)`, more values than demanded,
  /// anything after a completion or after `cancel()` returned.
  final class Spy: Subscriber, @unchecked Sendable {
    // Safety: `state` is a SharedBox (an NSLock, whose hand-overs the thread sanitizer sees,
    // unlike a contended Mutex's on Linux); `busy` an Atomic; closures set once at init.
    typealias Input = Int
    typealias Failure = Never
    struct State {
      var subscription: Shared<any Subscription>?
      var inside = false
      var subscribingThread: pthread_t?
      /// Set by the test around `subject.subscribe(spy)`: the subscribing thread is in it.
      var inSubscribeCall = false
      var values: [Int] = []
      var completions = 0
      var demanded = Subscribers.Demand.none
      var tooMany = 0
      var afterCompletion = 0
      var afterCancel = 0
      var cancelled = false
      var otherThreadWhileInside = 0
      /// Values delivered on the subscribing thread after `receive(subscription:)` returned
      /// but before `subscribe` returned (the attach's end).
      var deliveredAtAttachEnd = 0
      /// Values delivered on the subscribing thread inside `receive(subscription:)`.
      var deliveredInside = 0
    }
    let state = SharedBox(State())
    let busy = Atomic<Bool>(false)
    let overlaps = Atomic<Int>(0)
    let whileAttaching: (Spy, any Subscription) -> Void
    let onValue: (Spy, Int) -> Subscribers.Demand

    init(
      whileAttaching: @escaping (Spy, any Subscription) -> Void,
      onValue: @escaping (Spy, Int) -> Subscribers.Demand = { _, _ in .none }
    ) {
      self.whileAttaching = whileAttaching
      self.onValue = onValue
    }

    var values: [Int] { state.withLock { $0.values } }
    var snapshot: State { state.withLock { $0 } }

    private func enter() {
      if busy.exchange(true, ordering: .acquiringAndReleasing) {
        overlaps.add(1, ordering: .relaxed)
      }
    }
    private func exit() { busy.store(false, ordering: .releasing) }

    /// Call before requesting (through the spy, so that demand is counted).
    func request(_ subscription: any Subscription, _ demand: Subscribers.Demand) {
      state.withLock { $0.demanded += demand }
      subscription.request(demand)
    }

    func request(_ demand: Subscribers.Demand) {
      guard let subscription = state.withLock({ $0.subscription }) else { return }
      request(subscription.value, demand)
    }

    func receive(subscription: any Subscription) {
      enter()
      state.withLock {
        $0.subscription = Shared(subscription)
        $0.inside = true
        $0.subscribingThread = pthread_self()
      }
      exit()
      // Requests and sends from inside are allowed to deliver synchronously (same thread): the
      // signal flag is not held across the closure.
      whileAttaching(self, subscription)
      state.withLock { $0.inside = false }
    }

    private func note(_ body: (inout State) -> Void) {
      state.withLock { state in
        if state.inside, state.subscribingThread != pthread_self() {
          state.otherThreadWhileInside += 1
        }
        if state.cancelled { state.afterCancel += 1 }
        if state.completions > 0 { state.afterCompletion += 1 }
        body(&state)
      }
    }

    func receive(_ input: Int) -> Subscribers.Demand {
      enter()
      note { state in
        if state.demanded == .none { state.tooMany += 1 } else { state.demanded -= 1 }
        state.values.append(input)
        if !state.inside, state.inSubscribeCall, state.subscribingThread == pthread_self() {
          state.deliveredAtAttachEnd += 1
        }
        if state.inside, state.subscribingThread == pthread_self() { state.deliveredInside += 1 }
      }
      exit()
      let more = onValue(self, input)
      if more > .none { state.withLock { $0.demanded += more } }
      return more
    }

    func receive(completion: Subscribers.Completion<Never>) {
      enter()
      note { $0.completions += 1 }
      exit()
    }

    func cancel() {
      guard let subscription = state.withLock({ $0.subscription }) else { return }
      subscription.value.cancel()
      state.withLock { $0.cancelled = true }
    }

    /// `subject.subscribe(self)`, marking the subscribing thread's call.
    func attach<P: Publisher>(to publisher: P) where P.Output == Int, P.Failure == Never {
      state.withLock { $0.inSubscribeCall = true }
      publisher.subscribe(self)
      state.withLock { $0.inSubscribeCall = false }
    }

    /// The rules every test checks.
    func expectRules(_ label: String = "", sourceLocation: SourceLocation = #_sourceLocation) {
      let s = snapshot
      #expect(
        overlaps.load(ordering: .relaxed) == 0, "two signals at once \(label)",
        sourceLocation: sourceLocation)
      #expect(
        s.otherThreadWhileInside == 0, "another thread while attaching \(label)",
        sourceLocation: sourceLocation)
      #expect(s.tooMany == 0, "values beyond demand \(label)", sourceLocation: sourceLocation)
      #expect(s.completions <= 1, "completions \(label)", sourceLocation: sourceLocation)
      #expect(s.afterCompletion == 0, "after completion \(label)", sourceLocation: sourceLocation)
      #expect(s.afterCancel == 0, "after cancel \(label)", sourceLocation: sourceLocation)
    }
  }

  /// Runs `body` on another thread and waits (`timeout` s at most) until it returns.
  @discardableResult
  static func onAnotherThread(
    timeout: Double = 10, _ body: @escaping @Sendable () -> Void
  ) -> Bool {
    let returned = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      body()
      returned.signal()
    }
    return returned.wait(timeout: .now() + timeout) == .success
  }

  /// Threads started from inside `receive(subscription:)` that send more than a drain's share
  /// (32) into the subject: such a sender waits for the attach to end (it is paced), so the
  /// subscriber must not wait for it there. ``start(_:)`` lets it run until it returns or
  /// 300 ms pass; ``waitAll()`` waits for every one after the attach.
  final class Senders: @unchecked Sendable {
    // Safety: `returned` is a SharedBox.
    let returned = SharedBox<[DispatchSemaphore]>([])

    func start(_ body: @escaping @Sendable () -> Void) {
      let done = AttachAttackTests.start(body)
      if done.wait(timeout: .now() + 0.3) == .success { done.signal() }
      returned.withLock { $0.append(done) }
    }

    func waitAll(timeout: Double = 10) -> Bool {
      let started = returned.withLock { returned in
        defer { returned.removeAll() }
        return returned
      }
      return started.allSatisfy { $0.wait(timeout: .now() + timeout) == .success }
    }
  }

  /// Starts `body` on another thread; the semaphore is signalled as it returns.
  static func start(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
    let returned = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      body()
      returned.signal()
    }
    return returned
  }

  /// Waits (1 s at most) until `released()` is true: a thread's closure that captured the
  /// subscriber is released only as that thread exits, a moment after it signalled.
  static func eventually(_ released: () -> Bool) -> Bool {
    for _ in 0..<1_000 {
      if released() { return true }
      usleep(1_000)
    }
    return released()
  }

  static func isAscending(_ values: [Int]) -> Bool {
    zip(values, values.dropFirst()).allSatisfy { $0 < $1 }
  }

  // MARK: Bounded work

  /// A slow set-up: another thread floods the subject while the subscriber is still in
  /// `receive(subscription:)` (asked `.unlimited`). The subscribing call must deliver at most
  /// a bounded number of those values (``DeliveryContext/allowancePerCall`` = 64) — the rest
  /// belongs to the turn / the senders.
  @Test func theSubscribeCallDeliversABoundedShareOfAFlood() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let count = 20_000
    let senders = Senders()
    let spy = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      senders.start { for value in 0..<count { shared.value.send(value) } }
    }
    spy.attach(to: subject)
    #expect(senders.waitAll(), "the flooding sender went on once the attach ended")
    let s = spy.snapshot
    #expect(s.values.count == count, "every value delivered")
    #expect(Self.isAscending(s.values))
    #expect(
      s.deliveredAtAttachEnd <= 64,
      "the subscribe call delivered \(s.deliveredAtAttachEnd) values of another thread")
    spy.expectRules()
    spy.cancel()
  }

  /// The same flood, while a sender keeps the subject busy after the attach (so the turn is
  /// held by another thread when the attach ends).
  @Test func theSubscribeCallDeliversABoundedShareWhileSendersGoOn() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let stop = Atomic<Bool>(false)
    let count = 5_000
    let senders = Senders()
    let spy = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      senders.start { for value in 0..<count { shared.value.send(value) } }
    }
    let other = Self.start {
      var value = 1_000_000
      while !stop.load(ordering: .relaxed) {
        shared.value.send(value)
        value += 1
      }
    }
    spy.attach(to: subject)
    #expect(senders.waitAll())
    stop.store(true, ordering: .relaxed)
    #expect(other.wait(timeout: .now() + 10) == .success)
    let s = spy.snapshot
    #expect(s.values.filter { $0 < 1_000_000 }.count == count)
    #expect(Self.isAscending(s.values.filter { $0 < 1_000_000 }))
    #expect(Self.isAscending(s.values.filter { $0 >= 1_000_000 }))
    #expect(s.deliveredAtAttachEnd <= 64, "the subscribe call delivered \(s.deliveredAtAttachEnd)")
    spy.expectRules()
    spy.cancel()
  }

  /// While the subscriber sits in `receive(subscription:)` (150 ms: a slow set-up) a sender of
  /// another thread is paced: it waits once a drain's share is queued for the subscriber,
  /// instead of queueing values for it without bound (as it is behind a replay).
  @Test func aSlowAttachPacesSendersOfOtherThreads() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let sent = Atomic<Int>(0)
    let inside = Atomic<Bool>(false)
    let spy = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      inside.store(true, ordering: .releasing)
      Thread.sleep(forTimeInterval: 0.15)
      inside.store(false, ordering: .releasing)
    }
    let sender = Self.start {
      while !inside.load(ordering: .acquiring) { sched_yield() }
      var value = 0
      while inside.load(ordering: .acquiring), value < 300_000 {
        shared.value.send(value)
        value += 1
        sent.store(value, ordering: .relaxed)
      }
    }
    spy.attach(to: subject)
    #expect(sender.wait(timeout: .now() + 10) == .success)
    let queued = sent.load(ordering: .relaxed)
    #expect(queued <= 1_000, "\(queued) values queued for one attaching subscriber, unpaced")
    #expect(spy.values.count == queued)
    spy.expectRules()
    spy.cancel()
  }

  // MARK: Replay (CurrentValueSubject)

  /// Another thread requests (its replay waits for the attach), then the subject completes
  /// (another thread) before the attach returns: the replay was demanded before the
  /// completion, so the subscriber receives the value, then the completion (Combine replays at
  /// the request; outside an attach Sluice does too).
  @Test func aReplayRequestedFromAnotherThreadSurvivesACompletionWhileAttaching() {
    let subject = CurrentValueSubject<Int, Never>(7)
    let shared = Shared(subject)
    let spy = Spy { spy, subscription in
      let sub = Shared(subscription)
      _ = Self.onAnotherThread {
        spy.request(sub.value, .max(1))
        shared.value.send(completion: .finished)
      }
    }
    spy.attach(to: subject)
    let s = spy.snapshot
    #expect(s.values == [7], "the replay demanded before the completion")
    #expect(s.completions == 1)
    spy.expectRules()
  }

  /// The same, the completion sent by the subscribing thread itself inside
  /// `receive(subscription:)` after another thread's request.
  @Test func aReplayRequestedFromAnotherThreadSurvivesOwnCompletion() {
    let subject = CurrentValueSubject<Int, Never>(7)
    let spy = Spy { spy, subscription in
      let sub = Shared(subscription)
      _ = Self.onAnotherThread { spy.request(sub.value, .max(1)) }
      subject.send(completion: .finished)
    }
    spy.attach(to: subject)
    let s = spy.snapshot
    #expect(s.values == [7])
    #expect(s.completions == 1)
    spy.expectRules()
  }

  /// Reference: outside an attach, a request then a completion delivers the replay first.
  @Test func referenceReplayThenCompletionAfterAttach() {
    let subject = CurrentValueSubject<Int, Never>(7)
    let spy = Spy { _, _ in }
    spy.attach(to: subject)
    _ = Self.onAnotherThread {
      spy.request(.max(1))
      subject.send(completion: .finished)
    }
    #expect(spy.values == [7])
    #expect(spy.snapshot.completions == 1)
    spy.expectRules()
  }

  /// Replays racing other threads' sends and requests while attaching: never more than
  /// demanded, never on another thread inside, senders' order kept.
  @Test func replaysRacingSendsAndRequestsWhileAttaching() async {
    let rounds = 150
    let failures = SharedBox<[String]>([])
    for round in 0..<rounds {
      let subject = CurrentValueSubject<Int, Never>(-1)
      let shared = Shared(subject)
      let spies = SharedBox<[Spy]>([])
      await concurrently(3) { index in
        switch index {
        case 0:
          for n in 0..<10 {
            let spy = Spy { spy, subscription in
              if n % 2 == 0 { spy.request(subscription, .max(2)) }
              let sub = Shared(subscription)
              if n % 3 == 0 {
                _ = Self.onAnotherThread(timeout: 5) { spy.request(sub.value, .max(3)) }
              }
              for _ in 0..<50 { sched_yield() }
            } onValue: { _, value in
              value % 7 == 0 ? .max(1) : .none
            }
            spies.withLock { $0.append(spy) }
            spy.attach(to: shared.value)
          }
        case 1:
          for value in 0..<500 { shared.value.send(value) }
        default:
          for value in 0..<500 { shared.value.value = 10_000 + value }
        }
      }
      for spy in spies.withLock({ $0 }) {
        let s = spy.snapshot
        if spy.overlaps.load(ordering: .relaxed) != 0 || s.otherThreadWhileInside != 0
          || s.tooMany != 0
        {
          failures.withLock { $0.append("round \(round): \(s.values) tooMany \(s.tooMany)") }
        }
        let a = s.values.filter { (0..<10_000).contains($0) }
        let b = s.values.filter { $0 >= 10_000 }
        if !Self.isAscending(a) || !Self.isAscending(b) {
          failures.withLock { $0.append("round \(round) order: \(s.values)") }
        }
        spy.cancel()
      }
    }
    let found = failures.withLock { $0 }
    #expect(found.isEmpty, "\(found.count) failures, first: \(found.first ?? "")")
  }

  /// A request from another thread while attaching, with a flood from a third thread: the
  /// owed value and the flood both respect the demand (3).
  @Test func replayOwedAtAttachEndWhileAnotherThreadHoldsTheTurn() async {
    var bad = 0
    var details: [String] = []
    for _ in 0..<100 {
      let subject = CurrentValueSubject<Int, Never>(0)
      let shared = Shared(subject)
      let stop = Atomic<Bool>(false)
      let sent = Atomic<Int>(0)
      let flood = Self.start {
        var value = 1
        while !stop.load(ordering: .relaxed) {
          shared.value.send(value)
          value += 1
          sent.store(value, ordering: .relaxed)
        }
      }
      let spy = Spy { spy, subscription in
        let sub = Shared(subscription)
        _ = Self.onAnotherThread(timeout: 5) { spy.request(sub.value, .max(3)) }
      }
      spy.attach(to: subject)
      // The flood goes on for 100 more values after the attach returned (its sends then find
      // the subscriber attached).
      let after = sent.load(ordering: .relaxed)
      for _ in 0..<5_000 where sent.load(ordering: .relaxed) < after + 100 { usleep(1_000) }
      stop.store(true, ordering: .relaxed)
      _ = flood.wait(timeout: .now() + 10)
      let s = spy.snapshot
      if s.values.count != 3 || s.tooMany != 0 || !Self.isAscending(s.values)
        || s.otherThreadWhileInside != 0 || spy.overlaps.load(ordering: .relaxed) != 0
      {
        bad += 1
        details.append(
          "values \(s.values) tooMany \(s.tooMany) other-thread-inside \(s.otherThreadWhileInside) overlaps \(spy.overlaps.load(ordering: .relaxed))"
        )
      }
      spy.cancel()
    }
    #expect(bad == 0, "\(bad) of 100 rounds broke a rule: \(details.prefix(3))")
  }

  // MARK: Paused queues

  /// A sender of another thread waits with a share (32) queued for the attaching subscriber;
  /// the subscribing thread's request drains it; then the subject completes from a third
  /// thread before the attach returns (handed to the waiting sender's turn, so after the
  /// value it is sending): the values sent before the completion arrive, then the completion.
  @Test func aPausedQueueThenACompletionFromAnotherThread() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let senders = Senders()
    let spy = Spy { spy, subscription in
      spy.request(subscription, .max(40))
      senders.start { for value in 1...100 { shared.value.send(value) } }
      spy.request(subscription, .max(1))  // drains the 32 queued here
      _ = Self.onAnotherThread { shared.value.send(completion: .finished) }
    }
    spy.attach(to: subject)
    #expect(senders.waitAll())
    let s = spy.snapshot
    #expect(s.values == Array(1...32))
    #expect(s.completions == 1)
    spy.expectRules()
  }

  /// A queue waiting for the attach, and a subscriber that never requests again: the rest
  /// arrives once the attach returns, the remaining demand is kept for later values.
  @Test func aPausedQueueIsNotStrandedWithoutAnotherRequest() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let senders = Senders()
    let spy = Spy { spy, subscription in
      spy.request(subscription, .max(80))
      senders.start { for value in 1...70 { shared.value.send(value) } }
      subject.send(71)  // own value: handed to the waiting sender's turn
    }
    spy.attach(to: subject)
    #expect(senders.waitAll())
    #expect(spy.values.sorted() == Array(1...71))
    #expect(Self.isAscending(spy.values.filter { $0 <= 70 }))
    _ = Self.onAnotherThread { for value in 72...100 { shared.value.send(value) } }
    #expect(spy.values.sorted() == Array(1...80))
    spy.expectRules()
    spy.cancel()
  }

  /// A queue cancelled from another thread while attaching: nothing after the cancel returns,
  /// the subscriber and the subject are released. The sender's turn parked with the 32 values
  /// queued (``TurnParking``), so this thread's own sends wait for it (deferred to the end of
  /// the subscribe call) and drain nothing; the cancel comes first: nothing is delivered.
  @Test func aPausedQueueCancelledFromAnotherThreadReleasesEverything() {
    weak var weakSpy: Spy?
    weak var weakSubject: PassthroughSubject<Int, Never>?
    do {
      let subject = PassthroughSubject<Int, Never>()
      weakSubject = subject
      let shared = Shared(subject)
      let senders = Senders()
      let spy = Spy { spy, subscription in
        spy.request(subscription, .unlimited)
        senders.start { for value in 1...100 { shared.value.send(value) } }
        subject.send(0)
        _ = Self.onAnotherThread { spy.cancel() }
        subject.send(-1)
      }
      weakSpy = spy
      spy.attach(to: subject)
      #expect(senders.waitAll())
      subject.send(-2)
      #expect(spy.values == [], "nothing: \(spy.values.count)")
      spy.expectRules()
    }
    #expect(Self.eventually { weakSpy == nil }, "the subscriber was released")
    #expect(Self.eventually { weakSubject == nil }, "the subject was released")
  }

  /// Values queued, then the subscriber cancels itself inside `receive(subscription:)`:
  /// nothing is delivered, everything released.
  @Test func cancelItselfWhileAttachingWithValuesQueued() {
    weak var weakSpy: Spy?
    weak var weakSubject: CurrentValueSubject<Int, Never>?
    do {
      let subject = CurrentValueSubject<Int, Never>(0)
      weakSubject = subject
      let shared = Shared(subject)
      let spy = Spy { spy, subscription in
        let sub = Shared(subscription)
        _ = Self.onAnotherThread {
          spy.request(sub.value, .unlimited)
          for value in 1...10 { shared.value.send(value) }
        }
        spy.cancel()
      }
      weakSpy = spy
      spy.attach(to: subject)
      subject.send(99)
      #expect(spy.values.isEmpty)
      spy.expectRules()
    }
    #expect(Self.eventually { weakSpy == nil })
    #expect(Self.eventually { weakSubject == nil })
  }

  /// The subscriber completes the subject itself while others' values are queued and the
  /// drain pauses: the queued values then the completion, once.
  @Test func completesTheSubjectItselfWithALongQueue() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let senders = Senders()
    let spy = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      senders.start { for value in 1...100 { shared.value.send(value) } }
      // Handed to the waiting sender's turn: after the value it is sending (the 32nd).
      subject.send(completion: .finished)
      subject.send(101)
    }
    spy.attach(to: subject)
    #expect(senders.waitAll())
    let s = spy.snapshot
    #expect(s.values == Array(1...32))
    #expect(s.completions == 1)
    spy.expectRules()
  }

  /// Feedback: a subscriber that sends into the same subject from its deliveries — including
  /// those of the paused drain and of the attach's end.
  @Test func feedbackFromTheDeliveriesOfAPausedDrain() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let senders = Senders()
    let spy = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      senders.start { for value in 1...200 { shared.value.send(value) } }
      subject.send(1_000)
    } onValue: { _, value in
      if value > 0, value % 10 == 0 { shared.value.send(-value) }
      return .none
    }
    spy.attach(to: subject)
    #expect(senders.waitAll())
    let s = spy.snapshot
    let positive = s.values.filter { $0 > 0 && $0 < 1_000 }
    #expect(positive == Array(1...200))
    #expect(Set(s.values.filter { $0 < 0 }) == Set((1...20).map { -$0 * 10 } + [-1_000]))
    #expect(s.values.count == 200 + 1 + 21)
    spy.expectRules()
    spy.cancel()
  }

  /// A subscriber subscribes another to the same subject inside its `receive(subscription:)`
  /// (nested attach) while another thread floods; both see every value, in order, serially.
  @Test func nestedAttachWhileAnotherThreadFloods() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let senders = Senders()
    let inner = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      senders.start { for value in 100...199 { shared.value.send(value) } }
    }
    let outer = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      senders.start { for value in 0...99 { shared.value.send(value) } }
      inner.attach(to: subject)
      subject.send(200)
    }
    outer.attach(to: subject)
    #expect(senders.waitAll())
    // Two senders and the subscribing thread: each one's values in its order, none lost (the
    // inner subscriber also receives the first sender's values sent after it attached: that
    // sender waited for the outer attach to end).
    #expect(outer.values.sorted() == Array(0...200))
    #expect(Set(inner.values).isSuperset(of: 100...200))
    #expect(inner.values.allSatisfy { $0 >= 32 })
    for spy in [outer, inner] {
      #expect(Self.isAscending(spy.values.filter { $0 < 100 }))
      #expect(Self.isAscending(spy.values.filter { $0 >= 100 && $0 < 200 }))
    }
    outer.expectRules("outer")
    inner.expectRules("inner")
    outer.cancel()
    inner.cancel()
  }

  /// A subscriber blocks in `receive(subscription:)` for another thread that requests, sends
  /// and cancels another subscriber — no call hangs.
  @Test func blockingForAnotherThreadWhileAttachingDoesNotHang() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let bystander = Spy { spy, subscription in spy.request(subscription, .unlimited) }
    bystander.attach(to: subject)
    let spy = Spy { spy, subscription in
      let sub = Shared(subscription)
      let ok = Self.onAnotherThread(timeout: 5) {
        spy.request(sub.value, .max(5))
        for value in 0..<100 { shared.value.send(value) }
        bystander.cancel()
        for value in 100..<200 { shared.value.send(value) }
      }
      #expect(ok, "the other thread's calls returned")
    }
    spy.attach(to: subject)
    #expect(spy.values == Array(0..<5))
    #expect(bystander.values.allSatisfy { $0 < 100 })
    spy.expectRules()
    bystander.expectRules()
    spy.cancel()
  }

  /// Subscribing from inside a delivery of the same subject (the subscribing thread holds
  /// the turn), the new subscriber waiting for another thread's sends.
  @Test func attachInsideADeliveryWhileAnotherThreadSends() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let attached = SharedBox<[Spy]>([])
    let trigger = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
    } onValue: {
      _, value in
      if value == 0 {
        let spy = Spy { spy, subscription in
          spy.request(subscription, .unlimited)
          let ok = Self.onAnotherThread(timeout: 5) {
            for value in 1...20 { shared.value.send(value) }
          }
          #expect(ok, "another thread's 20 sends returned while the turn was held")
        }
        attached.withLock { $0.append(spy) }
        spy.attach(to: shared.value)
      }
      return .none
    }
    trigger.attach(to: subject)
    subject.send(0)
    let spy = attached.withLock { $0.first }
    #expect(spy?.values == Array(1...20))
    #expect(trigger.values == Array(0...20))
    spy?.expectRules()
    trigger.expectRules()
    spy?.cancel()
    trigger.cancel()
  }

  /// As above, but the other thread sends more than the turn's grants (32) while the
  /// subscriber, attached from inside a delivery (its thread holds the turn), waits for it.
  @Test func attachInsideADeliveryWaitingForManySendsOfAnotherThread() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let returned = Atomic<Bool>(false)
    let trigger = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
    } onValue: {
      _, value in
      if value == 0 {
        let spy = Spy { spy, subscription in
          spy.request(subscription, .unlimited)
          let ok = Self.onAnotherThread(timeout: 2) {
            for value in 1...100 { shared.value.send(value) }
          }
          returned.store(ok, ordering: .relaxed)
        }
        spy.attach(to: shared.value)
        spy.cancel()
      }
      return .none
    }
    trigger.attach(to: subject)
    subject.send(0)
    let didReturn = returned.load(ordering: .relaxed)
    // Documented (Differences from Combine): a subscriber that blocks until another thread's
    // `send` returns deadlocks when that send finds no grant — here the turn's 32 grants are
    // used up while the waiting thread holds the turn; the 2 s timeout ends the wait.
    #expect(!didReturn, "another thread's 100 sends returned in 2 s")
    trigger.cancel()
  }

  // MARK: Operators in front

  /// The shapes: the subject's downstream is an operator's inner subscriber.
  static func shapes(_ subject: PassthroughSubject<Int, Never>) -> [(
    String, AnyPublisher<Int, Never>
  )] {
    [
      ("erased", subject.eraseToAnyPublisher()),
      ("map", subject.map { $0 }.eraseToAnyPublisher()),
      ("share", subject.share().eraseToAnyPublisher()),
      (
        "merge",
        subject.merge(with: Empty<Int, Never>(completeImmediately: false)).eraseToAnyPublisher()
      ),
      ("flatMap", Just(0).flatMap { _ in subject }.eraseToAnyPublisher()),
      ("switchToLatest", Just(subject).switchToLatest().eraseToAnyPublisher()),
      ("prefix", subject.prefix(100_000).eraseToAnyPublisher()),
    ]
  }

  @Test func operatorsInFrontOfAnAttachingSubscriber() async {
    let failures = SharedBox<[String]>([])
    for round in 0..<20 {
      let subject = PassthroughSubject<Int, Never>()
      let shared = Shared(subject)
      for (name, publisher) in Self.shapes(subject) {
        let shapePublisher = Shared(publisher)
        let spies = SharedBox<[Spy]>([])
        await concurrently(3) { index in
          if index == 0 {
            for n in 0..<5 {
              let spy = Spy { spy, subscription in
                spy.request(subscription, n == 0 ? .max(1) : .unlimited)
                for _ in 0..<200 { sched_yield() }
              } onValue: { _, _ in
                n == 0 ? .max(1) : .none
              }
              spies.withLock { $0.append(spy) }
              spy.attach(to: shapePublisher.value)
            }
          } else {
            for value in 0..<300 { shared.value.send(index * 100_000 + value) }
          }
        }
        for spy in spies.withLock({ $0 }) {
          let s = spy.snapshot
          let problems = [
            spy.overlaps.load(ordering: .relaxed) != 0 ? "overlap" : nil,
            s.otherThreadWhileInside != 0 ? "other thread inside" : nil,
            s.tooMany != 0 ? "too many" : nil,
            !Self.isAscending(s.values.filter { $0 < 200_000 }) ? "order 1" : nil,
            !Self.isAscending(s.values.filter { $0 >= 200_000 }) ? "order 2" : nil,
          ].compactMap { $0 }
          if !problems.isEmpty {
            failures.withLock { $0.append("round \(round) \(name): \(problems)") }
          }
          spy.cancel()
        }
      }
    }
    let found = failures.withLock { $0 }
    #expect(found.isEmpty, "\(found.count): \(found.prefix(5))")
  }

  /// `receive(on:)` and `multicast` + `connect` in front while a sender floods.
  @Test func receiveOnAndMulticastInFront() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let queue = DispatchQueue(label: "attach-attack")
    let multicast = subject.multicast { PassthroughSubject<Int, Never>() }
    let senders = Senders()
    let spyA = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      senders.start { for value in 0..<500 { shared.value.send(value) } }
    }
    let spyB = Spy { spy, subscription in
      spy.request(subscription, .unlimited)
      senders.start { for value in 500..<1_000 { shared.value.send(value) } }
    }
    let connection = multicast.connect()
    spyB.attach(to: multicast)
    #expect(senders.waitAll())
    spyA.attach(to: subject.receive(on: queue))
    #expect(senders.waitAll())
    queue.sync {}
    subject.send(completion: .finished)
    let done = DispatchSemaphore(value: 0)
    queue.async { done.signal() }
    _ = done.wait(timeout: .now() + 5)
    #expect(spyA.values == Array(0..<500), "receive(on:) got the values sent while attaching")
    #expect(spyB.values == Array(500..<1_000) + Array(0..<500))
    #expect(spyA.snapshot.completions == 1)
    #expect(spyB.snapshot.completions == 1)
    spyA.expectRules("A")
    spyB.expectRules("B")
    connection.cancel()
  }

  // MARK: On/off demand

  @Test func observableObjectPublisherAndPublishedWhileAttaching() {
    final class Model: ObservableObject, @unchecked Sendable {
      @Published var count = 0
    }
    let model = Model()
    let shared = Shared(model)
    let publisher = model.objectWillChange.map { _ in 1 }
    let senders = Senders()
    let spy = Spy { spy, subscription in
      spy.request(subscription, .max(1))  // on/off: every value after this
      senders.start { for _ in 0..<50 { shared.value.count += 1 } }
    }
    spy.attach(to: publisher)
    #expect(senders.waitAll())
    #expect(spy.snapshot.values.count == 50)
    #expect(spy.overlaps.load(ordering: .relaxed) == 0)
    #expect(spy.snapshot.otherThreadWhileInside == 0)
    let published = Spy { spy, subscription in
      spy.request(subscription, .max(2))  // replays the current value (50)
      senders.start { for _ in 0..<50 { shared.value.count += 1 } }
      spy.request(subscription, .max(1))
    }
    published.attach(to: model.$count)
    #expect(senders.waitAll())
    #expect(Array(published.values.prefix(2)) == [50, 51])
    #expect(published.values.count == 3)
    #expect(Self.isAscending(published.values))
    published.expectRules()
    spy.cancel()
    published.cancel()
  }

  // MARK: Churn

  /// Threads subscribing and cancelling attachers (some cancelling inside the attach, some
  /// from another thread, some after one value) while two threads send: rules hold, no hang,
  /// every subscriber released.
  @Test func churnWhileSending() async {
    let weakCount = Atomic<Int>(0)
    let failures = SharedBox<[String]>([])
    final class WeakBox: @unchecked Sendable { weak var spy: Spy? }
    let boxes = SharedBox<[WeakBox]>([])
    for _ in 0..<20 {
      let subject = CurrentValueSubject<Int, Never>(0)
      let shared = Shared(subject)
      await concurrently(4) { index in
        if index >= 2 {
          for n in 0..<40 {
            let spy = Spy { spy, subscription in
              spy.request(subscription, n % 3 == 0 ? .max(1) : .unlimited)
              switch n % 4 {
              case 0: spy.cancel()
              case 1:
                let sub = Shared(subscription)
                _ = Self.onAnotherThread(timeout: 5) { sub.value.cancel() }
              case 2: shared.value.send(-1)
              default: for _ in 0..<50 { sched_yield() }
              }
            } onValue: { spy, _ in
              if n % 5 == 0 { spy.cancel() }
              return .none
            }
            let box = WeakBox()
            box.spy = spy
            boxes.withLock { $0.append(box) }
            spy.attach(to: shared.value)
            let s = spy.snapshot
            if spy.overlaps.load(ordering: .relaxed) != 0 || s.otherThreadWhileInside != 0
              || s.tooMany != 0 || s.afterCancel != 0
            {
              failures.withLock { $0.append("\(n): \(s.values)") }
            }
            spy.cancel()
          }
        } else {
          for value in 1...1_000 { shared.value.send(index * 10_000 + value) }
        }
      }
      subject.send(completion: .finished)
    }
    _ = Self.eventually { boxes.withLock { $0.allSatisfy { $0.spy == nil } } }
    for box in boxes.withLock({ $0 }) where box.spy != nil { weakCount.add(1, ordering: .relaxed) }
    let found = failures.withLock { $0 }
    #expect(found.isEmpty, "\(found.count): \(found.prefix(3))")
    #expect(weakCount.load(ordering: .relaxed) == 0, "subscribers kept alive")
  }
}
