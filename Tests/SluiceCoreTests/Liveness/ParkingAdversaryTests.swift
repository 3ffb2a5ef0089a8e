import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// Adversarial tests of turn parking (a subject's turn stops where it would end or be handed
/// on while a subscriber it queued 32+ values for is still attaching): shapes apps write.
@Suite("Liveness, attacked: turn parking for attaching subscribers", .onThreadsOfTheirOwn)
struct ParkingAdversaryTests {
  // MARK: Meter: per sending thread, per subscriber, the values of others one call delivered.

  final class PMeter: @unchecked Sendable {
    // Safety: only the sending thread touches it (found through its thread-local storage).
    let sender: Int
    var others = [Int](repeating: 0, count: 8)
    var worst = [Int](repeating: 0, count: 8)
    init(sender: Int) { self.sender = sender }

    static let key: pthread_key_t = {
      var key = pthread_key_t()
      pthread_key_create(&key, nil)
      return key
    }()

    static var current: PMeter? {
      guard let raw = pthread_getspecific(key) else { return nil }
      return Unmanaged<PMeter>.fromOpaque(raw).takeUnretainedValue()
    }

    func install() { pthread_setspecific(Self.key, Unmanaged.passUnretained(self).toOpaque()) }
    func uninstall() { pthread_setspecific(Self.key, nil) }

    /// The others' values the call in progress delivered, per subscriber slot (for reports).
    var log: [[Int]] = Array(repeating: [], count: 8)
    static let reports = SharedBox<[String]>([])

    /// The values of others the call in progress delivered to each subscriber object.
    var perObject: [ObjectIdentifier: Int] = [:]
    /// The most values of others one call delivered to one subscriber object.
    var worstPerObject = 0

    func call(_ body: () -> Void) {
      for i in others.indices { others[i] = 0 }
      for i in log.indices { log[i].removeAll(keepingCapacity: true); objects[i].removeAll() }
      perObject.removeAll(keepingCapacity: true)
      body()
      worstPerObject = max(worstPerObject, perObject.values.max() ?? 0)
      for i in others.indices {
        worst[i] = max(worst[i], others[i])
        if others[i] > ParkingAdversaryTests.allowance {
          let byOthers = Dictionary(grouping: log[i], by: { ParkingAdversaryTests.senderOf($0) })
            .map {
              "s\($0.key): \($0.value.count) [\($0.value.first! % 1_000_000)...\($0.value.last! % 1_000_000)]"
            }
            .sorted()
          let distinct = Set(log[i]).count
          Self.reports.withLock {
            $0.append(
              "sender \(sender) slot \(i): \(others[i]) others (\(distinct) distinct values, \(objects[i].count) subscriber objects): \(byOthers)"
            )
          }
        }
      }
    }

    /// `value` reached subscriber `subscriber` on the calling thread.
    var objects: [Set<ObjectIdentifier>] = Array(repeating: [], count: 8)
    /// Whether each other's value was delivered inside the subscriber's attach (on the
    /// subscribing thread) — never for a sender's call — or at the turn's resumption.
    static func received(
      _ value: Int, by subscriber: Int, object: AnyObject? = nil, spinNanos: UInt64 = 5_000
    ) {
      if let meter = current, senderOf(value) != meter.sender {
        meter.others[subscriber] += 1
        meter.log[subscriber].append(value)
        if let object {
          meter.objects[subscriber].insert(ObjectIdentifier(object))
          meter.perObject[ObjectIdentifier(object), default: 0] += 1
        }
      }
      let end = DispatchTime.now().uptimeNanoseconds + spinNanos
      while DispatchTime.now().uptimeNanoseconds < end {}
    }
  }

  static func value(_ sender: Int, _ index: Int) -> Int { (sender + 1) * 1_000_000 + index }
  static func senderOf(_ value: Int) -> Int { value / 1_000_000 - 1 }
  static let allowance = DeliveryContext.allowancePerCall

  final class Counter: Sendable {
    let atomic = Atomic<Int>(0)
    var value: Int { atomic.load(ordering: .relaxed) }
    func increment() { atomic.add(1, ordering: .relaxed) }
  }

  // MARK: A recording subscriber with a slow attach.

  final class Attacher: Subscriber, @unchecked Sendable {
    // Safety: `lock` guards every var; closures set at init.
    typealias Input = Int
    typealias Failure = Never
    let id: Int
    let lock = NSLock()
    var values: [Int] = []
    var completions = 0
    var inside = false
    var attachingThread: pthread_t?
    var otherThreadWhileInside = 0
    var afterCancel = 0
    var afterCompletion = 0
    var cancelReturned = false
    var subscription: (any Subscription)?
    let busy = Atomic<Bool>(false)
    let overlaps = Atomic<Int>(0)
    let whileAttaching: @Sendable (Attacher, any Subscription) -> Void
    let onValue: @Sendable (Attacher, Int) -> Void
    var perValue = Subscribers.Demand.none

    init(
      id: Int,
      whileAttaching: @escaping @Sendable (Attacher, any Subscription) -> Void,
      onValue: @escaping @Sendable (Attacher, Int) -> Void = { _, _ in }
    ) {
      self.id = id
      self.whileAttaching = whileAttaching
      self.onValue = onValue
    }

    func receive(subscription: any Subscription) {
      lock.withLock {
        self.subscription = subscription
        inside = true
        attachingThread = pthread_self()
      }
      whileAttaching(self, subscription)
      lock.withLock { inside = false }
    }

    func receive(_ input: Int) -> Subscribers.Demand {
      if busy.exchange(true, ordering: .acquiringAndReleasing) {
        overlaps.add(1, ordering: .relaxed)
      }
      lock.withLock {
        if inside, attachingThread != pthread_self() { otherThreadWhileInside += 1 }
        if cancelReturned { afterCancel += 1 }
        if completions > 0 { afterCompletion += 1 }
        values.append(input)
      }
      busy.store(false, ordering: .releasing)
      PMeter.received(input, by: id, object: self)
      onValue(self, input)
      return perValue
    }

    func receive(completion: Subscribers.Completion<Never>) {
      if busy.exchange(true, ordering: .acquiringAndReleasing) {
        overlaps.add(1, ordering: .relaxed)
      }
      lock.withLock {
        if inside, attachingThread != pthread_self() { otherThreadWhileInside += 1 }
        if cancelReturned { afterCancel += 1 }
        completions += 1
      }
      busy.store(false, ordering: .releasing)
    }

    func cancel() {
      guard let subscription = lock.withLock({ self.subscription }) else { return }
      subscription.cancel()
      lock.withLock {
        cancelReturned = true
        self.subscription = nil
      }
    }

    var snapshot: [Int] { lock.withLock { values } }

    func expectRules(_ label: String, sourceLocation: SourceLocation = #_sourceLocation) {
      let (other, afterC, afterComp, comps) = lock.withLock {
        (otherThreadWhileInside, afterCancel, afterCompletion, completions)
      }
      #expect(
        overlaps.load(ordering: .relaxed) == 0, "\(label): two signals at once",
        sourceLocation: sourceLocation)
      #expect(
        other == 0, "\(label): \(other) signals from another thread while attaching",
        sourceLocation: sourceLocation)
      // "After cancel() returns nothing new starts (at most a delivery another thread had
      // already begun finishes)": one signal may be seen after; two cannot (serial signals).
      #expect(
        afterC <= 1, "\(label): \(afterC) signals after cancel() returned",
        sourceLocation: sourceLocation)
      #expect(
        afterComp == 0, "\(label): \(afterComp) values after completion",
        sourceLocation: sourceLocation)
      #expect(comps <= 1, "\(label): \(comps) completions", sourceLocation: sourceLocation)
    }
  }

  /// Waits until `sent` has not moved for 20 ms (the senders are held: the turn parked), or
  /// `limit` seconds; returns whether it stalled.
  @discardableResult
  static func waitForStall(_ sent: Counter, limit: Double = 2) -> Bool {
    var last = -1
    let end = DispatchTime.now().uptimeNanoseconds + UInt64(limit * 1e9)
    while DispatchTime.now().uptimeNanoseconds < end {
      let now = sent.value
      if now == last { return true }
      last = now
      usleep(20_000)
    }
    return false
  }

  /// From each sender's first value on, every later one, in order (to the last if `complete`).
  static func expectOrder(
    _ values: [Int], senders: Range<Int>, perSender: Int, complete: Bool, _ label: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    for sender in senders {
      let indices = values.filter { senderOf($0) == sender }.map { $0 % 1_000_000 }
      guard let start = indices.first else { continue }
      let ok =
        indices == Array(start..<(start + indices.count))
        && (!complete || indices.last == perSender - 1)
      let message =
        "\(label) sender \(sender): \(indices.count) values from \(start), last \(indices.last ?? -1)"
        + (ok ? "" : " first gap at \(firstGap(indices))")
      #expect(
        ok, "\(message)",
        sourceLocation: sourceLocation)
    }
  }

  static func firstGap(_ indices: [Int]) -> String {
    for (a, b) in zip(indices, indices.dropFirst()) where b != a + 1 { return "\(a)->\(b)" }
    return "none"
  }

  /// Runs `senders` metered sending threads (values `value(sender, i)`) and `extra` threads
  /// running `other(index)` (index 0..<extra), which start once 100 values were sent.
  static func run(
    senders: Int, perSender: Int, extra: Int, deadline: Int = 120,
    send: @escaping @Sendable (Int, Int) -> Void,
    sent: Counter, perObject: SharedBox<Int>? = nil,
    other: @escaping @Sendable (Int) -> Void
  ) async -> (returned: Bool, worst: [Int]) {
    let meters = (0..<senders).map { PMeter(sender: $0) }
    let shared = UncheckedSendable(meters)
    let returned = await allReturn(threads: senders + extra, deadline: .seconds(deadline)) {
      index in
      if index >= senders {
        while sent.value < 100 { usleep(100) }
        other(index - senders)
        return
      }
      let meter = shared.value[index]
      meter.install()
      for i in 0..<perSender {
        meter.call { send(index, Self.value(index, i)) }
        sent.increment()
      }
      meter.uninstall()
    }
    var worst = [Int](repeating: 0, count: 8)
    for meter in meters { for i in worst.indices { worst[i] = max(worst[i], meter.worst[i]) } }
    perObject?.withLock { $0 = meters.map(\.worstPerObject).max() ?? 0 }
    return (returned, worst)
  }

  // MARK: Two attaches at once

  /// Two subscribers attach at once, on two threads, to the same subject while six threads
  /// send: one turn may park on two gates.
  @Test("two attaches at once, six senders")
  func twoAttachesAtOnce() async {
    for round in 0..<6 {
      let subject = PassthroughSubject<Int, Never>()
      let first = subject.sink { PMeter.received($0, by: 0) }
      let sent = Counter()
      let attachers = (1...2).map { id in
        Attacher(id: id) { _, subscription in
          subscription.request(.unlimited)
          Self.waitForStall(sent)
          usleep(UInt32.random(in: 0..<5_000))
        }
      }
      let shared = UncheckedSendable(attachers)
      let perSender = 1_500
      let (returned, worst) = await Self.run(
        senders: 6, perSender: perSender, extra: 2, send: { _, v in subject.send(v) }, sent: sent
      ) { i in
        if i == 1 { usleep(UInt32.random(in: 0..<3_000)) }
        subject.subscribe(shared.value[i])
      }
      #expect(returned, "round \(round): every call returned")
      print("parking: twoAttaches round \(round): worst per subscriber \(worst.prefix(3))")
      for s in 0..<3 {
        #expect(worst[s] <= Self.allowance, "round \(round): subscriber \(s): worst \(worst[s])")
      }
      for a in attachers {
        Self.expectOrder(
          a.snapshot, senders: 0..<6, perSender: perSender, complete: true,
          "round \(round) a\(a.id)")
        a.expectRules("round \(round) a\(a.id)")
        a.cancel()
      }
      withExtendedLifetime(first) {}
    }
  }

  // MARK: What the attaching subscriber does while the turn is parked

  enum InsideAction: CaseIterable, Sendable {
    case sendsMany, subscribesAnother, cancelsItself, completesSubject, sendsThenCancels
  }

  @Test("inside receive(subscription:), with the turn parked", arguments: InsideAction.allCases)
  func actionInsideAttach(_ action: InsideAction) async {
    for round in 0..<4 {
      let subject = PassthroughSubject<Int, Never>()
      let firstValues = SharedBox<[Int]>([])
      let first = subject.sink { v in
        firstValues.withLock { $0.append(v) }
        PMeter.received(v, by: 0)
      }
      let sent = Counter()
      let stalled = Atomic<Bool>(false)
      let nested = Attacher(id: 2) { _, subscription in subscription.request(.unlimited) }
      let attacher = Attacher(id: 1) { me, subscription in
        subscription.request(.unlimited)
        stalled.store(Self.waitForStall(sent), ordering: .relaxed)
        switch action {
        case .sendsMany:
          for i in 0..<200 { subject.send(Self.value(8, i)) }
        case .subscribesAnother:
          subject.subscribe(nested)
          for i in 0..<50 { subject.send(Self.value(8, i)) }
        case .cancelsItself:
          subscription.cancel()
          me.lock.withLock { me.cancelReturned = true }
        case .completesSubject:
          subject.send(completion: .finished)
        case .sendsThenCancels:
          for i in 0..<100 { subject.send(Self.value(8, i)) }
          subscription.cancel()
          me.lock.withLock { me.cancelReturned = true }
        }
      }
      let perSender = 1_500
      let (returned, worst) = await Self.run(
        senders: 4, perSender: perSender, extra: 1, send: { _, v in subject.send(v) }, sent: sent
      ) { _ in subject.subscribe(attacher) }
      let label = "\(action) round \(round)"
      #expect(returned, "\(label): every call returned")
      #expect(stalled.load(ordering: .relaxed) == true, "\(label): the senders stalled (parked)")
      print("parking: \(label): worst \(worst.prefix(3))")
      for s in 0..<3 {
        #expect(worst[s] <= Self.allowance, "\(label): subscriber \(s): \(worst[s])")
      }
      attacher.expectRules("\(label) attacher")
      nested.expectRules("\(label) nested")
      let values = attacher.snapshot
      let firsts = firstValues.withLock { $0 }
      switch action {
      case .sendsMany, .subscribesAnother:
        Self.expectOrder(values, senders: 0..<9, perSender: perSender, complete: false, label)
        Self.expectOrder(
          firsts, senders: 0..<9, perSender: perSender, complete: false, label + " first")
        let own = action == .sendsMany ? 200 : 50
        #expect(
          values.filter { Self.senderOf($0) == 8 } == (0..<own).map { Self.value(8, $0) },
          "\(label): own values")
        #expect(
          firsts.filter { Self.senderOf($0) == 8 } == (0..<own).map { Self.value(8, $0) },
          "\(label): own values, first")
        #expect(firsts.count == 4 * perSender + own, "\(label): first got \(firsts.count)")
        if action == .subscribesAnother {
          Self.expectOrder(
            nested.snapshot, senders: 0..<9, perSender: perSender, complete: false,
            label + " nested")
        }
      case .cancelsItself, .sendsThenCancels:
        #expect(
          firsts.count == 4 * perSender + (action == .sendsThenCancels ? 100 : 0),
          "\(label): first got \(firsts.count)")
      case .completesSubject:
        #expect(attacher.lock.withLock { attacher.completions } == 1, "\(label): completed")
      }
      attacher.cancel()
      nested.cancel()
      withExtendedLifetime(first) {}
    }
  }

  // MARK: Cancels while parked

  /// A third thread cancels the attaching subscription while the turn is parked; the attach
  /// then still waits a little. Nothing after cancel returns; senders go on; released.
  @Test("cancel of the attaching subscription from a third thread while parked")
  func cancelFromThirdThreadWhileParked() async {
    for round in 0..<6 {
      weak var weakAttacher: Attacher?
      let subject = PassthroughSubject<Int, Never>()
      let first = subject.sink { PMeter.received($0, by: 0) }
      let sent = Counter()
      let cancelDone = Atomic<Bool>(false)
      let stalled = Atomic<Bool>(false)
      let sentAtCancel = Atomic<Int>(0)
      let sentAfterCancel = Atomic<Int>(0)
      do {
        let attacher = Attacher(id: 1) { me, subscription in
          subscription.request(.unlimited)
          stalled.store(Self.waitForStall(sent), ordering: .relaxed)
          let canceller = AttachAttackTests.start {
            me.cancel()
            cancelDone.store(true, ordering: .releasing)
          }
          _ = canceller.wait(timeout: .now() + 20)
          sentAtCancel.store(sent.value, ordering: .relaxed)
          // Stay inside a while: the senders must go on meanwhile.
          usleep(50_000)
          sentAfterCancel.store(sent.value, ordering: .relaxed)
        }
        weakAttacher = attacher
        let (returned, worst) = await Self.run(
          senders: 4, perSender: 1_500, extra: 1, send: { _, v in subject.send(v) }, sent: sent
        ) { _ in subject.subscribe(attacher) }
        let label = "round \(round)"
        #expect(returned, "\(label): every call returned")
        #expect(stalled.load(ordering: .relaxed) == true, "\(label): stalled")
        #expect(cancelDone.load(ordering: .acquiring) == true, "\(label): cancel returned")
        let before = sentAtCancel.load(ordering: .relaxed)
        let after = sentAfterCancel.load(ordering: .relaxed)
        #expect(
          after > before,
          "\(label): senders went on after the cancel while attaching (\(before) → \(after))")
        for s in 0..<2 {
          #expect(worst[s] <= Self.allowance, "\(label): subscriber \(s): \(worst[s])")
        }
        attacher.expectRules(label)
      }
      #expect(
        AttachAttackTests.eventually { weakAttacher == nil }, "round \(round): attacher released")
      withExtendedLifetime(first) {}
    }
  }

  final class Counted: Subscriber, @unchecked Sendable {
    // Safety: `lock` guards the vars.
    typealias Input = Int
    typealias Failure = Never
    let lock = NSLock()
    var subscription: (any Subscription)?
    var cancelReturned = false
    var afterCancel = 0
    var count = 0
    func receive(subscription: any Subscription) {
      lock.withLock { self.subscription = subscription }
      subscription.request(.unlimited)
    }
    func receive(_ input: Int) -> Subscribers.Demand {
      lock.withLock {
        count += 1
        if cancelReturned { afterCancel += 1 }
      }
      PMeter.received(input, by: 3)
      return .none
    }
    func receive(completion: Subscribers.Completion<Never>) {}
    func cancel() {
      let s = lock.withLock { subscription.take() }
      s?.cancel()
      lock.withLock { cancelReturned = true }
    }
  }

  /// Other subscribers cancelled (from a third thread) while the turn is parked: released
  /// eventually, nothing after cancel returns.
  @Test("cancel of other subscribers while parked")
  func cancelOthersWhileParked() async {
    for round in 0..<6 {
      weak var weak0: Counted?
      weak var weak1: Counted?
      weak var weak2: Counted?
      let subject = PassthroughSubject<Int, Never>()
      let sent = Counter()
      let stalled = Atomic<Bool>(false)
      let cancelReturned = Atomic<Bool>(false)
      do {
        let others = [Counted(), Counted(), Counted()]
        weak0 = others[0]
        weak1 = others[1]
        weak2 = others[2]
        for o in others { subject.subscribe(o) }
        let shared = UncheckedSendable(others)
        let attacher = Attacher(id: 1) { _, subscription in
          subscription.request(.unlimited)
          stalled.store(Self.waitForStall(sent), ordering: .relaxed)
          let t = AttachAttackTests.start { for o in shared.value { o.cancel() } }
          cancelReturned.store(t.wait(timeout: .now() + 20) == .success, ordering: .relaxed)
          usleep(10_000)
        }
        let (returned, _) = await Self.run(
          senders: 4, perSender: 1_500, extra: 1, send: { _, v in subject.send(v) }, sent: sent
        ) { _ in subject.subscribe(attacher) }
        #expect(returned, "round \(round): every call returned")
        #expect(stalled.load(ordering: .relaxed) == true, "round \(round): stalled")
        #expect(
          cancelReturned.load(ordering: .relaxed) == true,
          "round \(round): cancels returned while parked")
        for o in others {
          #expect(o.lock.withLock { o.afterCancel } == 0, "round \(round): after cancel")
        }
        attacher.expectRules("round \(round)")
        Self.expectOrder(
          attacher.snapshot, senders: 0..<4, perSender: 1_500, complete: true, "round \(round)")
        attacher.cancel()
      }
      #expect(
        AttachAttackTests.eventually { weak0 == nil && weak1 == nil && weak2 == nil },
        "round \(round): the cancelled subscribers were released")
      withExtendedLifetime(subject) {}
    }
  }

  // MARK: CurrentValueSubject, @Published

  /// A CurrentValueSubject subscriber that requests nothing inside; another thread requests
  /// `.unlimited` while it attaches (a replay), while four threads send.
  @Test("CurrentValueSubject: demand from another thread while attaching")
  func currentValueRequestFromAnotherThread() async {
    for round in 0..<6 {
      let subject = CurrentValueSubject<Int, Never>(-1)
      let first = subject.sink { PMeter.received($0, by: 0) }
      let sent = Counter()
      let requested = Atomic<Bool>(false)
      let attacher = Attacher(id: 1) { _, subscription in
        let sub = Shared(subscription)
        let t = AttachAttackTests.start { sub.value.request(.unlimited) }
        requested.store(t.wait(timeout: .now() + 20) == .success, ordering: .relaxed)
        Self.waitForStall(sent)
        usleep(UInt32.random(in: 0..<3_000))
      }
      let perSender = 1_500
      let (returned, worst) = await Self.run(
        senders: 4, perSender: perSender, extra: 1, send: { _, v in subject.send(v) }, sent: sent
      ) { _ in subject.subscribe(attacher) }
      let label = "round \(round)"
      #expect(returned, "\(label): every call returned")
      #expect(requested.load(ordering: .relaxed) == true, "\(label): the request returned")
      for s in 0..<2 {
        #expect(worst[s] <= Self.allowance, "\(label): subscriber \(s): \(worst[s])")
      }
      let values = attacher.snapshot
      #expect(!values.isEmpty, "\(label): received")
      // First the replay (any current value), then each sender in order.
      Self.expectOrder(
        Array(values.dropFirst()), senders: 0..<4, perSender: perSender, complete: true, label)
      attacher.expectRules(label)
      attacher.cancel()
      withExtendedLifetime(first) {}
    }
  }

  final class Model: ObservableObject, @unchecked Sendable {
    @Published var x = 0
  }

  /// A view model's @Published property set from four threads while two subscribers attach
  /// slowly: one to `$x`, one to `objectWillChange`.
  @Test("@Published and objectWillChange with slow attaches")
  func publishedSlowAttach() async {
    for round in 0..<4 {
      let model = Model()
      let first = model.$x.sink { PMeter.received($0, by: 0) }
      let willChange = Atomic<Int>(0)
      let sent = Counter()
      let a = Attacher(id: 1) { _, subscription in
        subscription.request(.unlimited)
        Self.waitForStall(sent)
      }
      let wcValues = Atomic<Int>(0)
      let bSubscription = SharedBox<(any Subscription)?>(nil)
      let b = AnySubscriber<Void, Never>(
        receiveSubscription: { subscription in
          bSubscription.withLock { $0 = subscription }
          subscription.request(.unlimited)
          Self.waitForStall(sent)
        },
        receiveValue: { _ in
          wcValues.add(1, ordering: .relaxed)
          return .none
        }, receiveCompletion: { _ in })
      let sharedB = Shared(b)
      let c = model.objectWillChange.sink { _ in willChange.add(1, ordering: .relaxed) }
      let perSender = 1_000
      let (returned, worst) = await Self.run(
        senders: 4, perSender: perSender, extra: 2, send: { _, v in model.x = v }, sent: sent
      ) { i in
        if i == 0 { model.$x.subscribe(a) } else { model.objectWillChange.subscribe(sharedB.value) }
      }
      let label = "round \(round)"
      #expect(returned, "\(label): every call returned")
      for s in 0..<2 {
        #expect(worst[s] <= Self.allowance, "\(label): subscriber \(s): \(worst[s])")
      }
      Self.expectOrder(
        Array(a.snapshot.dropFirst()), senders: 0..<4, perSender: perSender, complete: true, label)
      #expect(willChange.load(ordering: .relaxed) == 4 * perSender, "\(label): objectWillChange")
      a.expectRules(label)
      a.cancel()
      // A subject's subscription keeps the subject alive until it ends: cancelled, or a cycle.
      bSubscription.withLock { $0 }?.cancel()
      withExtendedLifetime((first, c, b)) {}
    }
  }

  // MARK: Operators in front and around

  /// share() in front: the slow attach is to the share's subject; senders send upstream.
  @Test("share() in front of a slow attach")
  func shareInFront() async {
    for round in 0..<4 {
      let upstream = PassthroughSubject<Int, Never>()
      let shared = upstream.map { $0 }.share()
      let first = shared.sink { PMeter.received($0, by: 0) }
      let sent = Counter()
      let stalled = Atomic<Bool>(false)
      let attacher = Attacher(id: 1) { _, subscription in
        subscription.request(.unlimited)
        stalled.store(Self.waitForStall(sent), ordering: .relaxed)
      }
      let perSender = 1_500
      let (returned, worst) = await Self.run(
        senders: 4, perSender: perSender, extra: 1, send: { _, v in upstream.send(v) }, sent: sent
      ) { _ in shared.subscribe(attacher) }
      let label = "round \(round)"
      #expect(returned, "\(label): every call returned")
      print(
        "parking: share \(label): worst \(worst.prefix(2)), stalled \(stalled.load(ordering: .relaxed))"
      )
      for s in 0..<2 {
        #expect(worst[s] <= Self.allowance, "\(label): subscriber \(s): \(worst[s])")
      }
      Self.expectOrder(
        attacher.snapshot, senders: 0..<4, perSender: perSender, complete: true, label)
      attacher.expectRules(label)
      attacher.cancel()
      withExtendedLifetime(first) {}
    }
  }

  /// merge of two subjects (metered sink), with a slow attach directly on one of them.
  @Test("merge of two subjects with a slow attach on one")
  func mergeWithAttachOnOne() async {
    for round in 0..<4 {
      let a = PassthroughSubject<Int, Never>()
      let b = PassthroughSubject<Int, Never>()
      let merged = Atomic<Int>(0)
      let sink = a.merge(with: b).sink { v in
        merged.add(1, ordering: .relaxed)
        PMeter.received(v, by: 0)
      }
      let sent = Counter()
      let attacher = Attacher(id: 1) { _, subscription in
        subscription.request(.unlimited)
        Self.waitForStall(sent, limit: 1)
      }
      let perSender = 1_500
      let (returned, worst) = await Self.run(
        senders: 4, perSender: perSender, extra: 1,
        send: { s, v in (s < 2 ? a : b).send(v) }, sent: sent
      ) { _ in a.map { $0 }.subscribe(attacher) }
      let label = "round \(round)"
      #expect(returned, "\(label): every call returned")
      for s in 0..<2 {
        #expect(worst[s] <= Self.allowance, "\(label): subscriber \(s): \(worst[s])")
      }
      #expect(merged.load(ordering: .relaxed) == 4 * perSender, "\(label): merged all")
      Self.expectOrder(
        attacher.snapshot, senders: 0..<2, perSender: perSender, complete: true, label)
      attacher.expectRules(label)
      attacher.cancel()
      withExtendedLifetime(sink) {}
    }
  }

  /// The attach happens inside another subject's delivery: a trigger subject's sink
  /// subscribes the slow subscriber. Its senders also send into the trigger subject.
  @Test("attach inside another subject's delivery")
  func attachInsideDelivery() async {
    for round in 0..<4 {
      let subject = PassthroughSubject<Int, Never>()
      let trigger = PassthroughSubject<Int, Never>()
      let first = subject.sink { PMeter.received($0, by: 0) }
      let sent = Counter()
      let attachers = SharedBox<[Attacher]>([])
      let triggerSink = trigger.sink { v in
        guard v < 0 else { return }
        let attacher = Attacher(id: 1) { _, subscription in
          subscription.request(.unlimited)
          Self.waitForStall(sent, limit: 1)
        }
        attachers.withLock { $0.append(attacher) }
        subject.subscribe(attacher)
      }
      let perSender = 1_500
      let (returned, worst) = await Self.run(
        senders: 4, perSender: perSender, extra: 2,
        send: { s, v in
          subject.send(v)
          if v % 97 == 0 { trigger.send(v) }
        }, sent: sent
      ) { i in
        if i == 1 { usleep(2_000) }
        trigger.send(-1 - i)
      }
      let label = "round \(round)"
      #expect(returned, "\(label): every call returned")
      for s in 0..<2 {
        #expect(worst[s] <= 2 * Self.allowance, "\(label): subscriber \(s): \(worst[s])")
      }
      for a in attachers.withLock({ $0 }) {
        Self.expectOrder(a.snapshot, senders: 0..<4, perSender: perSender, complete: true, label)
        a.expectRules(label)
        a.cancel()
      }
      withExtendedLifetime((first, triggerSink)) {}
    }
  }

  /// Feedback: the existing subscriber sends back into the subject for some values; the
  /// attaching subscriber's receive also sends back for some values.
  @Test("feedback into the subject around a slow attach")
  func feedback() async {
    for round in 0..<4 {
      let subject = PassthroughSubject<Int, Never>()
      let first = subject.sink { v in
        PMeter.received(v, by: 0)
        if Self.senderOf(v) == 0, v % 50 == 0 { subject.send(Self.value(6, v % 1_000_000)) }
      }
      let sent = Counter()
      let attacher = Attacher(
        id: 1,
        whileAttaching: { _, subscription in
          subscription.request(.unlimited)
          Self.waitForStall(sent)
          for i in 0..<40 { subject.send(Self.value(7, i)) }
        },
        onValue: { _, v in
          if Self.senderOf(v) == 1, v % 50 == 0 { subject.send(Self.value(5, v % 1_000_000)) }
        })
      let perSender = 1_500
      let (returned, worst) = await Self.run(
        senders: 4, perSender: perSender, extra: 1, send: { _, v in subject.send(v) }, sent: sent
      ) { _ in subject.subscribe(attacher) }
      let label = "round \(round)"
      #expect(returned, "\(label): every call returned")
      print("parking: feedback \(label): worst \(worst.prefix(2))")
      // Feedback values count as others: allow the bound plus one feedback per delivered value.
      for s in 0..<2 {
        #expect(worst[s] <= 2 * Self.allowance, "\(label): subscriber \(s): \(worst[s])")
      }
      Self.expectOrder(
        attacher.snapshot, senders: 0..<4, perSender: perSender, complete: true, label)
      #expect(
        attacher.snapshot.filter { Self.senderOf($0) == 7 } == (0..<40).map { Self.value(7, $0) },
        "\(label): own sends from inside")
      attacher.expectRules(label)
      attacher.cancel()
      withExtendedLifetime(first) {}
    }
  }

  // MARK: Swift Tasks as senders

  /// Senders are Tasks on the cooperative pool (two threads here); the attach runs on a
  /// thread of its own. A watchdog cancels the attach if the senders do not finish.
  @Test("senders on the cooperative pool")
  func poolSenders() async {
    for round in 0..<4 {
      let subject = PassthroughSubject<Int, Never>()
      let first = subject.sink { PMeter.received($0, by: 0) }
      let sent = Counter()
      let attacher = Attacher(id: 1) { _, subscription in
        subscription.request(.unlimited)
        Self.waitForStall(sent, limit: 1)
      }
      let perSender = 1_000
      let done = Atomic<Bool>(false)
      let hung = Atomic<Bool>(false)
      let attachThread = Task.detached {
        await onThreadOfItsOwn {
          while sent.value < 100 { usleep(100) }
          subject.subscribe(attacher)
        }
      }
      let watchdog = Task.detached {
        await onThreadOfItsOwn {
          let end = DispatchTime.now().uptimeNanoseconds + 120_000_000_000
          while !done.load(ordering: .relaxed) {
            if DispatchTime.now().uptimeNanoseconds > end {
              hung.store(true, ordering: .relaxed)
              attacher.cancel()
              return
            }
            usleep(10_000)
          }
        }
      }
      await withTaskGroup(of: Void.self) { group in
        for sender in 0..<4 {
          group.addTask {
            for i in 0..<perSender {
              subject.send(Self.value(sender, i))
              sent.increment()
              if i % 64 == 0 { await Task.yield() }
            }
          }
        }
      }
      done.store(true, ordering: .relaxed)
      await watchdog.value
      await attachThread.value
      #expect(hung.load(ordering: .relaxed) == false, "round \(round): the senders finished")
      Self.expectOrder(
        attacher.snapshot, senders: 0..<4, perSender: perSender, complete: true, "round \(round)")
      attacher.expectRules("round \(round)")
      attacher.cancel()
      withExtendedLifetime(first) {}
    }
  }

  // MARK: flatMap / switchToLatest

  /// A flatMap over inner subjects (metered), with slow attaches directly on the inners,
  /// and the outer sending new inners meanwhile.
  @Test("flatMap of subjects with slow attaches on the inners")
  func flatMapWithAttaches() async {
    for round in 0..<4 {
      let outer = PassthroughSubject<AnyPublisher<Int, Never>, Never>()
      let inners = (0..<2).map { _ in PassthroughSubject<Int, Never>() }
      let count = Atomic<Int>(0)
      let sink = outer.flatMap { $0 }.sink { v in
        count.add(1, ordering: .relaxed)
        PMeter.received(v, by: 0)
      }
      for inner in inners { outer.send(inner.eraseToAnyPublisher()) }
      let sent = Counter()
      let attachers = (0..<2).map { _ in
        Attacher(id: 1) { _, subscription in
          subscription.request(.unlimited)
          Self.waitForStall(sent, limit: 1)
        }
      }
      let shared = UncheckedSendable(attachers)
      let perSender = 1_500
      let (returned, worst) = await Self.run(
        senders: 4, perSender: perSender, extra: 3,
        send: { s, v in inners[s % 2].send(v) }, sent: sent
      ) { i in
        if i < 2 {
          inners[i].subscribe(shared.value[i])
        } else {
          // New inners arrive meanwhile (flatMap attaches them inside outer's delivery).
          for _ in 0..<20 {
            outer.send(PassthroughSubject<Int, Never>().eraseToAnyPublisher())
            usleep(1_000)
          }
        }
      }
      let label = "round \(round)"
      #expect(returned, "\(label): every call returned")
      for s in 0..<2 {
        #expect(worst[s] <= 2 * Self.allowance, "\(label): subscriber \(s): \(worst[s])")
      }
      #expect(count.load(ordering: .relaxed) == 4 * perSender, "\(label): flatMap got all")
      for (i, a) in attachers.enumerated() {
        for s in [i, i + 2] {
          Self.expectOrder(
            a.snapshot, senders: s..<(s + 1), perSender: perSender, complete: true, label)
        }
        a.expectRules(label)
        a.cancel()
      }
      withExtendedLifetime(sink) {}
    }
  }

  /// switchToLatest over subjects; the slow subscriber attaches to the current inner.
  @Test("switchToLatest with a slow attach on the inner")
  func switchToLatestAttach() async {
    for round in 0..<4 {
      let outer = PassthroughSubject<PassthroughSubject<Int, Never>, Never>()
      let inner = PassthroughSubject<Int, Never>()
      let count = Atomic<Int>(0)
      let sink = outer.switchToLatest().sink { v in
        count.add(1, ordering: .relaxed)
        PMeter.received(v, by: 0)
      }
      outer.send(inner)
      let sent = Counter()
      let attacher = Attacher(id: 1) { _, subscription in
        subscription.request(.unlimited)
        Self.waitForStall(sent, limit: 1)
        // Switch away while parked, then back.
        outer.send(PassthroughSubject<Int, Never>())
        outer.send(inner)
      }
      let perSender = 1_500
      let (returned, worst) = await Self.run(
        senders: 4, perSender: perSender, extra: 1, send: { _, v in inner.send(v) }, sent: sent
      ) { _ in inner.subscribe(attacher) }
      let label = "round \(round)"
      #expect(returned, "\(label): every call returned")
      for s in 0..<2 {
        #expect(worst[s] <= 2 * Self.allowance, "\(label): subscriber \(s): \(worst[s])")
      }
      Self.expectOrder(
        attacher.snapshot, senders: 0..<4, perSender: perSender, complete: true, label)
      attacher.expectRules(label)
      attacher.cancel()
      withExtendedLifetime(sink) {}
    }
  }
}

// MARK: Calls that are not sends, made by a third thread while the turn is parked

extension ParkingAdversaryTests {
  enum ThirdCall: String, CaseIterable, Sendable {
    case cvsNewSink, cvsRequestReplay, cvsCancelOther, cvsComplete, cvsReadValue
    case ptNewSink, ptRequestOther, ptCancelOther, ptComplete
  }

  /// While the turn is parked (four senders stalled behind a slow attach), a third thread —
  /// which never sent anything — makes one call on the subject. Does it return while the
  /// attach is still inside `receive(subscription:)`? (If not, an attach that waits for that
  /// thread, e.g. with `DispatchQueue.sync`, deadlocks until its own timeout.)
  @Test("a third thread's non-send call while parked returns", arguments: ThirdCall.allCases)
  func thirdCallWhileParked(_ call: ThirdCall) async {
    var blockedRounds = 0
    let rounds = 4
    for _ in 0..<rounds {
      let cvs = CurrentValueSubject<Int, Never>(-1)
      let pt = PassthroughSubject<Int, Never>()
      let isCVS = call.rawValue.hasPrefix("cvs")
      let firstValues = SharedBox<[Int]>([])
      let record: @Sendable (Int) -> Void = { v in
        firstValues.withLock { $0.append(v) }; PMeter.received(v, by: 0)
      }
      let first = isCVS ? cvs.sink(receiveValue: record) : pt.sink(receiveValue: record)
      // An existing subscriber with no demand yet (for the request case), another to cancel.
      let lazy = Attacher(id: 2) { _, _ in }
      let other = Counted()
      if isCVS {
        cvs.subscribe(lazy); cvs.subscribe(other)
      } else {
        pt.subscribe(lazy); pt.subscribe(other)
      }
      let sent = Counter()
      let thirdReturnedInside = Atomic<Bool>(false)
      let extraSinks = SharedBox<[AnyCancellable]>([])
      let attacher = Attacher(id: 1) { _, subscription in
        subscription.request(.unlimited)
        Self.waitForStall(sent)
        let t = AttachAttackTests.start {
          switch call {
          case .cvsNewSink: extraSinks.withLock { $0.append(cvs.sink { _ in }) }
          case .cvsRequestReplay: lazy.lock.withLock { lazy.subscription }?.request(.max(1))
          case .cvsCancelOther, .ptCancelOther: other.cancel()
          case .cvsComplete: cvs.send(completion: .finished)
          case .cvsReadValue: _ = cvs.value
          case .ptNewSink: extraSinks.withLock { $0.append(pt.sink { _ in }) }
          case .ptRequestOther: lazy.lock.withLock { lazy.subscription }?.request(.max(1))
          case .ptComplete: pt.send(completion: .finished)
          }
        }
        // Wait (3 s at most) for the third thread's call, as an attach waiting for another
        // component's set-up would.
        thirdReturnedInside.store(t.wait(timeout: .now() + 3) == .success, ordering: .relaxed)
      }
      let (returned, _) = await Self.run(
        senders: 4, perSender: 800, extra: 1,
        send: { _, v in if isCVS { cvs.send(v) } else { pt.send(v) } }, sent: sent
      ) { _ in if isCVS { cvs.subscribe(attacher) } else { pt.subscribe(attacher) } }
      #expect(returned, "\(call): every call returned")
      if !thirdReturnedInside.load(ordering: .relaxed) { blockedRounds += 1 }
      attacher.expectRules("\(call)")
      lazy.expectRules("\(call) lazy")
      attacher.cancel()
      lazy.cancel()
      other.cancel()
      withExtendedLifetime((first, extraSinks)) {}
    }
    print(
      "parking: third call \(call): blocked until the attach's end in \(blockedRounds)/\(rounds)")
    #expect(
      blockedRounds == 0,
      "\(call): the third thread's call waited for the attach in \(blockedRounds)/\(rounds) rounds")
  }
}

extension ParkingAdversaryTests {
  /// CurrentValueSubject: a subscriber already attached with no demand yet; while the turn
  /// is parked (values queued for the turn, each already stored as the current value), a
  /// third thread requests `.unlimited` for it (a replay). The replay and the queued values
  /// must not duplicate or reorder: per sender, strictly increasing.
  @Test("CurrentValueSubject: replay requested by a third thread while the turn is parked")
  func replayRequestedWhileParked() async {
    var bad = 0
    let rounds = 8
    for round in 0..<rounds {
      let subject = CurrentValueSubject<Int, Never>(-1)
      let first = subject.sink { PMeter.received($0, by: 0) }
      let lazy = Attacher(id: 2) { _, _ in }
      subject.subscribe(lazy)
      let sent = Counter()
      let attacher = Attacher(id: 1) { _, subscription in
        subscription.request(.unlimited)
        Self.waitForStall(sent)
        let t = AttachAttackTests.start {
          lazy.lock.withLock { lazy.subscription }?.request(.unlimited)
        }
        _ = t.wait(timeout: .now() + 3)
        usleep(5_000)
      }
      let perSender = 800
      let (returned, _) = await Self.run(
        senders: 4, perSender: perSender, extra: 1, send: { _, v in subject.send(v) }, sent: sent
      ) { _ in subject.subscribe(attacher) }
      #expect(returned, "round \(round): every call returned")
      let values = lazy.snapshot
      var ok = true
      for sender in 0..<4 {
        let indices = values.filter { Self.senderOf($0) == sender }.map { $0 % 1_000_000 }
        if !(indices.first.map { indices == Array($0..<perSender) } ?? true) {
          ok = false
          print(
            "parking: replayWhileParked round \(round) sender \(sender): \(indices.count) values, first \(indices.prefix(6)), gap \(Self.firstGap(indices))"
          )
        }
      }
      if !ok {
        bad += 1
        print("parking: replayWhileParked round \(round): lazy's first values \(values.prefix(6))")
      }
      lazy.expectRules("round \(round) lazy")
      attacher.expectRules("round \(round)")
      attacher.cancel()
      lazy.cancel()
      withExtendedLifetime(first) {}
    }
    #expect(
      bad == 0, "lazy subscriber got duplicated/reordered/lost values in \(bad)/\(rounds) rounds")
  }
}

// MARK: More shapes

extension ParkingAdversaryTests {
  /// The first subscriber cancels the attaching one from its own `receive` (on the thread
  /// holding the turn), once 40 values were sent after the attach requested: often while the
  /// turn is armed but not yet parked.
  @Test("the turn holder cancels the attaching subscriber from inside a delivery")
  func holderCancelsAttacher() async {
    for round in 0..<10 {
      weak var weakAttacher: Attacher?
      let subject = PassthroughSubject<Int, Never>()
      let sent = Counter()
      let requestedAt = Atomic<Int>(Int.max)
      let holder = SharedBox<Attacher?>(nil)
      let cancelled = Atomic<Bool>(false)
      let first = subject.sink { v in
        PMeter.received(v, by: 0)
        if sent.value - requestedAt.load(ordering: .relaxed) > 40 + round * 3,
          !cancelled.exchange(true, ordering: .relaxed)
        {
          holder.withLock { $0 }?.cancel()
        }
      }
      do {
        let attacher = Attacher(id: 1) { _, subscription in
          subscription.request(.unlimited)
          requestedAt.store(sent.value, ordering: .relaxed)
          Self.waitForStall(sent, limit: 1)
          usleep(20_000)
        }
        weakAttacher = attacher
        holder.withLock { $0 = attacher }
        let (returned, worst) = await Self.run(
          senders: 4, perSender: 1_500, extra: 1, send: { _, v in subject.send(v) }, sent: sent
        ) { _ in subject.subscribe(attacher) }
        #expect(returned, "round \(round): every call returned")
        for s in 0..<2 {
          #expect(worst[s] <= Self.allowance, "round \(round): subscriber \(s): \(worst[s])")
        }
        attacher.expectRules("round \(round)")
        holder.withLock { $0 = nil }
      }
      #expect(AttachAttackTests.eventually { weakAttacher == nil }, "round \(round): released")
      withExtendedLifetime(first) {}
    }
  }

  /// Two subscribers attach at once and each sends 100 values into the same subject from
  /// inside `receive(subscription:)`, while four threads send.
  @Test("two attaches each sending into the same subject from inside")
  func twoAttachesSendingInside() async {
    for round in 0..<6 {
      let subject = PassthroughSubject<Int, Never>()
      let firstValues = SharedBox<[Int]>([])
      let first = subject.sink { v in
        firstValues.withLock { $0.append(v) }
        PMeter.received(v, by: 0)
      }
      let sent = Counter()
      let attachers = (1...2).map { id in
        Attacher(id: id) { _, subscription in
          subscription.request(.unlimited)
          Self.waitForStall(sent, limit: 1)
          for i in 0..<100 { subject.send(Self.value(5 + id, i)) }
          Self.waitForStall(sent, limit: 1)
        }
      }
      let shared = UncheckedSendable(attachers)
      let perSender = 1_000
      let (returned, worst) = await Self.run(
        senders: 4, perSender: perSender, extra: 2, send: { _, v in subject.send(v) }, sent: sent
      ) { i in subject.subscribe(shared.value[i]) }
      let label = "round \(round)"
      #expect(returned, "\(label): every call returned")
      for s in 0..<3 {
        #expect(worst[s] <= Self.allowance, "\(label): subscriber \(s): \(worst[s])")
      }
      let firsts = firstValues.withLock { $0 }
      #expect(firsts.count == 4 * perSender + 200, "\(label): first got \(firsts.count)")
      Self.expectOrder(
        firsts, senders: 0..<8, perSender: perSender, complete: false, label + " first")
      for a in attachers {
        Self.expectOrder(
          a.snapshot, senders: 0..<4, perSender: perSender, complete: true, label + " a\(a.id)")
        Self.expectOrder(
          a.snapshot, senders: 6..<8, perSender: 100, complete: true, label + " a\(a.id) inside")
        a.expectRules(label)
        a.cancel()
      }
      withExtendedLifetime(first) {}
    }
  }

  /// The subscribe call itself is metered: how many values of others does it deliver? Its
  /// allowance, plus the values queued for the subscriber while it attached, up to the gate's
  /// limit, which it delivers as it ends (their senders' calls may have returned).
  @Test("the subscribe call's own bound with parked turns")
  func subscribeCallBound() async {
    var worstSubscribe = 0
    for round in 0..<6 {
      let subject = PassthroughSubject<Int, Never>()
      let first = subject.sink { PMeter.received($0, by: 0) }
      let sent = Counter()
      let attacher = Attacher(id: 1) { _, subscription in
        subscription.request(.unlimited)
        Self.waitForStall(sent, limit: 1)
      }
      let meter = PMeter(sender: 7)
      let sharedMeter = UncheckedSendable(meter)
      let (returned, worst) = await Self.run(
        senders: 4, perSender: 1_000, extra: 1, send: { _, v in subject.send(v) }, sent: sent
      ) { _ in
        sharedMeter.value.install()
        sharedMeter.value.call { subject.subscribe(attacher) }
        sharedMeter.value.uninstall()
      }
      #expect(returned, "round \(round): every call returned")
      for s in 0..<2 {
        #expect(worst[s] <= Self.allowance, "round \(round): subscriber \(s): \(worst[s])")
      }
      worstSubscribe = max(worstSubscribe, meter.worst.max() ?? 0)
      #expect(
        meter.worst.max() ?? 0 <= Self.allowance + TurnWaiter.grantsPerTurn,
        "round \(round): subscribe call delivered \(meter.worst)")
      attacher.expectRules("round \(round)")
      attacher.cancel()
      withExtendedLifetime(first) {}
    }
    print("parking: subscribe call worst \(worstSubscribe)")
  }

  /// Nested attaches on two subjects: the slow subscriber of S subscribes a slow subscriber
  /// to T from inside its `receive(subscription:)`; S's first subscriber forwards into T.
  @Test("nested attaches on two subjects, S forwarding into T")
  func nestedAttachesTwoSubjects() async {
    for round in 0..<6 {
      let s = PassthroughSubject<Int, Never>()
      let t = PassthroughSubject<Int, Never>()
      let tCount = Atomic<Int>(0)
      let forward = s.sink { v in
        PMeter.received(v, by: 0)
        t.send(v)
      }
      let tSink = t.sink { v in
        tCount.add(1, ordering: .relaxed)
        PMeter.received(v, by: 2)
      }
      let sent = Counter()
      let inner = Attacher(id: 3) { _, subscription in
        subscription.request(.unlimited)
        Self.waitForStall(sent, limit: 1)
      }
      let outer = Attacher(id: 1) { _, subscription in
        subscription.request(.unlimited)
        Self.waitForStall(sent, limit: 1)
        t.subscribe(inner)
        usleep(5_000)
      }
      let perSender = 1_000
      let (returned, worst) = await Self.run(
        senders: 4, perSender: perSender, extra: 1,
        send: { i, v in (i < 3 ? s : t).send(v) }, sent: sent
      ) { _ in s.subscribe(outer) }
      let label = "round \(round)"
      #expect(returned, "\(label): every call returned")
      for k in 0..<4 {
        #expect(worst[k] <= 2 * Self.allowance, "\(label): subscriber \(k): \(worst[k])")
      }
      #expect(tCount.load(ordering: .relaxed) == 4 * perSender, "\(label): T got all")
      Self.expectOrder(
        outer.snapshot, senders: 0..<3, perSender: perSender, complete: true, label + " outer")
      Self.expectOrder(
        inner.snapshot, senders: 0..<4, perSender: perSender, complete: true, label + " inner")
      outer.expectRules(label)
      inner.expectRules(label)
      outer.cancel()
      inner.cancel()
      withExtendedLifetime((forward, tSink)) {}
    }
  }

  /// A demand-limited attacher: `.max(40)` inside, one more per value.
  @Test("a demand-limited slow attach")
  func demandLimitedAttach() async {
    for round in 0..<6 {
      let subject = PassthroughSubject<Int, Never>()
      let first = subject.sink { PMeter.received($0, by: 0) }
      let sent = Counter()
      let attacher = Attacher(id: 1) { _, subscription in
        subscription.request(.max(40))
        Self.waitForStall(sent, limit: 1)
      }
      attacher.perValue = .max(1)
      let perSender = 1_000
      let (returned, worst) = await Self.run(
        senders: 4, perSender: perSender, extra: 1, send: { _, v in subject.send(v) }, sent: sent
      ) { _ in subject.subscribe(attacher) }
      #expect(returned, "round \(round): every call returned")
      for k in 0..<2 {
        #expect(worst[k] <= Self.allowance, "round \(round): subscriber \(k): \(worst[k])")
      }
      // Values offered at zero demand are dropped (as in Combine): only no duplicate and no
      // reordering is checked.
      let values = attacher.snapshot
      for sender in 0..<4 {
        let indices = values.filter { Self.senderOf($0) == sender }.map { $0 % 1_000_000 }
        #expect(Self.isAscending(indices), "round \(round) sender \(sender): not ascending")
      }
      attacher.expectRules("round \(round)")
      attacher.cancel()
      withExtendedLifetime(first) {}
    }
  }

  static func isAscending(_ values: [Int]) -> Bool {
    zip(values, values.dropFirst()).allSatisfy { $0 < $1 }
  }

  enum Completer: String, CaseIterable, Sendable { case thirdThread, holderFromSink }

  /// The subject completes while the turn is parked (a third thread) or armed (the holder,
  /// from the first subscriber's `receive`, 40+ values after the attach requested).
  @Test("completion while parked or armed", arguments: Completer.allCases)
  func completionWhileParked(_ who: Completer) async {
    for round in 0..<8 {
      weak var weakAttacher: Attacher?
      let subject = PassthroughSubject<Int, Never>()
      let sent = Counter()
      let requestedAt = Atomic<Int>(Int.max)
      let completed = Atomic<Bool>(false)
      let firstValues = SharedBox<[Int]>([])
      let first = subject.sink { v in
        firstValues.withLock { $0.append(v) }
        PMeter.received(v, by: 0)
        if who == .holderFromSink, sent.value - requestedAt.load(ordering: .relaxed) > 36 + round,
          !completed.exchange(true, ordering: .relaxed)
        {
          subject.send(completion: .finished)
        }
      }
      do {
        let attacher = Attacher(id: 1) { _, subscription in
          subscription.request(.unlimited)
          requestedAt.store(sent.value, ordering: .relaxed)
          Self.waitForStall(sent, limit: 1)
          if who == .thirdThread {
            _ = AttachAttackTests.start { subject.send(completion: .finished) }.wait(
              timeout: .now() + 20)
          }
          usleep(10_000)
        }
        weakAttacher = attacher
        let (returned, worst) = await Self.run(
          senders: 4, perSender: 1_000, extra: 1, send: { _, v in subject.send(v) }, sent: sent
        ) { _ in subject.subscribe(attacher) }
        let label = "\(who) round \(round)"
        #expect(returned, "\(label): every call returned")
        for s in 0..<2 {
          #expect(worst[s] <= Self.allowance, "\(label): subscriber \(s): \(worst[s])")
        }
        #expect(
          attacher.lock.withLock { attacher.completions } == 1, "\(label): attacher completed")
        // Whatever the first subscriber got before the completion, the attacher (from its
        // first value of each sender) got the same suffix.
        let firsts = firstValues.withLock { $0 }
        let values = attacher.snapshot
        if let v0 = values.first, let i = firsts.firstIndex(of: v0) {
          #expect(
            Array(firsts[i...]) == values,
            "\(label): attacher's values are a suffix of the first's (\(values.count) vs \(firsts.count - i))"
          )
        }
        attacher.expectRules(label)
      }
      #expect(
        AttachAttackTests.eventually { weakAttacher == nil }, "\(who) round \(round): released")
      withExtendedLifetime(first) {}
    }
  }

  /// Churn: a thread keeps subscribing short slow attaches (each stays inside until 40+
  /// values were sent after its request, 5 ms at most) and cancels each after a moment,
  /// while four threads send. Many parkings per run.
  @Test("churn of slow attaches")
  func churn() async {
    weak var lastWeak: Attacher?
    let subject = PassthroughSubject<Int, Never>()
    let first = subject.sink { PMeter.received($0, by: 0) }
    let sent = Counter()
    let all = SharedBox<[Attacher]>([])
    let perSender = stressScaled(40_000) < 5_000 ? 5_000 : stressScaled(40_000)
    let finished = Atomic<Int>(0)
    let worstPerObject = SharedBox<Int>(0)
    let (returned, worst) = await Self.run(
      senders: 4, perSender: perSender, extra: 2,
      send: { _, v in subject.send(v) }, sent: sent, perObject: worstPerObject
    ) { k in
      var n = 0
      while sent.value < 4 * perSender - 2_000 {
        n += 1
        // A slot of its own (three generations apart) for the per-subscriber meter.
        let a = Attacher(id: 1 + k * 3 + n % 3) { _, subscription in
          subscription.request(.unlimited)
          let start = sent.value
          let end = DispatchTime.now().uptimeNanoseconds + 5_000_000
          while sent.value - start < 40, DispatchTime.now().uptimeNanoseconds < end { usleep(200) }
        }
        subject.subscribe(a)
        usleep(UInt32.random(in: 0..<2_000))
        if n % 3 == 0 {
          // Cancel from a third thread.
          let sa = Shared(a)
          _ = AttachAttackTests.start { sa.value.cancel() }.wait(timeout: .now() + 20)
        } else {
          a.cancel()
        }
        if n % 50 == 0 { all.withLock { $0.append(a) } }
      }
      finished.add(n, ordering: .relaxed)
    }
    #expect(returned, "every call returned")
    for report in PMeter.reports.withLock({ $0 }) { print("parking: churn over bound: \(report)") }
    print("parking: churn: \(finished.load(ordering: .relaxed)) attaches; worst \(worst.prefix(7))")
    // Per subscriber object: a slot here is three generations of subscribers, and a send whose
    // call spans an attach's end (parked, then resumed) can deliver to two of them.
    let perObject = worstPerObject.withLock { $0 }
    #expect(perObject <= Self.allowance, "one subscriber got \(perObject) of one call")
    #expect(worst.allSatisfy { $0 <= 3 * Self.allowance }, "per slot: \(worst)")
    for a in all.withLock({ $0 }) {
      a.expectRules("churn")
      let values = a.snapshot
      for sender in 0..<4 {
        let indices = values.filter { Self.senderOf($0) == sender }.map { $0 % 1_000_000 }
        guard let start = indices.first else { continue }
        #expect(
          indices == Array(start..<(start + indices.count)),
          "churn: sender \(sender) gap \(Self.firstGap(indices))")
      }
    }
    lastWeak = all.withLock { $0.last }
    all.withLock { $0 = [] }
    #expect(AttachAttackTests.eventually { lastWeak == nil }, "churn: released")
    withExtendedLifetime(first) {}
  }
}

extension ParkingAdversaryTests {
  /// An attach that ends with fewer than 32 values queued (no gate, nothing parks), whose
  /// subscriber is slow only for the values its subscribe call delivers as the attach ends
  /// (300 µs each): meanwhile the senders' turns — not gated, the attach is over — queue
  /// behind that drain, and what the subscribe call's share leaves goes to the turn in
  /// progress. Does one send then deliver more than 64 values of others to that subscriber?
  @Test("an attach-end drain slower than the senders, no gate")
  func slowAttachEndDrainWithoutGate() async {
    var worstSeen = 0
    for round in 0..<6 {
      let subject = PassthroughSubject<Int, Never>()
      let first = subject.sink { PMeter.received($0, by: 0) }
      let sent = Counter()
      let subscribing = SharedBox<pthread_t?>(nil)
      let attacher = Attacher(
        id: 1,
        whileAttaching: { _, subscription in
          subscribing.withLock { $0 = pthread_self() }
          subscription.request(.unlimited)
          let start = sent.value
          let end = DispatchTime.now().uptimeNanoseconds + 20_000_000
          while sent.value - start < 20, DispatchTime.now().uptimeNanoseconds < end { usleep(50) }
        },
        onValue: { _, _ in
          if let thread = subscribing.withLock({ $0 }), pthread_equal(thread, pthread_self()) != 0 {
            let end = DispatchTime.now().uptimeNanoseconds + 300_000
            while DispatchTime.now().uptimeNanoseconds < end {}
          }
        })
      let (returned, worst) = await Self.run(
        senders: 4, perSender: 1_500, extra: 1, send: { _, v in subject.send(v) }, sent: sent
      ) { _ in subject.subscribe(attacher) }
      #expect(returned, "round \(round): every call returned")
      worstSeen = max(worstSeen, worst[1])
      for report in PMeter.reports.withLock({ $0 }) {
        print("parking: slowAttachEnd over bound: \(report)")
      }
      PMeter.reports.withLock { $0 = [] }
      #expect(
        worst[1] <= Self.allowance,
        "round \(round): the attached subscriber: \(worst[1]) values of others in one send")
      Self.expectOrder(
        attacher.snapshot, senders: 0..<4, perSender: 1_500, complete: true, "round \(round)")
      attacher.expectRules("round \(round)")
      attacher.cancel()
      withExtendedLifetime(first) {}
    }
    print("parking: slowAttachEnd worst \(worstSeen)")
  }
}
