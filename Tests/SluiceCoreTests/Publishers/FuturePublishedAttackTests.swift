import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Synchronization
import Testing

/// Adversarial tests of b7fc4db (Future: inlinable subscribe, a fulfilled future feeding a sink
/// without a subscription object, FutureWaiter base class with stored closures) and d34b3a3
/// (@Published, ObservableObjectPublisher, Subscribers.Assign / assign(to:on:), made inlinable).
@Suite("Future / Published / Assign attacks", .onThreadsOfTheirOwn)
struct FuturePublishedAttackTests {
  // MARK: helpers

  typealias Attachment = SinkAttachment

  /// A subscriber that keeps its subscription and requests only when told.
  final class Manual<Input, Failure: Error>: Subscriber, @unchecked Sendable {
    let lock = NSLock()
    var subscription: (any Subscription)?
    var events: [String] = []
    let initial: Subscribers.Demand
    let onValue: (Manual) -> Void
    init(initial: Subscribers.Demand = .none, onValue: @escaping (Manual) -> Void = { _ in }) {
      self.initial = initial
      self.onValue = onValue
    }
    func receive(subscription: any Subscription) {
      lock.withLock {
        events.append("subscription")
        self.subscription = subscription
      }
      if initial > 0 { subscription.request(initial) }
    }
    func receive(_ input: Input) -> Subscribers.Demand {
      lock.withLock { events.append("\(input)") }
      onValue(self)
      return .none
    }
    func receive(completion: Subscribers.Completion<Failure>) {
      lock.withLock { events.append("\(completion)") }
    }
    var recorded: [String] { lock.withLock { events } }
    var held: (any Subscription)? { lock.withLock { subscription } }
    func drop() { lock.withLock { subscription = nil } }
  }

  final class Counter: Sendable {
    let atomic = Atomic<Int>(0)
  }

  // MARK: Future — fulfilled before / after

  @Test("fulfilled Future into a sink, every attachment: value+finished / failure; closures freed")
  func fulfilledIntoSinkEveryAttachment() {
    for attachment in Attachment.allCases {
      let ok = Future<Int, TestError> { $0(.success(1)) }
      let bad = Future<Int, TestError> { $0(.failure(TestError(code: 3))) }
      let events = Box<[String]>([])
      let (s1, t1) = recordingSink("a", into: events, failure: TestError.self)
      attachment.attach(s1, to: ok)
      let (s2, t2) = recordingSink("b", into: events, failure: TestError.self)
      attachment.attach(s2, to: bad)
      #expect(events.value == ["a1", "afinished", "bfailure(TestError(3))"], "\(attachment)")
      #expect(t1.object == nil && t2.object == nil, "\(attachment): closures released")
      // Second time: refused (a finished sink).
      attachment.attach(s1, to: ok)
      attachment.attach(s2, to: ok)
      #expect(events.value?.count == 3)
    }
  }

  @Test("Future fulfilled later from another thread: every subscriber kind exactly once")
  func fulfilledLaterFromAnotherThread() async {
    for round in 0..<200 {
      let promised = Box<Future<Int, Never>.Promise>()
      let future = Future<Int, Never> { promised.set($0) }
      let events = Box<[String]>([])
      var sinks: [(Subscribers.Sink<Int, Never>, WeakReference<Tracker>)] = []
      for (index, attachment) in Attachment.allCases.enumerated() {
        let made = recordingSink("\(index):", into: events)
        attachment.attach(made.0, to: future)
        sinks.append(made)
      }
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
      future.subscribe(recorder)
      let promise = Shared(promised.value!)
      await simultaneously({ promise.value(.success(round)) }, { promise.value(.success(-1)) })
      let seen = events.value ?? []
      #expect(seen.count == 2 * Attachment.allCases.count, "round \(round): \(seen)")
      let value = seen.first.map { String($0.split(separator: ":")[1]) }
      #expect(value == "\(round)" || value == "-1")
      for index in Attachment.allCases.indices {
        #expect(
          seen.filter { $0.hasPrefix("\(index):") } == ["\(index):\(value!)", "\(index):finished"])
      }
      #expect(recorder.values.count == 1 && recorder.completion != nil)
      #expect(sinks.allSatisfy { $0.1.object == nil })
    }
  }

  @Test("racing subscribe (sink, each attachment) with fulfil: value+finished, once, released")
  func racingSubscribeAndFulfil() async {
    for round in 0..<400 {
      let promised = Box<Future<Int, Never>.Promise>()
      let future = Shared(Future<Int, Never> { promised.set($0) })
      let events = Box<[String]>([])
      let (sink, tracker) = recordingSink(into: events)
      let shared = Shared(sink)
      let promise = Shared(promised.value!)
      let attachment = Attachment.allCases[round % Attachment.allCases.count]
      await simultaneously(
        { attachment.attach(shared.value, to: future.value) },
        { promise.value(.success(5)) })
      #expect(events.value == ["5", "finished"], "round \(round)")
      #expect(tracker.object == nil, "round \(round): closures released")
    }
  }

  @Test("racing subscribe, cancel and fulfil: at most value then finished; nothing after; freed")
  func racingSubscribeCancelFulfil() async {
    for round in 0..<400 {
      let promised = Box<Future<Int, Never>.Promise>()
      weak var weakFuture: Future<Int, Never>?
      let events = Box<[String]>([])
      var trackerRef: WeakReference<Tracker>?
      do {
        let future = Future<Int, Never> { promised.set($0) }
        weakFuture = future
        let sharedFuture = Shared(future)
        let (sink, tracker) = recordingSink(into: events)
        trackerRef = tracker
        let shared = Shared(sink)
        let promise = Shared(promised.value!)
        let attachment = Attachment.allCases[round % Attachment.allCases.count]
        if round % 3 == 0 { promise.value(.success(1)) }
        await concurrently(3) { index in
          switch index {
          case 0: attachment.attach(shared.value, to: sharedFuture.value)
          case 1: shared.value.cancel()
          default: promise.value(.success(1))
          }
        }
        let seen = events.value ?? []
        #expect(
          seen == [] || seen == ["1"] || seen == ["1", "finished"], "round \(round): \(seen)")
        attachment.attach(shared.value, to: sharedFuture.value)
        #expect(events.value == seen, "round \(round): nothing after")
      }
      #expect(trackerRef?.object == nil, "round \(round): closures released")
      #expect(weakFuture == nil, "round \(round): future released")
    }
  }

  @Test("custom subscriber requesting late (.max(1)) or never; failure needs no demand")
  func customSubscriberLateDemand() {
    let ok = Future<Int, TestError> { $0(.success(8)) }
    let late = Manual<Int, TestError>()
    ok.subscribe(late)
    #expect(late.recorded == ["subscription"])
    late.held?.request(.max(1))
    #expect(late.recorded == ["subscription", "8", "finished"])
    late.held?.request(.max(1))
    #expect(late.recorded == ["subscription", "8", "finished"])

    let bad = Future<Int, TestError> { $0(.failure(TestError(code: 2))) }
    let noDemand = Manual<Int, TestError>()
    bad.subscribe(noDemand)
    #expect(noDemand.recorded == ["subscription", "failure(TestError(2))"])

    // Never requests: nothing; cancel releases the subscriber and the future.
    weak var weakSubscriber: Manual<Int, TestError>?
    weak var weakFuture: Future<Int, TestError>?
    do {
      let future = Future<Int, TestError> { $0(.success(1)) }
      weakFuture = future
      let never = Manual<Int, TestError>()
      weakSubscriber = never
      future.subscribe(never)
      #expect(never.recorded == ["subscription"])
      never.held?.cancel()
      never.held?.request(.max(1))
      #expect(never.recorded == ["subscription"])
      never.drop()
    }
    #expect(weakSubscriber == nil && weakFuture == nil)
  }

  @Test("a Future subscription: description and Combine's mirror children")
  func subscriptionMirror() {
    let future = Future<Int, Never> { _ in }
    let manual = Manual<Int, Never>()
    future.subscribe(manual)
    let subscription = manual.held!
    #expect(String(describing: subscription) == "Future")
    let mirror = Mirror(reflecting: subscription)
    #expect(mirror.children.map(\.label) == ["parent", "downstream", "hasAnyDemand", "subject"])
    subscription.request(.max(1))
    #expect(Mirror(reflecting: subscription).children.map { "\($0.value)" }[2] == "true")
    subscription.cancel()
    manual.drop()
  }

  @Test("a Future subscription's mirror after delivery: parent/downstream/subject read nil")
  func subscriptionMirrorAfterDelivery() {
    let promised = Box<Future<Int, Never>.Promise>()
    let future = Future<Int, Never> { promised.set($0) }
    let manual = Manual<Int, Never>(initial: .max(1))
    future.subscribe(manual)
    let subscription = manual.held!
    promised.value?(.success(1))
    #expect(manual.recorded == ["subscription", "1", "finished"])
    let values = Mirror(reflecting: subscription).children.map { "\($0.value)" }
    #expect(values == ["nil", "nil", "true", "nil"], "\(values)")
    manual.drop()
  }

  @Test("a sink that got a value before any subscription, then a fulfilled Future")
  func sinkWithValueBeforeSubscription() {
    let events = Box<[String]>([])
    let (sink, tracker) = recordingSink(into: events)
    _ = sink.receive(5)
    Future<Int, Never> { $0(.success(6)) }.subscribe(sink)
    #expect(events.value == ["5", "6", "finished"])
    #expect(tracker.object == nil)
  }

  @Test("a Future subscription's dump/superclass mirror exposes no internal storage (as before)")
  func subscriptionSuperclassMirror() {
    let future = Future<Int, Never> { _ in }
    let manual = Manual<Int, Never>()
    future.subscribe(manual)
    let subscription = manual.held!
    let superChildren =
      Mirror(reflecting: subscription).superclassMirror?.children.map {
        $0.label ?? "?"
      } ?? []
    #expect(superChildren == [], "superclass mirror children: \(superChildren)")
    var dumped = ""
    dump(subscription, to: &dumped)
    #expect(!dumped.contains("fulfilled"), "dump:\n\(dumped)")
    subscription.cancel()
    manual.drop()
  }

  @Test("promise called twice (before/after subscribing), never; future dropped, promise kept")
  func promiseTwiceNeverDropped() {
    let events = Box<[String]>([])
    let promised = Box<Future<Int, Never>.Promise>()
    let future = Future<Int, Never> { promise in
      promised.set(promise)
      promise(.success(1))
      promise(.success(2))
    }
    let (s1, _) = recordingSink("a", into: events)
    future.subscribe(s1)
    promised.value?(.success(3))
    let (s2, _) = recordingSink("b", into: events)
    future.subscribe(s2)
    #expect(events.value == ["a1", "afinished", "b1", "bfinished"])

    // Never fulfilled: nothing; cancel releases closures and future.
    weak var weakFuture: Future<Int, Never>?
    let never = Box<[String]>([])
    var trackerRef: WeakReference<Tracker>?
    do {
      let f = Future<Int, Never> { _ in }
      weakFuture = f
      let (sink, tracker) = recordingSink(into: never)
      trackerRef = tracker
      f.subscribe(sink)
      sink.cancel()
    }
    #expect(never.value == [] && weakFuture == nil && trackerRef?.object == nil)

    // Future dropped while a subscriber waits: the subscription keeps it; the promise delivers.
    let kept = Box<Future<Int, Never>.Promise>()
    let waiting = Box<[String]>([])
    var cancellable: AnyCancellable?
    weak var weakKeptFuture: Future<Int, Never>?
    do {
      let f = Future<Int, Never> { kept.set($0) }
      weakKeptFuture = f
      cancellable = f.sink { value in waiting.update { $0?.append("\(value)") } }
    }
    #expect(weakKeptFuture != nil, "the subscription holds the future")
    kept.value?(.success(4))
    #expect(waiting.value == ["4"])
    #expect(weakKeptFuture == nil, "released after completion")
    cancellable = nil

    // Dropped with nobody subscribed: the promise does nothing.
    let orphan = Box<Future<Int, Never>.Promise>()
    weak var weakOrphan: Future<Int, Never>?
    do {
      let f = Future<Int, Never> { orphan.set($0) }
      weakOrphan = f
    }
    #expect(weakOrphan == nil)
    orphan.value?(.success(1))
    _ = cancellable
  }

  @Test("cancel during receiveValue (fast path and later): no completion; closures freed")
  func cancelDuringReceiveValue() {
    for fulfilledFirst in [true, false] {
      for attachment in Attachment.allCases {
        let promised = Box<Future<Int, Never>.Promise>()
        let future = Future<Int, Never> { promise in
          promised.set(promise)
          if fulfilledFirst { promise(.success(1)) }
        }
        let events = Box<[String]>([])
        let holder = Box<Subscribers.Sink<Int, Never>>()
        let (sink, tracker) = recordingSink(into: events, onValue: { _ in holder.value?.cancel() })
        holder.set(sink)
        attachment.attach(sink, to: future)
        promised.value?(.success(1))
        #expect(events.value == ["1"], "\(fulfilledFirst) \(attachment)")
        holder.update { $0 = nil }
        #expect(tracker.object == nil, "\(fulfilledFirst) \(attachment): released")
      }
    }
  }

  @Test("re-entrancy: receiveValue subscribes the same sink, and a new sink, to the same future")
  func reentrantSubscribe() {
    for fulfilledFirst in [true, false] {
      let promised = Box<Future<Int, Never>.Promise>()
      let future = Future<Int, Never> { promise in
        promised.set(promise)
        if fulfilledFirst { promise(.success(1)) }
      }
      let events = Box<[String]>([])
      let holder = Box<Subscribers.Sink<Int, Never>>()
      let inner = Box<[AnyCancellable]>([])
      let (sink, tracker) = recordingSink(
        "o", into: events,
        onValue: { _ in
          future.subscribe(holder.value!)
          let c = future.sink(
            receiveCompletion: { c in events.update { $0?.append("i\(c)") } },
            receiveValue: { v in events.update { $0?.append("i\(v)") } })
          inner.update { $0?.append(c) }
        })
      holder.set(sink)
      future.subscribe(sink)
      promised.value?(.success(1))
      #expect(events.value == ["o1", "i1", "ifinished", "ofinished"], "\(fulfilledFirst)")
      holder.update { $0 = nil }
      #expect(tracker.object == nil)
    }
  }

  @Test(
    "Future inside flatMap / merge / zip / catch / retry / Deferred, fulfilled before and later")
  func futureInsideOperators() {
    for fulfilledFirst in [true, false] {
      let promises = Box<[@Sendable () -> Void]>([])
      @Sendable func make(_ result: Result<Int, TestError>) -> Future<Int, TestError> {
        Future { promise in
          if fulfilledFirst {
            promise(result)
          } else {
            promises.update { $0?.append({ promise(result) }) }
          }
        }
      }
      func fulfilAll() {
        while let next = promises.update({ $0?.isEmpty == false ? $0?.removeFirst() : nil }) {
          next()
        }
      }
      let events = Box<[String]>([])
      var cancellables: [AnyCancellable] = []
      func record(_ name: String, _ p: AnyPublisher<Int, TestError>) {
        cancellables.append(
          p.sink(
            receiveCompletion: { c in events.update { $0?.append("\(name):\(c)") } },
            receiveValue: { v in events.update { $0?.append("\(name):\(v)") } }))
      }
      record(
        "flatMap",
        [1, 2].publisher.setFailureType(to: TestError.self)
          .flatMap { make(.success($0 * 10)) }.eraseToAnyPublisher())
      record("merge", make(.success(1)).merge(with: make(.success(2))).eraseToAnyPublisher())
      record("zip", make(.success(1)).zip(make(.success(2))).map { $0 + $1 }.eraseToAnyPublisher())
      record(
        "catch",
        make(.failure(TestError(code: 1))).catch { _ in make(.success(7)) }
          .eraseToAnyPublisher())
      record("deferred", Deferred { make(.success(9)) }.eraseToAnyPublisher())
      let attempts = Box<Int>(0)
      record(
        "retry",
        Deferred { () -> Future<Int, TestError> in
          let n = attempts.update {
            $0! += 1; return $0!
          }
          return make(n < 3 ? .failure(TestError(code: n)) : .success(n))
        }.retry(5).eraseToAnyPublisher())
      for _ in 0..<5 { fulfilAll() }
      let seen = events.value ?? []
      func of(_ name: String) -> [String] { seen.filter { $0.hasPrefix(name + ":") } }
      #expect(
        of("flatMap") == ["flatMap:10", "flatMap:20", "flatMap:finished"], "\(fulfilledFirst)")
      #expect(
        Set(of("merge")) == ["merge:1", "merge:2", "merge:finished"]
          && of("merge").last == "merge:finished")
      #expect(of("zip") == ["zip:3", "zip:finished"])
      #expect(of("catch") == ["catch:7", "catch:finished"])
      #expect(of("deferred") == ["deferred:9", "deferred:finished"])
      #expect(of("retry") == ["retry:3", "retry:finished"], "\(fulfilledFirst): \(of("retry"))")
      _ = cancellables
    }
  }

  @Test("several subscribers of mixed kinds racing a fulfil from another thread")
  func severalMixedSubscribersRacing() async {
    for round in 0..<150 {
      let promised = Box<Future<Int, Never>.Promise>()
      let future = Shared(Future<Int, Never> { promised.set($0) })
      let promise = Shared(promised.value!)
      let counts = Box<[String: Int]>([:])
      let keep = Box<[AnyObject]>([])
      await concurrently(6) { index in
        switch index {
        case 5: promise.value(.success(round))
        case 4:
          let r = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
          keep.update { $0?.append(r) }
          future.value.subscribe(r)
        default:
          let s = Subscribers.Sink<Int, Never>(
            receiveCompletion: { _ in counts.update { $0?["c\(index)", default: 0] += 1 } },
            receiveValue: { v in
              #expect(v == round)
              counts.update { $0?["v\(index)", default: 0] += 1 }
            })
          keep.update { $0?.append(s) }
          Attachment.allCases[index].attach(s, to: future.value)
        }
      }
      let c = counts.value ?? [:]
      for index in 0..<4 {
        #expect(c["v\(index)"] == 1 && c["c\(index)"] == 1, "round \(round): \(c)")
      }
      let recorder = keep.value?.compactMap { $0 as? RecordingSubscriber<Int, Never> }.first
      #expect(recorder?.values == [round] && recorder?.completion != nil)
    }
  }

  @Test("a fulfilled Future into assign(to:on:) and assign(to: &$property)")
  func futureIntoAssign() {
    final class Model: @unchecked Sendable {
      var plain = 0
      @Published var published = 0
    }
    weak var weakModel: Model?
    do {
      let model = Model()
      weakModel = model
      let c = Future<Int, Never> { $0(.success(4)) }.assign(to: \.plain, on: model)
      Future<Int, Never> { $0(.success(5)) }.assign(to: &model.$published)
      #expect(model.plain == 4 && model.published == 5)
      _ = c
    }
    #expect(weakModel == nil)
  }

  // MARK: @Published

  final class Owner: ObservableObject, @unchecked Sendable {
    @Published var a = 0
    @Published var b = 0
    let log = Box<[String]>([])
    deinit {}
  }

  @Test("$property.sink: current value on subscribe; willSet semantics; objectWillChange first")
  func publishedOrdering() {
    let owner = Owner()
    let log = owner.log
    let c1 = owner.objectWillChange.sink { [unowned owner] in
      log.update { $0?.append("will(a=\(owner.a))") }
    }
    let c2 = owner.$a.sink { [unowned owner] v in log.update { $0?.append("a:\(v) (a=\(owner.a))") }
    }
    owner.a = 1
    owner.b = 2
    #expect(log.value == ["a:0 (a=0)", "will(a=0)", "a:1 (a=0)", "will(a=1)"])
    #expect(owner.a == 1 && owner.b == 2)
    _ = (c1, c2)
  }

  @Test("$property with a late, .max(1) subscriber: current value on first demand, latest after")
  func publishedLateDemand() {
    let owner = Owner()
    let r = RecordingSubscriber<Int, Never>(initialDemand: .none)
    owner.$a.subscribe(r)
    owner.a = 1
    #expect(r.values == [])
    r.request(.max(1))
    #expect(r.values == [1])
    owner.a = 2
    owner.a = 3
    r.request(.max(1))
    #expect(r.values == [1, 3] || r.values == [1, 2], "\(r.values)")
    r.cancel()
  }

  @Test("setting the property inside its own sink (re-entrancy)")
  func publishedReentrantSet() {
    let owner = Owner()
    let seen = Box<[Int]>([])
    let c = owner.$a.sink { [unowned owner] v in
      seen.update { $0?.append(v) }
      if v == 1 { owner.a = 2 }
    }
    owner.a = 1
    #expect(seen.value == [0, 1, 2])
    // willSet semantics: the outer set stores 1 after the inner stored 2 (as before d34b3a3).
    #expect(owner.a == 1, "final \(owner.a)")
    _ = c
  }

  @Test("setting from several threads: each value delivered once, serially")
  func publishedFromSeveralThreads() async {
    let owner = Shared(Owner())
    let inFlight = Counter()
    let overlaps = Box<Int>(0)
    let count = Box<Int>(0)
    let c = owner.value.$a.sink { _ in
      if inFlight.atomic.add(1, ordering: .acquiringAndReleasing).newValue > 1 {
        overlaps.update { $0! += 1 }
      }
      count.update { $0! += 1 }
      inFlight.atomic.subtract(1, ordering: .acquiringAndReleasing)
    }
    await concurrently(4) { t in
      for i in 0..<500 { owner.value.a = t * 1000 + i }
    }
    #expect(count.value == 2001)
    #expect(overlaps.value == 0, "overlapping deliveries: \(overlaps.value ?? -1)")
    _ = c
  }

  @Test("removeDuplicates / combineLatest of two $properties; assign(to: &$other)")
  func publishedCombinations() {
    let owner = Owner()
    let log = Box<[String]>([])
    let c1 = owner.$a.removeDuplicates().sink { v in log.update { $0?.append("d\(v)") } }
    let c2 = owner.$a.combineLatest(owner.$b).sink { v in
      log.update { $0?.append("c\(v.0),\(v.1)") }
    }
    owner.a = 0
    owner.a = 1
    owner.b = 5
    #expect(log.value == ["d0", "c0,0", "c0,0", "d1", "c1,0", "c1,5"])
    owner.$a.map { $0 * 100 }.assign(to: &owner.$b)
    #expect(owner.b == 100)
    owner.a = 2
    #expect(owner.b == 200)
    _ = (c1, c2)
  }

  @Test("the owner deallocated while subscribed, and with assign(to: &$other) chains")
  func publishedOwnerDeallocated() {
    weak var weakOwner: Owner?
    let seen = Box<[Int]>([])
    var c: AnyCancellable?
    var will: AnyCancellable?
    do {
      let owner = Owner()
      weakOwner = owner
      c = owner.$a.sink { v in seen.update { $0?.append(v) } }
      will = owner.objectWillChange.sink {}
      owner.$a.assign(to: &owner.$b)
      owner.a = 3
      #expect(owner.b == 3)
    }
    #expect(weakOwner == nil, "owner released while subscribed")
    #expect(seen.value == [0, 3])
    c?.cancel()
    will?.cancel()
  }

  // MARK: assign(to:on:)

  final class Target: @unchecked Sendable {
    var log: [String] = []
    var cancellable: AnyCancellable?
    var cancelAt = -1
    var mirror = 0
    var value = 0 {
      didSet {
        log.append("set \(value) (old \(oldValue), read \(self.value))")
        mirror = value
        if value == cancelAt { cancellable?.cancel() }
      }
    }
  }

  @Test("assign(to:on:) with didSet that reads, sets and cancels; object released after cancel")
  func assignDidSetCancels() {
    let subject = PassthroughSubject<Int, Never>()
    weak var weakTarget: Target?
    do {
      let target = Target()
      weakTarget = target
      target.cancelAt = 2
      target.cancellable = subject.assign(to: \.value, on: target)
      subject.send(1)
      subject.send(2)
      subject.send(3)
      #expect(target.log == ["set 1 (old 0, read 1)", "set 2 (old 1, read 2)"])
      #expect(target.mirror == 2)
      target.cancellable = nil
    }
    #expect(weakTarget == nil)
  }

  @Test("Assign: description, mirror and object through its lifecycle")
  func assignDescriptionMirror() {
    let target = Target()
    let assign = Subscribers.Assign(object: target, keyPath: \Target.value)
    #expect(String(describing: assign) == "Assign Target.")
    func status() -> String {
      "\(Mirror(reflecting: assign).children.first { $0.label == "status" }!.value)"
    }
    #expect(Mirror(reflecting: assign).children.map(\.label) == ["object", "keyPath", "status"])
    #expect(status() == "awaitingSubscription")
    _ = assign.receive(7)
    #expect(target.value == 0, "no value before the subscription")
    let subscription = TestSubscription(description: "S")
    assign.receive(subscription: subscription)
    #expect(subscription.requests == [.unlimited])
    #expect(status() == "subscribed(S)")
    _ = assign.receive(8)
    #expect(target.value == 8 && assign.object === target && assign.keyPath == \Target.value)
    assign.receive(completion: .finished)
    #expect(status() == "terminal" && assign.object == nil)
    _ = assign.receive(9)
    #expect(target.value == 8)
    #expect(subscription.cancelCount == 0)
  }

  @Test("assign(to:on:) cancelled from another thread while values arrive: stops, object freed")
  func assignCancelledFromAnotherThread() async {
    for round in 0..<100 {
      weak var weakTarget: Target?
      let afterCancel = Box<Int>(0)
      let cancelled = Counter()
      do {
        let subject = PassthroughSubject<Int, Never>()
        let target = Target()
        weakTarget = target
        let c = Shared(subject.assign(to: \.value, on: target))
        let sharedSubject = Shared(subject)
        await simultaneously(
          {
            for i in 1...300 {
              sharedSubject.value.send(i)
              if cancelled.atomic.load(ordering: .acquiring) == 1 {
                // one more send after cancel returned
                sharedSubject.value.send(-i)
                break
              }
            }
          },
          {
            c.value.cancel()
            cancelled.atomic.store(1, ordering: .releasing)
          })
        if target.value < 0 { afterCancel.set(target.value) }
      }
      #expect(afterCancel.value == 0, "round \(round): a value assigned after cancel() returned")
      #expect(weakTarget == nil, "round \(round): object released")
    }
  }

  @Test("ObservableObjectPublisher and makeConnectable: subscribe, send, connect")
  func observableAndConnectable() {
    let publisher = ObservableObjectPublisher()
    let r = RecordingSubscriber<Void, Never>(initialDemand: .max(1))
    publisher.subscribe(r)
    publisher.send()
    publisher.send()
    // Combine's ObservableObjectPublisher treats demand as on/off (OpenCombine's Conduit too).
    #expect(r.values.count == 2)
    r.cancel()  // the subscriber and the subject's conduit hold each other until then

    let connectable = [1, 2, 3].publisher.makeConnectable()
    let seen = Box<[Int]>([])
    let c = connectable.sink { v in seen.update { $0?.append(v) } }
    #expect(seen.value == [])
    let connection = connectable.connect()
    #expect(seen.value == [1, 2, 3])
    _ = (c, connection)
  }
}
