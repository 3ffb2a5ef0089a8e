import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// Adversarial tests of the attach-end drain held through the subject's turn
/// (`Conduit.attachEnded` → `SubjectCore.withReplayTurn`) and of a multicast connection that
/// holds a Sluice subject's core strongly (`SubjectSubscriber`).
@Suite("Liveness, attacked: attach-end drains and connections to subjects", .onThreadsOfTheirOwn)
struct AttachEndAdversaryTests {
  typealias P = ParkingAdversaryTests
  typealias Attacher = ParkingAdversaryTests.Attacher
  typealias PMeter = ParkingAdversaryTests.PMeter
  static var allowance: Int { DeliveryContext.allowancePerCall }

  // MARK: Connections to subjects

  /// A publisher that keeps its subscribers and gives them their subscription only when told.
  final class LatePublisher: Publisher, @unchecked Sendable {
    // Safety: `subscribers` only under `lock`.
    typealias Output = Token
    typealias Failure = Never
    let lock = NSLock()
    var subscribers: [AnySubscriber<Token, Never>] = []
    func receive<S: Subscriber>(subscriber: S) where S.Input == Token, S.Failure == Never {
      lock.withLock { subscribers.append(AnySubscriber(subscriber)) }
    }
    func take() -> [AnySubscriber<Token, Never>] {
      lock.withLock {
        defer { subscribers = [] }
        return subscribers
      }
    }
  }

  final class Token: @unchecked Sendable {
    let id: Int
    init(_ id: Int) { self.id = id }
  }

  final class Tracked: Subscription, @unchecked Sendable {
    // Safety: vars only under `lock`.
    let lock = NSLock()
    var requested = Subscribers.Demand.none
    var cancels = 0
    func request(_ demand: Subscribers.Demand) { lock.withLock { requested += demand } }
    func cancel() { lock.withLock { cancels += 1 } }
    var snapshot: (Subscribers.Demand, Int) { lock.withLock { (requested, cancels) } }
  }

  /// The connection's subscription arrives after the multicast's subject died (an upstream
  /// that subscribes asynchronously: `subscribe(on:)`, a network publisher). Combine's
  /// connection then finds its (weak) subject gone: it asks the upstream for nothing and
  /// forwards nothing. Does Sluice's, holding the dead subject's core, ask for `.unlimited`
  /// and keep the values it then receives?
  @Test("a connection whose subscription arrives after its subject died", arguments: [true, false])
  func lateSubscriptionAfterSubjectDied(current: Bool) {
    let upstream = LatePublisher()
    weak var weakSubject: AnyObject?
    var connection: (any Cancellable)?
    do {
      if current {
        let subject = CurrentValueSubject<Token, Never>(Token(0))
        weakSubject = subject
        let multicast = upstream.multicast(subject: subject)
        let sink = multicast.sink { _ in }  // a subscriber that requested (.unlimited)
        connection = multicast.connect()
        sink.cancel()
      } else {
        let subject = PassthroughSubject<Token, Never>()
        weakSubject = subject
        let multicast = upstream.multicast(subject: subject)
        let sink = multicast.sink { _ in }
        connection = multicast.connect()
        sink.cancel()
      }
    }
    #expect(weakSubject == nil, "the subject died with the multicast and its subscriber")
    let subscription = Tracked()
    let subscribers = upstream.take()
    #expect(subscribers.count == 1)
    for subscriber in subscribers { subscriber.receive(subscription: subscription) }
    let (requested, cancels) = subscription.snapshot
    #expect(
      requested == .none,
      "current \(current): the dead subject's connection asked its upstream for \(requested)")
    weak var weakToken: Token?
    do {
      let token = Token(1)
      weakToken = token
      for subscriber in subscribers { _ = subscriber.receive(token) }
    }
    #expect(
      weakToken == nil,
      "current \(current): a value sent to the dead subject's connection is kept alive")
    print(
      "attachEnd: late subscription, current \(current): requested \(requested), cancels \(cancels)"
    )
    connection?.cancel()
    #expect(subscription.snapshot.1 >= 1, "the connection's cancel cancels the upstream")
    #expect(weakToken == nil, "released once the connection is cancelled")
  }

  /// The same through public operators only: `subscribe(on:)` delivers the subscription on a
  /// queue, after the multicast (and its subject) are gone; the upstream subject keeps
  /// sending. Does the upstream keep a subscriber (with demand) after the subject died?
  @Test("subscribe(on:) in front of a multicast whose subject dies before the subscription")
  func subscribeOnBeforeSubjectDies() {
    var leaks = 0
    let rounds = 20
    for _ in 0..<rounds {
      let source = PassthroughSubject<Token, Never>()
      let queue = DispatchQueue(label: "late")
      weak var weakSubject: AnyObject?
      var connection: (any Cancellable)?
      let gate = DispatchSemaphore(value: 0)
      queue.async { gate.wait() }  // the subscription waits until the subject is gone
      do {
        let subject = CurrentValueSubject<Token, Never>(Token(0))
        weakSubject = subject
        connection = source.subscribe(on: queue).multicast(subject: subject).connect()
      }
      #expect(weakSubject == nil)
      gate.signal()
      queue.sync {}  // the subscription arrives: the dead subject's core asks for .unlimited
      queue.sync {}  // which subscribe(on:) passes on on the queue
      weak var weakToken: Token?
      do {
        let token = Token(1)
        weakToken = token
        source.send(token)
      }
      if weakToken != nil { leaks += 1 }
      if source.hasSubscribers {
        print("attachEnd: subscribe(on:): the source is still subscribed")
      }
      connection?.cancel()
    }
    #expect(
      leaks == 0,
      "\(leaks)/\(rounds): a value sent after the subject died is kept alive (its core's current value)"
    )
  }

  /// The subject dies on one thread while four threads send through its connection: values
  /// in flight reach the core with no subscriber left; every call returns, the upstream is
  /// cancelled and everything is released.
  @Test("subject deinit racing upstream sends on other threads", arguments: [true, false])
  func subjectDeinitRacingSends(current: Bool) async {
    for round in 0..<40 {
      let source = PassthroughSubject<Token, Never>()
      let holder = SharedBox<AnyObject?>(nil)
      let cancellable = SharedBox<AnyCancellable?>(nil)
      weak var weakSubject: AnyObject?
      let connection: any Cancellable
      let received = Atomic<Int>(0)
      do {
        if current {
          let subject = CurrentValueSubject<Token, Never>(Token(0))
          weakSubject = subject
          let multicast = source.multicast(subject: subject)
          cancellable.withLock {
            $0 = multicast.sink { _ in received.add(1, ordering: .relaxed) }
          }
          connection = multicast.connect()
          holder.withLock { $0 = multicast }
        } else {
          let subject = PassthroughSubject<Token, Never>()
          weakSubject = subject
          let multicast = source.multicast(subject: subject)
          cancellable.withLock {
            $0 = multicast.sink { _ in received.add(1, ordering: .relaxed) }
          }
          connection = multicast.connect()
          holder.withLock { $0 = multicast }
        }
      }
      weak var lastToken: Token?
      let last = SharedBox<Token?>(nil)
      let returned = await allReturn(threads: 5, deadline: .seconds(60)) { index in
        if index == 4 {
          usleep(UInt32.random(in: 0..<2_000))
          let c = cancellable.withLock { $0.take() }
          c?.cancel()
          holder.withLock { $0 = nil }  // the multicast, and with it the subject, die here
          return
        }
        for i in 0..<500 {
          let token = Token(i)
          if i == 499 { last.withLock { $0 = token } }
          source.send(token)
        }
      }
      lastToken = last.withLock { $0 }
      last.withLock { $0 = nil }
      #expect(returned, "round \(round): every call returned")
      #expect(weakSubject == nil, "round \(round): the subject died")
      #expect(
        AttachAttackTests.eventually { !source.hasSubscribers },
        "round \(round) current \(current): the source still has the connection after the subject died"
      )
      #expect(
        AttachAttackTests.eventually { lastToken == nil },
        "round \(round) current \(current): the last value is still alive")
      connection.cancel()
    }
  }

  /// One CurrentValueSubject as the subject of two multicasts (two upstreams); the subject
  /// dies: both upstreams lose their subscriber.
  @Test("one subject connected to two upstreams dies")
  func oneSubjectTwoUpstreams() {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<Int, Never>()
    weak var weakSubject: CurrentValueSubject<Int, Never>?
    var connections: [any Cancellable] = []
    var values: [Int] = []
    do {
      let subject = CurrentValueSubject<Int, Never>(0)
      weakSubject = subject
      let ma = a.multicast(subject: subject)
      let mb = b.multicast(subject: subject)
      connections.append(ma.connect())
      connections.append(mb.connect())
      let sink = subject.sink { values.append($0) }
      a.send(1)
      b.send(2)
      sink.cancel()
    }
    #expect(values == [0, 1, 2])
    #expect(weakSubject == nil)
    #expect(!a.hasSubscribers, "upstream a still subscribed after the subject died")
    #expect(!b.hasSubscribers, "upstream b still subscribed after the subject died")
    for c in connections { c.cancel() }
  }

  /// share() of a chain of subjects, with subscribers cancelled from several threads while
  /// four threads send; autoconnect reconnects many times. Everything returns and is released.
  @Test("share() of a subject chain cancelled from several threads, reconnecting")
  func shareChainCancelledFromSeveralThreads() async {
    let source = PassthroughSubject<Int, Never>()
    let middle = CurrentValueSubject<Int, Never>(-1)
    let link = source.subscribe(middle)
    let shared = middle.map { $0 }.share()
    let live = Atomic<Int>(0)
    let afterCancel = Atomic<Int>(0)
    let stop = Atomic<Bool>(false)
    let returned = await allReturn(threads: 8, deadline: .seconds(120)) { index in
      if index < 4 {
        for i in 0..<20_000 { source.send(index * 1_000_000 + i) }
        return
      }
      for _ in 0..<400 {
        if stop.load(ordering: .relaxed) { break }
        let cancelled = Atomic<Bool>(false)
        let late = Atomic<Int>(0)
        let c = shared.sink { _ in
          if cancelled.load(ordering: .acquiring) { late.add(1, ordering: .relaxed) }
        }
        defer { afterCancel.add(late.load(ordering: .relaxed) > 1 ? 1 : 0, ordering: .relaxed) }
        live.add(1, ordering: .relaxed)
        usleep(UInt32.random(in: 0..<300))
        let sc = Shared(c)
        _ = AttachAttackTests.start {
          sc.value.cancel()
          cancelled.store(true, ordering: .releasing)
        }.wait(timeout: .now() + 30)
      }
    }
    stop.store(true, ordering: .relaxed)
    #expect(returned, "every call returned")
    #expect(afterCancel.load(ordering: .relaxed) == 0, "sinks with 2+ values after cancel")
    link.cancel()
    withExtendedLifetime(shared) {}
  }
}

// MARK: The attach-end drain

extension AttachEndAdversaryTests {
  /// Whether `me`'s value is being delivered by its subscribe call as the attach ends (on the
  /// subscribing thread, after `receive(subscription:)` returned): the attach-end drain.
  static func inAttachEndDrain(_ me: Attacher) -> Bool {
    me.lock.withLock {
      !me.inside && me.attachingThread.map { pthread_equal($0, pthread_self()) != 0 } == true
    }
  }

  /// A subscriber (unmetered) that stays 2 ms inside `receive(subscription:)`.
  final class SlowSubscriber: Subscriber, @unchecked Sendable {
    // Safety: vars only under `lock`.
    typealias Input = Int
    typealias Failure = Never
    let lock = NSLock()
    var values: [Int] = []
    var subscription: (any Subscription)?
    func receive(subscription: any Subscription) {
      lock.withLock { self.subscription = subscription }
      subscription.request(.unlimited)
      usleep(2_000)
    }
    func receive(_ input: Int) -> Subscribers.Demand {
      lock.withLock { values.append(input) }
      return .none
    }
    func receive(completion: Subscribers.Completion<Never>) {}
    var snapshot: [Int] { lock.withLock { values } }
    func cancel() { lock.withLock { subscription.take() }?.cancel() }
  }

  enum DrainAction: Int, CaseIterable, Sendable {
    case sends, cancelsItself, subscribesAnother, completesSubject
  }

  /// Eight subscribers attach at once to one subject while six threads send; each attach
  /// stays inside until the senders stall (turns parked at its gate), then, in its attach-end
  /// drain (on its first value there), does `action`: sends 30 values into the subject,
  /// cancels itself, subscribes another slow subscriber, or (one of them) completes the
  /// subject. Every call returns; no send delivers more than 64 values of others to one
  /// subscriber; per sender, in order; the rules.
  @Test(
    "eight attaches at once, actions inside their attach-end drains",
    arguments: DrainAction.allCases)
  func eightAttachesActingInDrain(_ action: DrainAction) async {
    for round in 0..<4 {
      let subject = PassthroughSubject<Int, Never>()
      let first = subject.sink { _ in }  // unmetered: the eight attachers take the 8 slots
      let sent = P.Counter()
      let acted = Atomic<Int>(0)
      let extras = SharedBox<[SlowSubscriber]>([])
      let drained = (0..<8).map { _ in P.Counter() }
      let sharedDrained = UncheckedSendable(drained)
      // Others' values the subscribe call delivered while attaching, and as its attach ended.
      let phases = ((0..<8).map { _ in P.Counter() }, (0..<8).map { _ in P.Counter() })
      let sharedPhases = UncheckedSendable(phases)
      let attachers = (0..<8).map { k in
        Attacher(
          id: k,
          whileAttaching: { _, subscription in
            subscription.request(.unlimited)
            P.waitForStall(sent, limit: 1)
            usleep(UInt32.random(in: 0..<2_000))
          },
          onValue: { me, v in
            let onSubscriber = me.lock.withLock {
              me.attachingThread.map { pthread_equal($0, pthread_self()) != 0 } == true
                ? (me.inside ? 1 : 2) : 0
            }
            if onSubscriber > 0, P.senderOf(v) < 6 {
              (onSubscriber == 1 ? sharedPhases.value.0 : sharedPhases.value.1)[k].increment()
            }
            guard Self.inAttachEndDrain(me) else { return }
            guard me.lock.withLock({ me.afterCancel == 0 && !me.cancelReturned }) else { return }
            sharedDrained.value[k].increment()
            let n = sharedDrained.value[k].value
            switch action {
            case .sends:
              guard n == 1 else { return }
              acted.add(1, ordering: .relaxed)
              for i in 0..<30 { subject.send(P.value(10 + k, i)) }
            case .cancelsItself:
              guard n == 5 else { return }
              acted.add(1, ordering: .relaxed)
              me.cancel()
            case .subscribesAnother:
              guard n == 1 else { return }
              acted.add(1, ordering: .relaxed)
              let extra = SlowSubscriber()
              extras.withLock { $0.append(extra) }
              subject.subscribe(extra)
            case .completesSubject:
              guard k == 3 || k == 5, n == 3 else { return }
              acted.add(1, ordering: .relaxed)
              subject.send(completion: .finished)
            }
          })
      }
      let shared = UncheckedSendable(attachers)
      // Its own sends (sender 10 + k) are not others' values.
      let subscribeMeters = UncheckedSendable((0..<8).map { PMeter(sender: 10 + $0) })
      let perSender = 1_000
      let (returned, worst) = await P.run(
        senders: 6, perSender: perSender, extra: 8, send: { _, v in subject.send(v) }, sent: sent
      ) { i in
        usleep(UInt32.random(in: 0..<3_000))
        let meter = subscribeMeters.value[i]
        meter.install()
        meter.call { subject.subscribe(shared.value[i]) }
        meter.uninstall()
      }
      let label = "\(action) round \(round)"
      // The subscribe calls: their allowance while attaching plus, as they end, the 32 queued.
      let worstSubscribe = subscribeMeters.value.map { $0.worst.max() ?? 0 }
      print(
        "attachEnd: \(label): subscribe calls' worst \(worstSubscribe); while attaching \(phases.0.map(\.value)), at the end \(phases.1.map(\.value))"
      )
      for (k, w) in worstSubscribe.enumerated() {
        #expect(
          w <= Self.allowance + TurnWaiter.grantsPerTurn, "\(label): subscribe call \(k): \(w)")
      }
      #expect(returned, "\(label): every call returned")
      for report in PMeter.reports.withLock({ $0 }) { print("attachEnd: \(label): \(report)") }
      PMeter.reports.withLock { $0 = [] }
      print(
        "attachEnd: \(label): acted \(acted.load(ordering: .relaxed)), drained \(drained.map(\.value)), worst \(worst)"
      )
      for s in 0..<8 {
        #expect(worst[s] <= Self.allowance, "\(label): subscriber slot \(s): worst \(worst[s])")
      }
      for extra in extras.withLock({ $0 }) {
        P.expectOrder(
          extra.snapshot, senders: 0..<6, perSender: perSender,
          complete: action != .completesSubject, label + " extra")
        extra.cancel()
      }
      for a in attachers {
        let values = a.snapshot
        if action == .sends || action == .subscribesAnother {
          P.expectOrder(values, senders: 0..<6, perSender: perSender, complete: true, label)
        } else {
          for sender in 0..<6 {
            let indices = values.filter { P.senderOf($0) == sender }.map { $0 % 1_000_000 }
            guard let start = indices.first else { continue }
            #expect(
              indices == Array(start..<(start + indices.count)),
              "\(label) sender \(sender): gap \(P.firstGap(indices))")
          }
        }
        if action == .sends {
          for k in 0..<8 {
            let own = values.filter { P.senderOf($0) == 10 + k }
            #expect(
              own.isEmpty || own == (0..<30).map { P.value(10 + k, $0) }, "\(label): inside \(k)")
          }
        }
        a.expectRules(label)
        a.cancel()
      }
      withExtendedLifetime(first) {}
    }
  }

  /// CurrentValueSubject: an attach ends while other threads ask for replays of a lazy
  /// subscriber (one value per request): one thread requests over and over meanwhile, and the
  /// attacher, in its attach-end drain, makes a request of its own and has a third thread
  /// make one (and waits for it) — replays running beside a turn parked at its gate, or
  /// beside the drain. The lazy subscriber's values: per sender strictly increasing.
  @Test("CurrentValueSubject: replays racing an attach-end drain")
  func replaysRacingAttachEndDrain() async {
    var bad = 0
    let rounds = 8
    for round in 0..<rounds {
      let subject = CurrentValueSubject<Int, Never>(-1)
      let first = subject.sink { PMeter.received($0, by: 0) }
      let lazy = Attacher(id: 2) { _, _ in }
      subject.subscribe(lazy)
      let lazySubscription: @Sendable () -> (any Subscription)? = {
        lazy.lock.withLock { lazy.subscription }
      }
      let sent = P.Counter()
      let attaching = Atomic<Bool>(false)
      let done = Atomic<Bool>(false)
      let attacher = Attacher(
        id: 1,
        whileAttaching: { _, subscription in
          subscription.request(.unlimited)
          attaching.store(true, ordering: .relaxed)
          P.waitForStall(sent, limit: 1)
        },
        onValue: { me, _ in
          guard Self.inAttachEndDrain(me) else { return }
          let n = me.lock.withLock { me.values.count }
          guard n % 8 == 1 else { return }
          lazySubscription()?.request(.max(1))
          let t = AttachAttackTests.start { lazySubscription()?.request(.max(1)) }
          _ = t.wait(timeout: .now() + 20)
        })
      let perSender = 800
      let (returned, _) = await P.run(
        senders: 4, perSender: perSender, extra: 2, send: { _, v in subject.send(v) }, sent: sent
      ) { i in
        if i == 0 {
          subject.subscribe(attacher)
          done.store(true, ordering: .relaxed)
        } else {
          while !attaching.load(ordering: .relaxed) { usleep(50) }
          while !done.load(ordering: .relaxed) {
            lazySubscription()?.request(.max(1))
            usleep(UInt32.random(in: 0..<100))
          }
        }
      }
      #expect(returned, "round \(round): every call returned")
      let values = lazy.snapshot
      var ok = true
      for sender in 0..<4 {
        let indices = values.filter { P.senderOf($0) == sender }.map { $0 % 1_000_000 }
        if !P.isAscending(indices) {
          ok = false
          print("attachEnd: replays round \(round) sender \(sender): \(indices.prefix(20))")
        }
      }
      if !ok { bad += 1 }
      P.expectOrder(
        attacher.snapshot, senders: 0..<4, perSender: perSender, complete: true, "r\(round)")
      lazy.expectRules("round \(round) lazy")
      attacher.expectRules("round \(round)")
      attacher.cancel()
      lazy.cancel()
      withExtendedLifetime(first) {}
    }
    #expect(bad == 0, "lazy got duplicated or reordered values in \(bad)/\(rounds) rounds")
  }

  /// A demand-limited attacher: `.max(10)` inside its attach (the senders stall at its
  /// gate); as its attach-end drain starts, another thread asks for 200 more and the subscribe
  /// call waits for that request to return. Per sender ascending, no duplicate; bounds.
  @Test(
    "a demand-limited attacher topped up from another thread during its drain",
    arguments: [false, true])
  func demandTopUpDuringDrain(current: Bool) async {
    for round in 0..<6 {
      let passthrough = PassthroughSubject<Int, Never>()
      let currentSubject = CurrentValueSubject<Int, Never>(-1)
      let send: @Sendable (Int) -> Void = { v in
        if current { currentSubject.send(v) } else { passthrough.send(v) }
      }
      let first =
        current
        ? currentSubject.sink { PMeter.received($0, by: 0) }
        : passthrough.sink { PMeter.received($0, by: 0) }
      let sent = P.Counter()
      let attacher = Attacher(
        id: 1,
        whileAttaching: { _, subscription in
          subscription.request(.max(10))
          P.waitForStall(sent, limit: 1)
        },
        onValue: { me, _ in
          guard Self.inAttachEndDrain(me), me.lock.withLock({ me.values.count }) == 2 else {
            return
          }
          let s = Shared(me.lock.withLock { me.subscription })
          _ = AttachAttackTests.start { s.value?.request(.max(200)) }.wait(timeout: .now() + 20)
        })
      let (returned, worst) = await P.run(
        senders: 4, perSender: 1_000, extra: 1, send: { _, v in send(v) }, sent: sent
      ) { _ in
        if current { currentSubject.subscribe(attacher) } else { passthrough.subscribe(attacher) }
      }
      let label = "current \(current) round \(round)"
      #expect(returned, "\(label): every call returned")
      for k in 0..<2 { #expect(worst[k] <= Self.allowance, "\(label): slot \(k): \(worst[k])") }
      let values = attacher.snapshot.filter { $0 >= 0 }
      #expect(values.count <= 210, "\(label): \(values.count) values for a demand of 210")
      for sender in 0..<4 {
        let indices = values.filter { P.senderOf($0) == sender }.map { $0 % 1_000_000 }
        #expect(P.isAscending(indices), "\(label) sender \(sender): \(indices.prefix(20))")
      }
      attacher.expectRules(label)
      attacher.cancel()
      withExtendedLifetime(first) {}
    }
  }
}

// MARK: Nested turns, @Published, share()

extension AttachEndAdversaryTests {
  enum Nesting: String, CaseIterable, Sendable { case insideOtherSubject, insideSameSubject }

  /// Slow attaches made from inside a delivery: of another subject T (the subscribing thread
  /// holds T's turn), or of the same subject S (it holds S's turn: its attach-end drain runs
  /// nested). An unmetered fifth thread sends the values whose delivery subscribes (every
  /// 300th); in its attach-end drain each attacher sends into T and into S. Four metered
  /// threads send into S: no send delivers more than 64 values of others to one subscriber.
  @Test("slow attaches from inside a delivery, drains sending", arguments: Nesting.allCases)
  func attachesFromInsideDelivery(_ nesting: Nesting) async {
    for round in 0..<4 {
      let s = PassthroughSubject<Int, Never>()
      let t = PassthroughSubject<Int, Never>()
      let tCount = Atomic<Int>(0)
      let sent = P.Counter()
      let attachers = SharedBox<[Attacher]>([])
      let made = Atomic<Int>(0)
      let makeAttacher: @Sendable () -> Attacher = {
        let id = 1 + made.add(1, ordering: .relaxed).newValue % 6
        let drained = P.Counter()
        return Attacher(
          id: id,
          whileAttaching: { _, subscription in
            subscription.request(.unlimited)
            P.waitForStall(sent, limit: 0.2)
          },
          onValue: { me, _ in
            guard Self.inAttachEndDrain(me) else { return }
            drained.increment()
            guard drained.value <= 3 else { return }
            t.send(P.value(7, 0))
            s.send(P.value(6, drained.value))
          })
      }
      let subscribeOne: @Sendable () -> Void = {
        let a = makeAttacher()
        attachers.withLock { $0.append(a) }
        s.subscribe(a)
      }
      let first = s.sink { v in
        if nesting == .insideSameSubject, P.senderOf(v) == 9, v % 300 == 0 { subscribeOne() }
      }
      let tSink = t.sink { v in
        tCount.add(1, ordering: .relaxed)
        if nesting == .insideOtherSubject, P.senderOf(v) == 9, v % 300 == 0 { subscribeOne() }
      }
      let perSender = 1_000
      let (returned, worst) = await P.run(
        senders: 4, perSender: perSender, extra: 1, send: { _, v in s.send(v) }, sent: sent
      ) { _ in
        for i in 0..<1_500 {
          if nesting == .insideOtherSubject { t.send(P.value(9, i)) } else { s.send(P.value(9, i)) }
        }
      }
      let label = "\(nesting) round \(round)"
      #expect(returned, "\(label): every call returned")
      for report in PMeter.reports.withLock({ $0 }) { print("attachEnd: \(label): \(report)") }
      PMeter.reports.withLock { $0 = [] }
      print("attachEnd: \(label): \(made.load(ordering: .relaxed)) attaches, worst \(worst)")
      for k in 1..<7 { #expect(worst[k] <= Self.allowance, "\(label): slot \(k): \(worst[k])") }
      for a in attachers.withLock({ $0 }) {
        P.expectOrder(a.snapshot, senders: 0..<4, perSender: perSender, complete: true, label)
        a.expectRules(label)
        a.cancel()
      }
      attachers.withLock { $0 = [] }
      withExtendedLifetime((first, tSink)) {}
    }
  }

  /// @Published: four threads set the property while four subscribers attach slowly to `$x`;
  /// in its attach-end drain each sets the property itself (feedback) a few times.
  @Test("@Published: slow attaches whose drains set the property")
  func publishedDrainsSetting() async {
    for round in 0..<4 {
      let model = P.Model()
      let first = model.$x.sink { _ in }
      let willChange = Atomic<Int>(0)
      let c = model.objectWillChange.sink { _ in willChange.add(1, ordering: .relaxed) }
      let sent = P.Counter()
      let attachers = (0..<4).map { k in
        let drained = P.Counter()
        return Attacher(
          id: k,
          whileAttaching: { _, subscription in
            subscription.request(.unlimited)
            P.waitForStall(sent, limit: 1)
          },
          onValue: { me, _ in
            guard Self.inAttachEndDrain(me) else { return }
            drained.increment()
            if drained.value <= 5 { model.x = P.value(10 + k, drained.value) }
          })
      }
      let shared = UncheckedSendable(attachers)
      // `$x` read once: concurrent reads of a projected value are an exclusivity race.
      let publisher = Shared(model.$x)
      let perSender = 1_000
      let (returned, worst) = await P.run(
        senders: 4, perSender: perSender, extra: 4, send: { _, v in model.x = v }, sent: sent
      ) { i in publisher.value.subscribe(shared.value[i]) }
      let label = "round \(round)"
      #expect(returned, "\(label): every call returned")
      print("attachEnd: published \(label): worst \(worst)")
      for k in 0..<4 { #expect(worst[k] <= Self.allowance, "\(label): slot \(k): \(worst[k])") }
      for a in attachers {
        P.expectOrder(
          Array(a.snapshot.dropFirst()), senders: 0..<4, perSender: perSender, complete: true,
          label)
        a.expectRules(label)
        a.cancel()
      }
      withExtendedLifetime((first, c)) {}
    }
  }

  /// share() in front: six subscribers attach slowly to the share (its subject) while four
  /// threads send upstream; two more threads cancel attachers while their attach-end drains
  /// run (from their own `receive` on the subscribing thread, and from a third thread).
  @Test("share() in front: slow attaches cancelled during their attach-end drains")
  func shareAttachesCancelledInDrain() async {
    for round in 0..<4 {
      weak var weakLast: Attacher?
      let source = PassthroughSubject<Int, Never>()
      let shared = source.share()
      let first = shared.sink { _ in }
      let sent = P.Counter()
      do {
        let attachers = (0..<6).map { k in
          let drained = P.Counter()
          return Attacher(
            id: k,
            whileAttaching: { _, subscription in
              subscription.request(.unlimited)
              P.waitForStall(sent, limit: 1)
            },
            onValue: { me, _ in
              guard Self.inAttachEndDrain(me) else { return }
              drained.increment()
              guard drained.value == 4 else { return }
              if k % 2 == 0 {
                me.cancel()
              } else {
                let sme = Shared(me)
                _ = AttachAttackTests.start { sme.value.cancel() }.wait(timeout: .now() + 20)
              }
            })
        }
        weakLast = attachers.last
        let sharedAttachers = UncheckedSendable(attachers)
        let (returned, worst) = await P.run(
          senders: 4, perSender: 1_000, extra: 6, send: { _, v in source.send(v) }, sent: sent
        ) { i in shared.subscribe(sharedAttachers.value[i]) }
        let label = "round \(round)"
        #expect(returned, "\(label): every call returned")
        print("attachEnd: share \(label): worst \(worst)")
        for k in 0..<6 { #expect(worst[k] <= Self.allowance, "\(label): slot \(k): \(worst[k])") }
        for a in attachers {
          let values = a.snapshot
          for sender in 0..<4 {
            let indices = values.filter { P.senderOf($0) == sender }.map { $0 % 1_000_000 }
            guard let start = indices.first else { continue }
            #expect(
              indices == Array(start..<(start + indices.count)),
              "\(label) sender \(sender): gap \(P.firstGap(indices))")
          }
          a.expectRules(label)
          a.cancel()
        }
      }
      #expect(AttachAttackTests.eventually { weakLast == nil }, "round \(round): released")
      withExtendedLifetime(first) {}
    }
  }
}
