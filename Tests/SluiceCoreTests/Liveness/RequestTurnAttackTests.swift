import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// Adversarial checks of 9282f73 (issue 37): a `request` that lets values through (a
/// `CurrentValueSubject`'s replay, an owed value, values queued in the conduit) is drained in
/// the subject's delivery turn — at once on the requesting thread when the turn is free, by the
/// holder after its value in flight when another thread holds it, queued behind the delivery
/// when this thread holds it. Attacked in the shapes apps write: subscribing from inside a sink,
/// pull consumers requesting `.max(1)` from other threads, requests racing `cancel()` and
/// completion, operators between the subject and its subscriber, and values whose `deinit`
/// touches the subject.
@Suite("Requests and replays racing deliveries, attacked", .onThreadsOfTheirOwn)
struct RequestTurnAttackTests {
  /// Values tagged with their sender: `sender * stride + i`.
  static var stride: Int { SenderCoded.stride }

  /// A subscriber whose demand the test drives. It records what it receives, and counts the
  /// rule breaks it can see itself: two `receive` calls at once, a value beyond the demand
  /// requested so far, anything after its completion.
  ///
  /// It keeps its subscription until it is cancelled or completed, as a subscriber does (and
  /// even after `cancel()`: the subscription must let go of it then). A probe left subscribed
  /// to a subject that goes on is a live subscription: it and its conduit keep each other, so
  /// every test cancels the probes it leaves subscribed (the address sanitizer's leak check
  /// reports them otherwise).
  final class Probe<Input: Sendable>: Subscriber, @unchecked Sendable {
    // Safety: `subscription`, `values`, `completions` only under `lock`; the rest atomics;
    // `onValue` and `initialDemand` are set in `init`.
    typealias Failure = Never
    let combineIdentifier = CombineIdentifier()
    private let lock = NSLock()
    private var storedSubscription: (any Subscription)?
    private var storedValues: [Input] = []
    private var storedCompletions = 0
    /// Demand requested so far (added before each request is made).
    let requested = Atomic<Int>(0)
    let received = Atomic<Int>(0)
    let inReceive = Atomic<Int>(0)
    let overlaps = Atomic<Int>(0)
    let beyondDemand = Atomic<Int>(0)
    let afterCompletion = Atomic<Int>(0)
    let initialDemand: Subscribers.Demand
    /// Called inside `receive`; returns the demand it adds (counted here).
    let onValue: (@Sendable (Probe, Input) -> Int)?
    let valueArrived = DispatchSemaphore(value: 0)

    init(initialDemand: Subscribers.Demand, onValue: (@Sendable (Probe, Input) -> Int)? = nil) {
      self.initialDemand = initialDemand
      self.onValue = onValue
    }

    var values: [Input] { lock.withLock { storedValues } }
    var completions: Int { lock.withLock { storedCompletions } }
    var subscription: (any Subscription)? { lock.withLock { storedSubscription } }

    func receive(subscription: any Subscription) {
      lock.withLock { storedSubscription = subscription }
      if initialDemand == .unlimited {
        requested.store(Int.max / 2, ordering: .sequentiallyConsistent)
        subscription.request(.unlimited)
      } else if let max = initialDemand.max, max > 0 {
        request(max)
      }
    }

    /// Requests `count` more, counting it first.
    func request(_ count: Int) {
      requested.add(count, ordering: .sequentiallyConsistent)
      subscription?.request(.max(count))
    }

    func receive(_ input: Input) -> Subscribers.Demand {
      if inReceive.add(1, ordering: .sequentiallyConsistent).newValue > 1 {
        overlaps.add(1, ordering: .relaxed)
      }
      let count = received.add(1, ordering: .sequentiallyConsistent).newValue
      if count > requested.load(ordering: .sequentiallyConsistent) {
        beyondDemand.add(1, ordering: .relaxed)
      }
      let completed = lock.withLock {
        storedValues.append(input)
        return storedCompletions > 0
      }
      if completed { afterCompletion.add(1, ordering: .relaxed) }
      let more = onValue?(self, input) ?? 0
      if more > 0 { requested.add(more, ordering: .sequentiallyConsistent) }
      inReceive.subtract(1, ordering: .sequentiallyConsistent)
      valueArrived.signal()
      return more > 0 ? .max(more) : .none
    }

    func receive(completion: Subscribers.Completion<Never>) {
      lock.withLock { storedCompletions += 1 }
    }

    func cancel() { subscription?.cancel() }
  }

  /// Whether each sender's values arrive in the order sent, none twice.
  static func inSendersOrder(_ values: [Int]) -> Bool {
    var last: [Int: Int] = [:]
    for value in values {
      let sender = value / stride
      if let previous = last[sender], previous >= value { return false }
      last[sender] = value
    }
    return true
  }

  final class Model: @unchecked Sendable {
    // Safety: only the test's threads, one at a time (serial deliveries).
    var x = -1
  }

  // MARK: Synchronous replay

  /// An app subscribing from inside a sink of another subject: the replay is delivered before
  /// `sink` (and `first()`, `prefix(1)`, `assign(to:on:)`) returns, no other thread sending.
  @Test("sink on a CurrentValueSubject from inside another subject's delivery has its value")
  func replayInsideAnotherSubjectsDelivery() {
    let trigger = PassthroughSubject<Int, Never>()
    let other = CurrentValueSubject<Int, Never>(0)
    let subject = CurrentValueSubject<Int, Never>(7)
    var seen: [String] = []
    var inner: [AnyCancellable] = []
    func readAll(_ label: String) {
      var got: [Int] = []
      inner.append(subject.sink { got.append($0) })
      var first: Int?
      inner.append(subject.first().sink { first = $0 })
      var prefix: [Int] = []
      inner.append(subject.prefix(1).sink { prefix.append($0) })
      let model = Model()
      inner.append(subject.assign(to: \.x, on: model))
      seen.append("\(label): \(got) \(first ?? -1) \(prefix) \(model.x)")
    }
    let outer = trigger.sink { _ in readAll("passthrough") }
    // Two levels: CurrentValueSubject → PassthroughSubject → subscribe.
    let relay = PassthroughSubject<Int, Never>()
    let relayed = relay.sink { _ in readAll("nested") }
    let otherSink = other.dropFirst().sink { relay.send($0) }
    trigger.send(1)
    other.send(2)
    #expect(seen == ["passthrough: [7] 7 [7] 7", "nested: [7] 7 [7] 7"])
    withExtendedLifetime((outer, relayed, otherSink, inner)) {}
  }

  /// The same, from inside a delivery of the same subject (to another subscriber), no other
  /// thread sending: Combine delivers the replay before `sink` returns; Sluice's rule: "When
  /// no other thread is delivering, that is at once, on the requesting thread".
  @Test("sink on a CurrentValueSubject from inside its own delivery has its value")
  func replayInsideTheSameSubjectsDelivery() {
    let subject = CurrentValueSubject<Int, Never>(0)
    var atReturn: [String] = []
    var got: [Int] = []
    var first: Int?
    var inner: [AnyCancellable] = []
    let outer = subject.sink { value in
      guard value == 1 else { return }
      inner.append(subject.sink { got.append($0) })
      inner.append(subject.first().sink { first = $0 })
      atReturn.append("sink \(got), first \(first ?? -1)")
    }
    subject.send(1)
    #expect(atReturn == ["sink [1], first 1"], "the replay before sink/first returned")
    // Delivered after the value in flight at least, once.
    #expect(got == [1] && first == 1)
    subject.send(2)
    #expect(got == [1, 2])
    withExtendedLifetime((outer, inner)) {}
  }

  /// Through another subject: a view model's `$a.sink { b = … }` whose `$b.sink` reads `a`'s
  /// publisher with `first()` — this thread holds `a`'s turn two deliveries up.
  @Test("first() on a CurrentValueSubject from a delivery it feeds through another subject")
  func replayInsideADeliveryItFeeds() {
    let a = CurrentValueSubject<Int, Never>(0)
    let b = PassthroughSubject<Int, Never>()
    var readings: [Int] = []
    var inner: [AnyCancellable] = []
    let ab = a.dropFirst().sink { b.send($0 * 10) }
    let bRead = b.sink { _ in
      var first: Int?
      inner.append(a.first().sink { first = $0 })
      readings.append(first ?? -1)
    }
    a.send(1)
    #expect(readings == [1], "a's value read synchronously from b's delivery")
    withExtendedLifetime((ab, bRead, inner)) {}
  }

  /// `@Published`: `$x.first()` read from inside `$x`'s own sink, and from inside another
  /// property's sink.
  @Test("@Published: first() from inside its own sink and another property's sink")
  func publishedSynchronousRead() {
    final class ViewModel {
      @Published var x = 0
      @Published var y = 0
    }
    let model = ViewModel()
    var fromOwn: [Int] = []
    var fromOther: [Int] = []
    var inner: [AnyCancellable] = []
    let own = model.$x.dropFirst().sink { _ in
      var first: Int?
      inner.append(model.$x.first().sink { first = $0 })
      fromOwn.append(first ?? -1)
    }
    let other = model.$y.dropFirst().sink { _ in
      var first: Int?
      inner.append(model.$x.first().sink { first = $0 })
      fromOther.append(first ?? -1)
    }
    model.y = 5
    #expect(fromOther == [0])
    model.x = 3
    // Published delivers before storing (willSet): Combine's replay inside the delivery is the
    // old value 0.
    #expect(fromOwn.count == 1 && fromOwn != [-1], "read synchronously: \(fromOwn)")
    withExtendedLifetime((own, other, inner)) {}
  }

  /// Threads subscribing to one `CurrentValueSubject` at the same time, none sending (a shared
  /// settings subject read with `first()` from worker threads): each `first()` has its value when
  /// it returns, delivered on its own thread, as in Combine. The turn that a concurrent
  /// subscriber's replay holds must not take this thread's replay away from it.
  @Test("threads reading a CurrentValueSubject with first() at once, nobody sending")
  func concurrentSynchronousReads() async {
    let subject = CurrentValueSubject<Int, Never>(42)
    let misses = Atomic<Int>(0)
    let foreign = Atomic<Int>(0)
    let reads = 2_000
    let returned = await allReturn(threads: 4, deadline: .seconds(600)) { _ in
      for _ in 0..<reads {
        let got = Atomic<Int>(-1)
        let thread = Atomic<Int>(0)
        let cancellable = subject.first().sink { value in
          got.store(value, ordering: .sequentiallyConsistent)
          thread.store(Self.threadNumber(), ordering: .sequentiallyConsistent)
        }
        if got.load(ordering: .sequentiallyConsistent) != 42 { misses.add(1, ordering: .relaxed) }
        withExtendedLifetime(cancellable) {}
        // Wait for a replay delivered elsewhere (so that `thread` is set), then compare.
        while got.load(ordering: .sequentiallyConsistent) != 42 { sched_yield() }
        while thread.load(ordering: .sequentiallyConsistent) == 0 { sched_yield() }
        if thread.load(ordering: .sequentiallyConsistent) != Self.threadNumber() {
          foreign.add(1, ordering: .relaxed)
        }
      }
    }
    #expect(returned)
    let missed = misses.load(ordering: .relaxed)
    let elsewhere = foreign.load(ordering: .relaxed)
    print(
      "concurrentSynchronousReads: \(missed) of \(4 * reads) first() returned without the "
        + "value; \(elsewhere) replays ran another thread's closure")
    #expect(missed == 0, "first() returned without the current value, nobody sending")
    #expect(elsewhere == 0, "a replay ran on another subscribing thread")
  }

  /// This thread's number (its pthread), nonzero.
  static func threadNumber() -> Int { Int(bitPattern: UInt(pthread_self())) | 1 }

  /// A subscriber attached from inside a delivery, then the subject completed from inside the
  /// same delivery: the replay first, then the completion, once each.
  @Test("subscribe then complete from inside a delivery: replay, then completion")
  func completeFromInsideAfterSubscribing() {
    let subject = CurrentValueSubject<Int, Never>(0)
    let probe = Probe<Int>(initialDemand: .unlimited)
    let outer = subject.sink { value in
      guard value == 1 else { return }
      subject.subscribe(probe)
      subject.send(completion: .finished)
    }
    subject.send(1)
    #expect(probe.values == [1] && probe.completions == 1)
    #expect(probe.afterCompletion.load(ordering: .relaxed) == 0)
    withExtendedLifetime(outer) {}
  }

  /// A subscriber asking for one more from inside its own `receive` (on its subscription, not by
  /// the returned demand) while two threads send.
  @Test("request(.max(1)) on its own subscription from inside receive, two senders")
  func requestFromInsideOwnReceive() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let probe = Probe<Int>(initialDemand: .max(1)) { probe, _ in
      probe.request(1)
      return 0
    }
    subject.subscribe(probe)
    let returned = await allReturn(threads: 2, deadline: .seconds(600)) { index in
      for i in 1...5_000 { subject.send((index + 1) * Self.stride + i) }
    }
    #expect(returned)
    #expect(probe.overlaps.load(ordering: .relaxed) == 0)
    #expect(probe.beyondDemand.load(ordering: .relaxed) == 0)
    #expect(Self.inSendersOrder(probe.values.filter { $0 != 0 }))
    probe.cancel()
  }

  /// A cancelled subscriber keeps its subscription (as subscribers may); the value its conduit
  /// owed it must not be kept alive with it once the subject has moved on.
  @Test("a cancelled subscription releases the value it owed")
  func cancelledSubscriptionReleasesOwedValue() {
    final class Token: Sendable {}
    let probe = Probe<Token>(initialDemand: .none)
    weak var owed: Token?
    let subject = CurrentValueSubject<Token, Never>(Token())
    subject.subscribe(probe)
    do {
      let token = Token()
      owed = token
      subject.send(token)  // no demand: owed to the probe
    }
    probe.cancel()
    subject.send(Token())
    #expect(owed == nil, "the cancelled conduit still holds the value it owed")
    withExtendedLifetime(probe) {}
  }

  // MARK: Replay while another thread delivers

  /// Thread A delivers a value to a subscriber that is slow; meanwhile B subscribes: `sink`
  /// returns, and A delivers B's replay after its value in flight — exactly once, then every
  /// later value in order.
  @Test("replay requested while another thread delivers: delivered once, in order")
  func replayWhileAnotherThreadDelivers() async {
    for _ in 0..<20 {
      let subject = CurrentValueSubject<Int, Never>(0)
      let inside = DispatchSemaphore(value: 0)
      let release = DispatchSemaphore(value: 0)
      let slow = subject.dropFirst().sink { value in
        guard value == 1 else { return }
        inside.signal()
        _ = release.wait(timeout: .now() + 10)
      }
      let probe = Probe<Int>(initialDemand: .unlimited)
      let returned = await allReturn(threads: 2, deadline: .seconds(600)) { index in
        if index == 0 {
          subject.send(1)
          subject.send(2)
        } else {
          inside.wait()
          subject.subscribe(probe)
          release.signal()
        }
      }
      #expect(returned)
      subject.send(3)
      #expect(probe.values == [1, 2, 3])
      #expect(probe.overlaps.load(ordering: .relaxed) == 0)
      probe.cancel()
      withExtendedLifetime(slow) {}
    }
  }

  /// The holder's call is three turns deep (subject → subject → subject: the first two
  /// reserved its whole allowance), so a sender racing it waits, and the holder hands the turn
  /// to that waiter rather than deliver for it; a replay requested meanwhile is queued behind
  /// the waiter: the waiter's thread must run it.
  @Test("replay queued behind a waiter the holder hands its turn to")
  func replayBehindAWaiterThatTakesTheTurn() async {
    for _ in 0..<10 {
      let t1 = PassthroughSubject<Int, Never>()
      let t2 = PassthroughSubject<Int, Never>()
      let subject = CurrentValueSubject<Int, Never>(0)
      let inside = DispatchSemaphore(value: 0)
      let release = DispatchSemaphore(value: 0)
      let waiterQueued = Atomic<Bool>(false)
      let c1 = t1.sink { t2.send($0) }
      let c2 = t2.sink { subject.send($0) }
      let slow = subject.dropFirst().sink { value in
        guard value == 1 else { return }
        inside.signal()
        _ = release.wait(timeout: .now() + 10)
      }
      let probe = Probe<Int>(initialDemand: .unlimited)
      let returned = await allReturn(threads: 3, deadline: .seconds(600)) { index in
        switch index {
        case 0:
          t1.send(1)
        case 1:
          inside.wait()
          waiterQueued.store(true, ordering: .sequentiallyConsistent)
          subject.send(2 * Self.stride)  // no grant: waits for the turn
        default:
          while !waiterQueued.load(ordering: .sequentiallyConsistent) { usleep(100) }
          usleep(2_000)  // the sender is queued as a waiter by now (no timing asserted)
          subject.subscribe(probe)
          release.signal()
        }
      }
      #expect(returned)
      subject.send(3)
      let values = probe.values
      #expect(values.last == 3 && values.count >= 2 && Self.inSendersOrder(values), "\(values)")
      probe.cancel()
      withExtendedLifetime((c1, c2, slow)) {}
    }
  }

  // MARK: Pull consumers: .max(1) at a time

  /// A consumer thread requests `.max(1)` and waits for the value before requesting again (as
  /// an `AsyncSequence` bridge does), while two threads send: every request is served, never
  /// more than demanded, never two `receive`s at once, each sender's values in order.
  @Test("CurrentValueSubject: .max(1) requests from a consumer thread while two threads send")
  func pullConsumerFromAnotherThread() async {
    for kind in ["current", "passthrough"] {
      let current = CurrentValueSubject<Int, Never>(0)
      let passthrough = PassthroughSubject<Int, Never>()
      let isCurrent = kind == "current"
      let busy = current.sink { _ in }
      let busy2 = passthrough.sink { _ in }
      let probe = Probe<Int>(initialDemand: .none)
      if isCurrent { current.subscribe(probe) } else { passthrough.subscribe(probe) }
      let done = Atomic<Bool>(false)
      let starved = Atomic<Int>(0)
      let returned = await allReturn(threads: 3, deadline: .seconds(600)) { index in
        if index == 2 {
          defer { done.store(true, ordering: .sequentiallyConsistent) }
          for _ in 0..<2_000 {
            probe.request(1)
            if probe.valueArrived.wait(timeout: .now() + 10) == .timedOut {
              starved.add(1, ordering: .relaxed)
              return
            }
          }
          return
        }
        var i = 1
        while !done.load(ordering: .relaxed) {
          let value = (index + 1) * Self.stride + i
          if isCurrent { current.send(value) } else { passthrough.send(value) }
          i += 1
        }
      }
      #expect(returned)
      #expect(starved.load(ordering: .relaxed) == 0, "\(kind): a request never served")
      #expect(probe.overlaps.load(ordering: .relaxed) == 0, "\(kind): concurrent receives")
      #expect(probe.beyondDemand.load(ordering: .relaxed) == 0, "\(kind): beyond demand")
      #expect(Self.inSendersOrder(probe.values), "\(kind): order")
      probe.cancel()
      withExtendedLifetime((busy, busy2)) {}
    }
  }

  /// Requests made from inside deliveries to *other* subscribers of the same subject: each
  /// value to X asks Y for one more (Y's request is queued behind X's delivery), while two
  /// threads send.
  @Test("request(.max(1)) on one subscriber from inside another's receive, two senders")
  func requestFromInsideAnotherSubscribersReceive() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let y = Probe<Int>(initialDemand: .max(1))
    let x = Probe<Int>(initialDemand: .unlimited) { _, _ in
      y.request(1)
      return 0
    }
    subject.subscribe(x)
    subject.subscribe(y)
    let returned = await allReturn(threads: 2, deadline: .seconds(600)) { index in
      for i in 1...5_000 { subject.send((index + 1) * Self.stride + i) }
    }
    #expect(returned)
    for probe in [x, y] {
      #expect(probe.overlaps.load(ordering: .relaxed) == 0)
      #expect(probe.beyondDemand.load(ordering: .relaxed) == 0)
      #expect(Self.inSendersOrder(probe.values.filter { $0 != 0 }))
    }
    // Y asked for one more per value X received and got at most that; the last values were
    // sent with demand, so Y ends on a value sent last by one of the threads.
    #expect(y.received.load(ordering: .relaxed) > 1)
    x.cancel()
    y.cancel()
  }

  /// Demand added from inside `receive(subscription:)` of a subscriber attached from inside a
  /// delivery of the same subject, while other threads send: its values in order, once.
  @Test("subscribe from inside a delivery of the same subject while two threads send")
  func subscribeFromInsideDeliveryWhileOthersSend() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let probes = SharedBox<[Probe<Int>]>([])
    let attacher = subject.sink { value in
      guard value % 97 == 0 else { return }
      let probe = Probe<Int>(initialDemand: .max(3)) { _, _ in 1 }
      probes.withLock { $0.append(probe) }
      subject.subscribe(probe)
    }
    let returned = await allReturn(threads: 2, deadline: .seconds(600)) { index in
      for i in 1...3_000 { subject.send((index + 1) * Self.stride + i) }
    }
    #expect(returned)
    for probe in probes.withLock({ $0 }) {
      let values = probe.values
      #expect(!values.isEmpty, "the replay reached every subscriber")
      #expect(Self.inSendersOrder(values), "\(values.prefix(8))")
      #expect(probe.overlaps.load(ordering: .relaxed) == 0)
      #expect(probe.beyondDemand.load(ordering: .relaxed) == 0)
      probe.cancel()
    }
    withExtendedLifetime(attacher) {}
  }

  // MARK: Races with cancel and completion

  /// A `sink` attached and cancelled at once while another thread sends: no value whose `send`
  /// began after `cancel()` returned reaches it (a delivery already in flight on the sending
  /// thread may end after it, as in Combine: the thread sanitizer's timing showed one), and its
  /// closure is released once the sender stops.
  @Test("subscribe then cancel at once while another thread sends: nothing late, closure freed")
  func requestRacingCancel() async {
    final class Canary: Sendable {}
    let subject = CurrentValueSubject<Int, Never>(0)
    let busy = subject.sink { _ in usleep(20) }
    let late = Atomic<Int>(0)
    let canaries = SharedBox<[WeakRef<Canary>]>([])
    let stop = Atomic<Bool>(false)
    let lastStarted = Atomic<Int>(0)
    let returned = await allReturn(threads: 2, deadline: .seconds(600)) { index in
      if index == 0 {
        var i = 1
        while !stop.load(ordering: .relaxed) {
          lastStarted.store(i, ordering: .sequentiallyConsistent)
          subject.send(i)
          i += 1
        }
        return
      }
      defer { stop.store(true, ordering: .relaxed) }
      for _ in 0..<2_000 {
        // The last value whose send began before `cancel()` returned; `Int.max` until then.
        let cutoff = Atomic<Int>(.max)
        let canary = Canary()
        canaries.withLock { $0.append(WeakRef(canary)) }
        let cancellable = subject.sink { value in
          withExtendedLifetime(canary) {}
          if value > cutoff.load(ordering: .sequentiallyConsistent) {
            late.add(1, ordering: .relaxed)
          }
        }
        cancellable.cancel()
        cutoff.store(
          lastStarted.load(ordering: .sequentiallyConsistent), ordering: .sequentiallyConsistent)
      }
    }
    #expect(returned)
    subject.send(-1)  // one more turn, should anything be left for it
    #expect(late.load(ordering: .relaxed) == 0, "values received after cancel() returned")
    let alive = canaries.withLock { $0.filter { $0.value != nil }.count }
    #expect(alive == 0, "\(alive) closures of cancelled sinks still held")
    withExtendedLifetime(busy) {}
  }

  /// A subscriber attached while one thread sends and another completes the subject: each
  /// subscriber gets exactly one completion and no value after it, its values in order.
  @Test("subscribe racing send and send(completion:): one completion, nothing after it")
  func requestRacingCompletion() async {
    for _ in 0..<300 {
      let subject = CurrentValueSubject<Int, Never>(0)
      let busy = subject.sink { _ in }
      let probes = (0..<2).map { _ in Probe<Int>(initialDemand: .max(2)) { _, _ in 1 } }
      let returned = await allReturn(threads: 4, deadline: .seconds(600)) { index in
        switch index {
        case 0:
          for i in 1...200 { subject.send(i) }
        case 1:
          usleep(50)
          subject.send(completion: .finished)
        default:
          subject.subscribe(probes[index - 2])
        }
      }
      #expect(returned)
      for probe in probes {
        #expect(probe.completions == 1)
        #expect(probe.afterCompletion.load(ordering: .relaxed) == 0)
        #expect(probe.overlaps.load(ordering: .relaxed) == 0)
        let values = probe.values
        #expect(values == values.sorted() && Set(values).count == values.count)
      }
      withExtendedLifetime(busy) {}
    }
  }

  // MARK: Operators between the subject and its subscriber

  /// `share()`, `multicast` and `buffer` between a `CurrentValueSubject` and subscribers that
  /// attach and request from other threads while it sends.
  @Test("share, multicast and buffer before a subject's subscriber, requests from other threads")
  func operatorsBetween() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let shared = subject.share()
    let multicast = subject.multicast(subject: PassthroughSubject<Int, Never>())
    let connection = multicast.connect()
    let buffered = Probe<Int>(initialDemand: .max(1))
    let shareProbes = (0..<2).map { _ in Probe<Int>(initialDemand: .unlimited) }
    let multicastProbe = Probe<Int>(initialDemand: .max(1))
    let stop = Atomic<Bool>(false)
    let returned = await allReturn(threads: 4, deadline: .seconds(600)) { index in
      switch index {
      case 0:
        defer { stop.store(true, ordering: .sequentiallyConsistent) }
        for i in 1...8_000 { subject.send(Self.stride + i) }
      case 1:
        shared.subscribe(shareProbes[0])
        subject.buffer(size: 4, prefetch: .byRequest, whenFull: .dropOldest).subscribe(buffered)
        while !stop.load(ordering: .relaxed) {
          if buffered.valueArrived.wait(timeout: .now() + .milliseconds(1)) == .success {
            buffered.request(1)
          }
        }
      case 2:
        shared.subscribe(shareProbes[1])
        multicast.subscribe(multicastProbe)
        while !stop.load(ordering: .relaxed) {
          if multicastProbe.valueArrived.wait(timeout: .now() + .milliseconds(1)) == .success {
            multicastProbe.request(1)
          }
        }
      default:
        for i in 1...8_000 where i % 4 == 0 { subject.send(2 * Self.stride + i) }
      }
    }
    #expect(returned)
    for probe in shareProbes + [buffered, multicastProbe] {
      #expect(probe.overlaps.load(ordering: .relaxed) == 0)
      #expect(probe.beyondDemand.load(ordering: .relaxed) == 0)
      #expect(Self.inSendersOrder(probe.values.filter { $0 != 0 }))
      probe.cancel()
    }
    connection.cancel()
  }

  // MARK: A call's work

  /// A thread requesting `.max(1)` again and again on a subscriber of a subject with nothing
  /// queued, while another thread's `send` holds the turn: each request queues a drain for the
  /// holder. The holder's `send` must return after bounded work, not run drains until the
  /// requesting thread stops.
  @Test("a sender's call is not held by another thread's stream of requests")
  func requestStreamDoesNotHoldASender() async {
    var heldUntilTheEnd = 0
    let rounds = 5
    for _ in 0..<rounds {
      let subject = PassthroughSubject<Int, Never>()
      let inside = DispatchSemaphore(value: 0)
      let release = DispatchSemaphore(value: 0)
      let slow = subject.sink { _ in
        inside.signal()
        _ = release.wait(timeout: .now() + 10)
      }
      let pulled = Probe<Int>(initialDemand: .none)
      subject.subscribe(pulled)
      let sendReturned = Atomic<Bool>(false)
      let requestsAfterRelease = Atomic<Int>(0)
      let limit = 300_000
      let returned = await allReturn(threads: 2, deadline: .seconds(600)) { index in
        if index == 0 {
          subject.send(1)
          sendReturned.store(true, ordering: .sequentiallyConsistent)
          return
        }
        inside.wait()
        release.signal()
        var count = 0
        while count < limit, !sendReturned.load(ordering: .relaxed) {
          pulled.subscription?.request(.max(1))
          count += 1
        }
        requestsAfterRelease.store(count, ordering: .relaxed)
      }
      #expect(returned)
      if requestsAfterRelease.load(ordering: .relaxed) == limit { heldUntilTheEnd += 1 }
      print(
        "requestStream: the sender's call ran while "
          + "\(requestsAfterRelease.load(ordering: .relaxed)) requests were made (limit \(limit))")
      pulled.cancel()
      withExtendedLifetime(slow) {}
    }
    #expect(
      heldUntilTheEnd == 0, "\(heldUntilTheEnd) of \(rounds) sends ran until the requests stopped")
  }

  // MARK: deinit re-entrancy

  /// Values sent from inside a delivery are queued for the turn; the turn's queue must not be
  /// the place where a delivered value is last released under the subject's lock — its
  /// `deinit` reads the subject's `value`.
  @Test("values queued from inside a delivery whose deinit reads the subject")
  func queuedValuesDeinitReadsTheSubject() async {
    await #expect(processExitsWith: .success) {
      final class Token: @unchecked Sendable {
        // Safety: set once before the token is sent.
        var onDeinit: (() -> Void)?
        deinit { onDeinit?() }
      }
      let subject = CurrentValueSubject<Token?, Never>(nil)
      let reads = Atomic<Int>(0)
      func token() -> Token {
        let token = Token()
        token.onDeinit = {
          _ = subject.value
          reads.add(1, ordering: .relaxed)
        }
        return token
      }
      var depth = 0
      let sink = subject.sink { value in
        guard value != nil, depth == 0 else { return }
        depth += 1
        subject.send(token())
        subject.send(token())
        subject.send(nil)
      }
      subject.send(token())
      withExtendedLifetime(sink) {}
      guard reads.load(ordering: .relaxed) == 3 else { exit(2) }
    }
  }

  /// The same with two threads sending tokens whose `deinit` reads the subject (values
  /// handed over to the turn on grants).
  @Test("values handed over by other threads whose deinit reads the subject")
  func handedOverValuesDeinitReadsTheSubject() async {
    await #expect(processExitsWith: .success) {
      final class Token: @unchecked Sendable {
        let probe: Probe<Int>
        init(_ probe: Probe<Int>) { self.probe = probe }
        deinit { probe.cancel() }  // cancels an unrelated subscription to the subject
      }
      let subject = PassthroughSubject<Token, Never>()
      let sink = subject.sink { _ in usleep(10) }
      let done = DispatchSemaphore(value: 0)
      for _ in 0..<2 {
        Thread.detachNewThread {
          for _ in 0..<2_000 {
            let probe = Probe<Int>(initialDemand: .none)
            subject.map { _ in 0 }.subscribe(probe)
            subject.send(Token(probe))
          }
          done.signal()
        }
      }
      done.wait()
      done.wait()
      withExtendedLifetime(sink) {}
    }
  }

  /// A value owed to a subscriber without demand is replaced by a newer one; the old one's
  /// `deinit` cancels that subscription (a value that owns its subscription's teardown).
  @Test("an owed value replaced under the conduit whose deinit cancels the subscription")
  func replacedOwedValueDeinitCancels() async {
    await #expect(processExitsWith: .success) {
      final class Token: @unchecked Sendable {
        // Safety: set once before the token is sent.
        var onDeinit: (() -> Void)?
        deinit { onDeinit?() }
      }
      let probe = Probe<Token>(initialDemand: .none)
      func makeSubject() -> CurrentValueSubject<Token, Never> {
        let first = Token()
        first.onDeinit = { probe.cancel() }
        return CurrentValueSubject<Token, Never>(first)
      }
      let subject = makeSubject()
      subject.subscribe(probe)
      subject.send(Token())  // no demand: owed now, `first` released
      probe.request(1)
      guard probe.values.count <= 1 else { exit(2) }
    }
  }

  /// A weak reference that can live in an array.
  struct WeakRef<T: AnyObject>: @unchecked Sendable {
    // Safety: read only after the threads that made it have returned.
    weak var value: T?
    init(_ value: T) { self.value = value }
  }
}
