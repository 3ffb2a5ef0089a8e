import Dispatch
import Foundation
import SluiceAsync
import SluiceTestSupport
import SluiceTesting
import Synchronization
import Testing

/// How much of each stress and memory test to run: `stressScale` (SluiceTestSupport, from
/// `SLUICE_STRESS_SCALE`). 1 is the full size (10^6 values per path, 10^6 subscribe/cancel
/// cycles, 10^5 abandoned iterations), which CI's plain run sets; unset, 0.05; a soak run sets
/// more (10 gives 10^7 cycles and 10^6 abandoned iterations).
func scaled(_ count: Int) -> Int { stressScaled(count) }

/// Checks values coded as `producer * 1_000_000 + index` as they arrive (serially, from the
/// subscriber): each producer's indices must come in order; `lossless` also requires no gap.
final class ProducerOrder: @unchecked Sendable {
  // Safety: `record` is called serially (a subscriber's signals are serial); the results are
  // read after the last signal, which the test waits for.
  private var next: [Int]
  private(set) var received = 0
  private(set) var problems: [String] = []
  let lossless: Bool

  init(producers: Int, lossless: Bool) {
    next = Array(repeating: 0, count: producers)
    self.lossless = lossless
  }

  func record(_ value: Int) {
    received += 1
    let (producer, index) = value.quotientAndRemainder(dividingBy: 1_000_000)
    let expected = next[producer]
    if lossless ? index != expected : index < expected {
      if problems.count < 5 {
        problems.append(
          "producer \(producer): got \(index), expected \(lossless ? "" : "≥ ")\(expected)")
      }
    }
    next[producer] = index + 1
  }
}

/// A subscriber that counts nothing itself: it hands each value to `onValue`, keeps its
/// subscription for `request`/`cancel` from other threads, and lets a task await its completion.
final class DemandingSubscriber: Subscriber, @unchecked Sendable {
  // Safety: `subscription` is in a lock; `onValue` is called serially (the subscriber's signals
  // are serial).
  typealias Input = Int
  typealias Failure = Never
  private let subscription = Lock<(any Subscription)?>(nil)
  private let initialDemand: Subscribers.Demand
  private let onValue: (Int) -> Void
  private let (ends, ended) = AsyncStream<Void>.makeStream()

  init(initialDemand: Subscribers.Demand, onValue: @escaping (Int) -> Void) {
    self.initialDemand = initialDemand
    self.onValue = onValue
  }

  func receive(subscription: any Subscription) {
    self.subscription.withLock { $0 = subscription }
    subscription.request(initialDemand)
  }

  func receive(_ input: Int) -> Subscribers.Demand {
    onValue(input)
    return .none
  }

  /// Lets go of the subscription, as a subscriber does once it completed: the subscription
  /// and the subscriber would otherwise keep each other alive.
  func receive(completion: Subscribers.Completion<Never>) {
    withExtendedLifetime(takeSubscription()) {}
    ended.finish()
  }

  func request(_ demand: Subscribers.Demand) { subscription.withLock { $0 }?.request(demand) }

  func cancel() {
    takeSubscription()?.cancel()
    ended.finish()
  }

  private func takeSubscription() -> (any Subscription)? {
    subscription.withLock { subscription in
      defer { subscription = nil }
      return subscription
    }
  }

  /// Returns once the subscriber completed or was cancelled.
  func completed() async { for await _ in ends {} }
}

/// Prints a measurement when `SLUICE_STRESS_REPORT` is set (for soak runs; quiet otherwise).
func report(_ line: String) {
  if ProcessInfo.processInfo.environment["SLUICE_STRESS_REPORT"] != nil { print(line) }
}

/// Two more subscribers on a stressed path, under the rule checker: one asks for random amounts
/// from another thread (`drive()`) and checks each producer's order (it may miss values: it
/// has no demand at times), one is cancelled from that thread partway through.
final class RandomDemandWatchers: Sendable {
  let checker = RuleChecker()
  let order = ProducerOrder(producers: StressTests.producers, lossless: false)
  let random: DemandingSubscriber
  let cancelled = DemandingSubscriber(initialDemand: .unlimited) { _ in }

  init<P: Publisher>(_ publisher: P) where P.Output == Int, P.Failure == Never {
    let order = self.order
    random = DemandingSubscriber(initialDemand: .max(10)) { order.record($0) }
    publisher.checkingRules(checker).subscribe(random)
    publisher.checkingRules(checker).subscribe(cancelled)
  }

  /// Sends `perProducer` values coded `producer * 1_000_000 + index` from each of the 8
  /// producer threads (`send(producer, value)`; `finished(producer)` after its last), while a
  /// ninth thread drives these watchers; returns when all are done.
  func sendFromEightThreads(
    _ perProducer: Int, _ send: @escaping @Sendable (Int, Int) -> Void,
    finished: @escaping @Sendable (Int) -> Void = { _ in }
  ) {
    runConcurrently(StressTests.producers + 1) { thread in
      guard thread < StressTests.producers else { return self.drive() }
      for index in 0..<perProducer { send(thread, thread * 1_000_000 + index) }
      finished(thread)
    }
  }

  /// Asks for random amounts 2,000 times and cancels the second subscriber halfway.
  func drive() {
    var generator = SystemRandomNumberGenerator()
    for round in 0..<2_000 {
      random.request(.max(Int.random(in: 1...50, using: &generator)))
      if round == 1_000 { cancelled.cancel() }
    }
  }

  func check(sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(order.problems.isEmpty, "\(order.problems)", sourceLocation: sourceLocation)
    #expect(
      checker.violations.isEmpty, "\(checker.violations.prefix(3))",
      sourceLocation: sourceLocation)
  }
}

@Suite(
  "Stress: 8 threads, 10^6 values per path; memory stays flat", .serialized, .onThreadsOfTheirOwn)
struct StressTests {
  static let producers = 8
  var perProducer: Int { scaled(125_000) }
  var total: Int { Self.producers * perProducer }

  @Test(
    "a subject: every value once, each sender's order kept; a subscriber with random demand and one cancelled midway stay within the rules"
  )
  func subject() async {
    let subject = PassthroughSubject<Int, Never>()
    let order = ProducerOrder(producers: Self.producers, lossless: true)
    let all = subject.sink { order.record($0) }
    let watchers = RandomDemandWatchers(subject)
    let perProducer = self.perProducer
    watchers.sendFromEightThreads(perProducer) { subject.send($1) }
    subject.send(completion: .finished)
    #expect(order.received == total)
    #expect(order.problems.isEmpty, "\(order.problems)")
    watchers.check()
    all.cancel()
  }

  @Test("merge of 8 subjects, one per thread: every value once, each sender's order kept")
  func merge() {
    fanIn { Publishers.MergeMany($0).eraseToAnyPublisher() }
  }

  @Test("flatMap over 8 inner subjects, one per thread: every value once, each sender's order kept")
  func flatMap() {
    fanIn { $0.publisher.flatMap(maxPublishers: .max(8)) { $0 }.eraseToAnyPublisher() }
  }

  /// 8 subjects, each fed (then finished) by a thread of its own, combined by `combine`: every
  /// value arrives once, each subject's in order, within the rules, then the completion; two
  /// more subscribers ask for random amounts / are cancelled midway (``RandomDemandWatchers``).
  func fanIn(_ combine: ([PassthroughSubject<Int, Never>]) -> AnyPublisher<Int, Never>) {
    let subjects = (0..<Self.producers).map { _ in PassthroughSubject<Int, Never>() }
    let order = ProducerOrder(producers: Self.producers, lossless: true)
    let checker = RuleChecker()
    let done = Mutex(false)
    let combined = combine(subjects)
    let cancellable = combined.checkingRules(checker)
      .sink(
        receiveCompletion: { _ in done.withLock { $0 = true } }, receiveValue: { order.record($0) })
    let watchers = RandomDemandWatchers(combined)
    let perProducer = self.perProducer
    watchers.sendFromEightThreads(perProducer) {
      subjects[$0].send($1)
    } finished: {
      subjects[$0].send(completion: .finished)
    }
    #expect(done.withLock { $0 })
    #expect(order.received == total)
    #expect(order.problems.isEmpty, "\(order.problems)")
    #expect(checker.violations.isEmpty, "\(checker.violations.prefix(3))")
    watchers.check()
    cancellable.cancel()
  }

  @Test(
    "receive(on: a concurrent queue), 8 senders: every value once, serial, each sender's order kept"
  )
  func receiveOn() async {
    let subject = PassthroughSubject<Int, Never>()
    let order = ProducerOrder(producers: Self.producers, lossless: true)
    let checker = RuleChecker()
    let recorder = DemandingSubscriber(initialDemand: .unlimited) { order.record($0) }
    let hop = subject.receive(on: DispatchQueue.global())
    hop.checkingRules(checker).subscribe(recorder)
    let watchers = RandomDemandWatchers(hop)
    let perProducer = self.perProducer
    watchers.sendFromEightThreads(perProducer) { subject.send($1) }
    subject.send(completion: .finished)
    await recorder.completed()
    await watchers.random.completed()  // its values come on the queue too
    #expect(order.received == total)
    #expect(order.problems.isEmpty, "\(order.problems)")
    #expect(checker.violations.isEmpty, "\(checker.violations.prefix(3))")
    watchers.check()
  }

  @Test(
    "a subject's lossless values read by a task while 8 threads send: every value once, in order")
  func valuesBridge() async {
    let subject = PassthroughSubject<Int, Never>()
    let order = ProducerOrder(producers: Self.producers, lossless: true)
    let values = subject.values
    let reader = Task {
      for await value in values { order.record(value) }
    }
    // The bridge subscribes when iteration starts: wait for it before sending.
    #expect(await eventually { subject.hasSubscribers })
    let watchers = RandomDemandWatchers(subject)
    let perProducer = self.perProducer
    await Task.detached {
      watchers.sendFromEightThreads(perProducer) { subject.send($1) }
    }.value
    subject.send(completion: .finished)
    await reader.value
    #expect(order.received == total)
    #expect(order.problems.isEmpty, "\(order.problems)")
    watchers.check()
  }

  /// Memory is measured by what it means, live objects, so that the test holds under every
  /// configuration (a sanitizer's quarantine keeps freed memory resident, and a debug build's
  /// allocator differs from a release one's); resident memory is only reported (soak runs).
  @Test("subscribe + cancel cycles leave nothing behind: subscriber, closure, subscription")
  func subscribeCancelMemory() {
    let subject = PassthroughSubject<Int, Never>()
    let cycles = scaled(1_000_000)
    let live = LiveObjects()
    var keptSubscriptions = 0
    let before = residentBytes()
    for cycle in 0..<cycles {
      if cycle.isMultiple(of: 2) {
        // The common path: a sink whose closure holds an object.
        let token = live.make()
        subject.sink { _ in token.touch() }.cancel()
      } else {
        // The subject's own subscription object must go too, not only what it delivers to.
        weak var subscription: AnyObject?
        do {
          let subscriber = HoldingSubscriber()
          subject.subscribe(subscriber)
          subscription = subscriber.subscription.map { $0 as AnyObject }
          subscriber.cancel()
        }
        if subscription != nil { keptSubscriptions += 1 }
      }
    }
    report(
      "subscribe + cancel: \(cycles) cycles, resident memory +\((residentBytes() - before) >> 10) KiB"
    )
    #expect(live.count == 0, "\(live.count) of \(cycles / 2) sink closures still alive")
    #expect(keptSubscriptions == 0, "\(keptSubscriptions) subscriptions kept after cancel()")
    #expect(!subject.hasSubscribers)
  }

  @Test("values iterations abandoned midway leave nothing behind: subject, bridge, pipeline")
  func abandonedIterationsMemory() async {
    let iterations = scaled(100_000)
    let live = LiveObjects()
    /// One iteration abandoned at its fourth value; the subject is returned (weakly) if it
    /// outlived the iteration.
    func abandonOne() async -> WeakReference? {
      let subject = CurrentValueSubject<Int, Never>(0)
      let token = live.make()
      for await value in subject.map({ token.touch($0) }).values {
        if value == 3 { break }
        subject.send(value + 1)
      }
      return WeakReference(subject)
    }
    let before = residentBytes()
    var outlived: [WeakReference] = []
    for _ in 0..<iterations {
      if let subject = await abandonOne(), subject.object != nil { outlived.append(subject) }
    }
    report(
      "abandoned values iterations: \(iterations), resident memory "
        + "+\((residentBytes() - before) >> 10) KiB")
    // A bridge may let go on a task of its own just after the iteration: wait for that.
    #expect(await eventually { outlived.allSatisfy { $0.object == nil } && live.count == 0 })
    #expect(live.count == 0, "\(live.count) of \(iterations) pipelines still alive")
    #expect(outlived.filter { $0.object != nil }.isEmpty)
  }
}

/// Counts the objects it made that are still alive.
final class LiveObjects: Sendable {
  private let alive = Atomic<Int>(0)

  /// An object counted until it is released.
  final class Token: Sendable {
    let owner: LiveObjects
    init(_ owner: LiveObjects) {
      self.owner = owner
      owner.alive.add(1, ordering: .relaxed)
    }
    deinit { owner.alive.subtract(1, ordering: .relaxed) }
    func touch() {}
    func touch<Value>(_ value: Value) -> Value { value }
  }

  func make() -> Token { Token(self) }
  var count: Int { alive.load(ordering: .relaxed) }
}

/// A weak reference to an object, to check later whether it is gone.
final class WeakReference: @unchecked Sendable {
  // Safety: written once at creation; reading a weak reference is thread-safe.
  weak var object: AnyObject?
  init(_ object: AnyObject) { self.object = object }
}

/// A subscriber that holds its subscription (as every subscriber does) until it cancels.
final class HoldingSubscriber: Subscriber, @unchecked Sendable {
  // Safety: used from one thread.
  typealias Input = Int
  typealias Failure = Never
  private(set) var subscription: (any Subscription)?

  func receive(subscription: any Subscription) { self.subscription = subscription }
  func receive(_ input: Int) -> Subscribers.Demand { .none }
  func receive(completion: Subscribers.Completion<Never>) { subscription = nil }

  func cancel() {
    subscription?.cancel()
    subscription = nil
  }
}
