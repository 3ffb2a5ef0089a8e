// Compiled twice: in SluiceSide (SLUICE_SIDE defined) against Sluice, and in OpenCombineSide
// (through a symbolic link) against OpenCombine. Only the import differs.
import ScenarioKit

#if SLUICE_SIDE
  import SluiceCore
  public enum SluiceSide: ConformanceSide {
    public static let name = "Sluice"
    public static func run(_ scenario: Scenario) -> [String] { Driver(scenario).run() }
  }
#else
  import OpenCombine
  public enum OpenCombineSide: ConformanceSide {
    public static let name = "OpenCombine"
    public static func run(_ scenario: Scenario) -> [String] { Driver(scenario).run() }
  }
#endif

/// Runs one scenario and records, in order, what the source and the subscriber see.
final class Driver {
  let scenario: Scenario
  var log: [String] = []
  let source: ScriptedSource
  let scheduler = VirtualScheduler()
  var subscription: (any Subscription)?
  var valuesReceived = 0
  /// The subscriber has received its completion or cancelled.
  var terminated = false

  init(_ scenario: Scenario) {
    self.scenario = scenario
    source = ScriptedSource()
    source.driver = self
    source.completesBeforeSubscription = scenario.completesBeforeSubscription
  }

  func run() -> [String] {
    var pipeline = source.eraseToAnyPublisher()
    for op in scenario.operators { pipeline = apply(op, to: pipeline, driver: self) }
    pipeline.subscribe(ScriptedSubscriber(driver: self))
    for step in scenario.steps {
      switch step {
      case .send(let value): source.send(value)
      case .finish: source.complete(.finished)
      case .fail(let code): source.complete(.failure(TestError(code: code)))
      case .request(let demand):
        // A terminated subscriber asks for nothing more: what a subscription does with signals
        // after its end is where Sluice differs from Combine on purpose (README).
        if let subscription, !terminated {
          log.append("sub request \(demand)")
          subscription.request(demand.combine)
        }
      case .cancel:
        if let subscription, !terminated {
          terminated = true
          log.append("sub cancel")
          subscription.cancel()
        }
      case .advance(let ticks):
        log.append("advance \(ticks)")
        scheduler.advance(by: ticks)
      case .rogueSend(let value): source.rogueSend(value)
      case .rogueFinish: source.rogueFinish()
      }
    }
    source.driver = nil
    return log
  }

  /// What the subscriber returns for its n-th value.
  func returnedDemand(_ index: Int) -> Subscribers.Demand {
    guard index < scenario.returnedDemands.count, let demand = scenario.returnedDemands[index]
    else { return .none }
    return demand.combine
  }
}

extension Demand {
  var combine: Subscribers.Demand {
    switch self {
    case .max(let n): .max(n)
    case .unlimited: .unlimited
    }
  }
}

func describe(_ demand: Subscribers.Demand) -> String {
  demand == .unlimited ? "unlimited" : "max(\(demand.max ?? 0))"
}

func describe<F>(_ completion: Subscribers.Completion<F>) -> String {
  switch completion {
  case .finished: "finished"
  case .failure(let error): "failure(\(error))"
  }
}

/// A well-behaved source driven by the script: sends only against the demand of its current
/// subscription, nothing after that subscription was cancelled or completed; accepts a new
/// subscriber at any time (retry resubscribes), which becomes current.
final class ScriptedSource: Publisher {
  typealias Output = Int
  typealias Failure = TestError

  final class Link: Subscription, CustomStringConvertible {
    weak var source: ScriptedSource?
    let subscriber: AnySubscriber<Int, TestError>
    let number: Int
    var demand = Subscribers.Demand.none
    var live = true

    init(source: ScriptedSource, subscriber: AnySubscriber<Int, TestError>, number: Int) {
      self.source = source
      self.subscriber = subscriber
      self.number = number
    }

    func request(_ demand: Subscribers.Demand) {
      source?.driver?.log.append("src#\(number) request \(describe(demand))")
      if live { self.demand += demand }
    }

    func cancel() {
      source?.driver?.log.append("src#\(number) cancel")
      live = false
    }

    var description: String { "Source" }
  }

  weak var driver: Driver?
  var current: Link?
  var subscriptions = 0
  /// Misbehaves: the first subscriber gets `.finished` before its subscription.
  var completesBeforeSubscription = false

  func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == TestError {
    subscriptions += 1
    driver?.log.append("src#\(subscriptions) subscribed by \(String(describing: subscriber))")
    let link = Link(source: self, subscriber: AnySubscriber(subscriber), number: subscriptions)
    current = link
    if completesBeforeSubscription, subscriptions == 1 {
      driver?.log.append("src#1 finished before its subscription (rogue)")
      subscriber.receive(completion: .finished)
    }
    subscriber.receive(subscription: link)
  }

  /// Sends to the latest subscription although it completed or was cancelled (a misbehaving
  /// source); while it is live, a plain `send`.
  func rogueSend(_ value: Int) {
    guard let link = current, !link.live else { return send(value) }
    let more = link.subscriber.receive(value)
    driver?.log.append("src#\(link.number) sent \(value) (rogue), got \(describe(more))")
  }

  /// Finishes the latest subscription whatever its state (a misbehaving source).
  func rogueFinish() {
    guard let link = current else { return }
    link.live = false
    driver?.log.append("src#\(link.number) finished (rogue)")
    link.subscriber.receive(completion: .finished)
  }

  func send(_ value: Int) {
    guard let link = current, link.live, link.demand > 0 else {
      driver?.log.append("src skip \(value)")
      return
    }
    link.demand -= 1
    let more = link.subscriber.receive(value)
    driver?.log.append("src#\(link.number) sent \(value), got \(describe(more))")
    if link.live { link.demand += more }
  }

  func complete(_ completion: Subscribers.Completion<TestError>) {
    guard let link = current, link.live else {
      driver?.log.append("src skip \(describe(completion))")
      return
    }
    link.live = false
    driver?.log.append("src#\(link.number) \(describe(completion))")
    link.subscriber.receive(completion: completion)
  }
}

/// The subscriber the script drives: records everything and answers as the scenario says.
final class ScriptedSubscriber: Subscriber {
  typealias Input = Int
  typealias Failure = TestError
  let driver: Driver
  let combineIdentifier = CombineIdentifier()

  init(driver: Driver) { self.driver = driver }

  func receive(subscription: any Subscription) {
    driver.log.append("sub subscription \(String(describing: subscription))")
    if driver.subscription == nil { driver.subscription = subscription }
    if let demand = driver.scenario.initialDemand {
      driver.log.append("sub request \(demand)")
      subscription.request(demand.combine)
    }
  }

  func receive(_ input: Int) -> Subscribers.Demand {
    let index = driver.valuesReceived
    driver.valuesReceived += 1
    let more = driver.returnedDemand(index)
    driver.log.append("sub value \(input) → \(describe(more))")
    if driver.scenario.reentrantRequests.contains(index), let subscription = driver.subscription {
      driver.log.append("sub request max(1) (re-entrant)")
      subscription.request(.max(1))
    }
    return more
  }

  func receive(completion: Subscribers.Completion<TestError>) {
    driver.terminated = true
    driver.log.append("sub \(describe(completion))")
  }
}

/// A scheduler on virtual time (integer ticks) that runs actions only when the script advances
/// it: due actions in time order, first scheduled first at equal times; a repeating action runs
/// once per interval that falls due. What is scheduled for now runs at the next advance.
final class VirtualScheduler: Scheduler {
  struct Time: Strideable, Hashable {
    var tick: Int
    func distance(to other: Time) -> Stride { Stride(other.tick - tick) }
    func advanced(by n: Stride) -> Time { Time(tick: tick + n.ticks) }
  }

  struct Stride: SchedulerTimeIntervalConvertible, Comparable, SignedNumeric, Hashable {
    var ticks: Int
    init(_ ticks: Int) { self.ticks = ticks }
    init?<T: BinaryInteger>(exactly source: T) {
      guard let ticks = Int(exactly: source) else { return nil }
      self.ticks = ticks
    }
    init(integerLiteral value: Int) { ticks = value }
    var magnitude: Int { Swift.abs(ticks) }
    static func seconds(_ s: Int) -> Stride { Stride(s) }
    static func seconds(_ s: Double) -> Stride { Stride(Int(s)) }
    static func milliseconds(_ ms: Int) -> Stride { Stride(ms / 1000) }
    static func microseconds(_ us: Int) -> Stride { Stride(us / 1_000_000) }
    static func nanoseconds(_ ns: Int) -> Stride { Stride(ns / 1_000_000_000) }
    static func < (a: Stride, b: Stride) -> Bool { a.ticks < b.ticks }
    static func + (a: Stride, b: Stride) -> Stride { Stride(a.ticks + b.ticks) }
    static func - (a: Stride, b: Stride) -> Stride { Stride(a.ticks - b.ticks) }
    static func * (a: Stride, b: Stride) -> Stride { Stride(a.ticks * b.ticks) }
    static func += (a: inout Stride, b: Stride) { a = a + b }
    static func -= (a: inout Stride, b: Stride) { a = a - b }
    static func *= (a: inout Stride, b: Stride) { a = a * b }
  }

  typealias SchedulerTimeType = Time
  typealias SchedulerOptions = Never

  /// One scheduled action; `interval` for a repeating one, whose `cancelled` ends it.
  final class Entry: Cancellable {
    var due: Int
    let order: Int
    let interval: Int?
    let action: () -> Void
    var cancelled = false
    init(due: Int, order: Int, interval: Int?, action: @escaping () -> Void) {
      self.due = due
      self.order = order
      self.interval = interval
      self.action = action
    }
    func cancel() { cancelled = true }
  }

  private(set) var now = Time(tick: 0)
  var minimumTolerance: Stride { Stride(0) }
  private var entries: [Entry] = []
  private var scheduled = 0

  @discardableResult
  private func add(due: Int, interval: Int?, _ action: @escaping () -> Void) -> Entry {
    scheduled += 1
    let entry = Entry(due: due, order: scheduled, interval: interval, action: action)
    entries.append(entry)
    return entry
  }

  func schedule(options: Never?, _ action: @escaping () -> Void) {
    add(due: now.tick, interval: nil, action)
  }

  func schedule(
    after date: Time, tolerance: Stride, options: Never?, _ action: @escaping () -> Void
  ) {
    add(due: date.tick, interval: nil, action)
  }

  func schedule(
    after date: Time, interval: Stride, tolerance: Stride, options: Never?,
    _ action: @escaping () -> Void
  ) -> any Cancellable {
    add(due: date.tick, interval: Swift.max(1, interval.ticks), action)
  }

  /// Moves time on by `ticks`, running every action that falls due on the way, at its time.
  func advance(by ticks: Int) {
    let end = now.tick + ticks
    while true {
      entries.removeAll(where: \.cancelled)
      guard
        let next = entries.filter({ $0.due <= end })
          .min(by: { ($0.due, $0.order) < ($1.due, $1.order) })
      else { break }
      now = Time(tick: Swift.max(now.tick, next.due))
      if let interval = next.interval {
        next.due += interval
      } else {
        entries.removeAll { $0 === next }
      }
      next.action()
    }
    now = Time(tick: end)
  }
}

/// Thrown by try-operators on their trigger value.
func trigger(_ value: Int, _ k: Int) throws {
  if value == k { throw TestError(code: 100 + k) }
}

func asTestError(_ error: any Error) -> TestError {
  error as? TestError ?? TestError(code: -1)
}

/// The output of a publisher that has none.
func absurd(_ value: Never) -> Int {}

/// Where `print` writes: the driver's log, one entry per line.
final class PrintedLines: TextOutputStream {
  unowned let driver: Driver
  init(driver: Driver) { self.driver = driver }
  func write(_ string: String) {
    if string != "\n" && !string.isEmpty { driver.log.append("print \(string)") }
  }
}

/// `upstream` followed by `op`, erased.
func apply(_ op: Operator, to upstream: AnyPublisher<Int, TestError>, driver: Driver)
  -> AnyPublisher<Int, TestError>
{
  switch op {
  case .print: return upstream.print("p", to: PrintedLines(driver: driver)).eraseToAnyPublisher()
  case .map: return upstream.map { $0 * 2 }.eraseToAnyPublisher()
  case .filter: return upstream.filter { $0 % 2 == 0 }.eraseToAnyPublisher()
  case .compactMap:
    return upstream.compactMap { $0 % 3 == 0 ? nil : $0 }.eraseToAnyPublisher()
  case .scan: return upstream.scan(0, +).eraseToAnyPublisher()
  case .removeDuplicates: return upstream.removeDuplicates().eraseToAnyPublisher()
  case .ignoreOutput: return upstream.ignoreOutput().map(absurd).eraseToAnyPublisher()
  case .handleEvents: return upstream.handleEvents().eraseToAnyPublisher()
  case .breakpoint: return upstream.breakpoint().eraseToAnyPublisher()
  case .mapError: return upstream.mapError { $0 }.eraseToAnyPublisher()
  case .first: return upstream.first().eraseToAnyPublisher()
  case .last: return upstream.last().eraseToAnyPublisher()
  case .collectAll: return upstream.collect().map { $0.reduce(0, +) }.eraseToAnyPublisher()
  case .reduce: return upstream.reduce(0, +).eraseToAnyPublisher()
  case .count: return upstream.count().eraseToAnyPublisher()
  case .min: return upstream.min().eraseToAnyPublisher()
  case .max: return upstream.max().eraseToAnyPublisher()
  case .dropFirst(let k): return upstream.dropFirst(k).eraseToAnyPublisher()
  case .prefix(let k): return upstream.prefix(k).eraseToAnyPublisher()
  case .outputAt(let k): return upstream.output(at: k).eraseToAnyPublisher()
  case .outputIn(let a, let b): return upstream.output(in: a..<b).eraseToAnyPublisher()
  case .firstWhere(let k): return upstream.first { $0 > k }.eraseToAnyPublisher()
  case .lastWhere(let k): return upstream.last { $0 > k }.eraseToAnyPublisher()
  case .collect(let k): return upstream.collect(k).map { $0.reduce(0, +) }.eraseToAnyPublisher()
  case .contains(let k): return upstream.contains(k).map { $0 ? 1 : 0 }.eraseToAnyPublisher()
  case .allSatisfy(let k):
    return upstream.allSatisfy { $0 < k }.map { $0 ? 1 : 0 }.eraseToAnyPublisher()
  case .prefixWhile(let k): return upstream.prefix { $0 != k }.eraseToAnyPublisher()
  case .dropWhile(let k): return upstream.drop { $0 != k }.eraseToAnyPublisher()
  case .tryMap(let k):
    return upstream.tryMap {
      try trigger($0, k); return $0 + 1
    }.mapError(asTestError)
      .eraseToAnyPublisher()
  case .tryFilter(let k):
    return upstream.tryFilter {
      try trigger($0, k); return $0 % 2 == 1
    }.mapError(asTestError)
      .eraseToAnyPublisher()
  case .tryScan(let k):
    return upstream.tryScan(0) {
      try trigger($1, k); return $0 + $1
    }.mapError(asTestError)
      .eraseToAnyPublisher()
  case .tryCompactMap(let k):
    return upstream.tryCompactMap {
      try trigger($0, k); return $0 % 4 == 0 ? nil : $0
    }
    .mapError(asTestError).eraseToAnyPublisher()
  case .tryRemoveDuplicates(let k):
    return upstream.tryRemoveDuplicates {
      try trigger($1, k); return $0 == $1
    }
    .mapError(asTestError).eraseToAnyPublisher()
  case .tryPrefixWhile(let k):
    return upstream.tryPrefix {
      try trigger($0, k); return $0 < 8
    }.mapError(asTestError)
      .eraseToAnyPublisher()
  case .tryDropWhile(let k):
    return upstream.tryDrop {
      try trigger($0, k); return $0 < 5
    }.mapError(asTestError)
      .eraseToAnyPublisher()
  case .tryFirstWhere(let k):
    return upstream.tryFirst {
      try trigger($0, k); return $0 > 6
    }.mapError(asTestError)
      .eraseToAnyPublisher()
  case .tryLastWhere(let k):
    return upstream.tryLast {
      try trigger($0, k); return $0 > 3
    }.mapError(asTestError)
      .eraseToAnyPublisher()
  case .tryMin(let k):
    return upstream.tryMin {
      try trigger($1, k); return $0 < $1
    }.mapError(asTestError)
      .eraseToAnyPublisher()
  case .tryMax(let k):
    return upstream.tryMax {
      try trigger($1, k); return $0 < $1
    }.mapError(asTestError)
      .eraseToAnyPublisher()
  case .tryContains(let k):
    return upstream.tryContains {
      try trigger($0, k); return $0 == 7
    }.map { $0 ? 1 : 0 }
      .mapError(asTestError).eraseToAnyPublisher()
  case .tryAllSatisfy(let k):
    return upstream.tryAllSatisfy {
      try trigger($0, k); return $0 < 9
    }.map { $0 ? 1 : 0 }
      .mapError(asTestError).eraseToAnyPublisher()
  case .tryReduce(let k):
    return upstream.tryReduce(0) {
      try trigger($1, k); return $0 + $1
    }.mapError(asTestError)
      .eraseToAnyPublisher()
  case .catchJust:
    return upstream.catch { _ in Just(-1).setFailureType(to: TestError.self) }
      .eraseToAnyPublisher()
  case .tryCatchJust:
    return upstream.tryCatch { error -> Just<Int> in
      if error.code == 3 { throw TestError(code: 103) }
      return Just(-1)
    }.mapError(asTestError).eraseToAnyPublisher()
  case .replaceError:
    return upstream.replaceError(with: -1).setFailureType(to: TestError.self)
      .eraseToAnyPublisher()
  case .retry(let k): return upstream.retry(k).eraseToAnyPublisher()
  case .receiveOnImmediate:
    return upstream.receive(on: ImmediateScheduler.shared).eraseToAnyPublisher()
  case .subscribeOnImmediate:
    return upstream.subscribe(on: ImmediateScheduler.shared).eraseToAnyPublisher()
  case .debounceImmediate:
    return upstream.debounce(for: .zero, scheduler: ImmediateScheduler.shared)
      .eraseToAnyPublisher()
  case .delayImmediate:
    return upstream.delay(for: .zero, scheduler: ImmediateScheduler.shared).eraseToAnyPublisher()
  case .switchToLatestJust:
    return upstream.map { Just($0).setFailureType(to: TestError.self) }.switchToLatest()
      .eraseToAnyPublisher()
  case .flatMapJust(let k):
    return upstream.flatMap(maxPublishers: k == 0 ? .unlimited : .max(k)) {
      Just($0 * 10).setFailureType(to: TestError.self)
    }.eraseToAnyPublisher()
  case .flatMapSequence(let k):
    return upstream.flatMap(maxPublishers: k == 0 ? .unlimited : .max(k)) {
      [$0, $0 + 100].publisher.setFailureType(to: TestError.self)
    }.eraseToAnyPublisher()
  case .appendValues: return upstream.append(-2, -3).eraseToAnyPublisher()
  case .prependValues: return upstream.prepend(-4).eraseToAnyPublisher()
  case .appendJust:
    return upstream.append(Just(-5).setFailureType(to: TestError.self)).eraseToAnyPublisher()
  case .zipSequence:
    return upstream.zip([0, 10, 20, 30, 40].publisher.setFailureType(to: TestError.self)) {
      $0 + $1
    }.eraseToAnyPublisher()
  case .dropUntilJust:
    return upstream.drop(untilOutputFrom: Just(0).setFailureType(to: TestError.self))
      .eraseToAnyPublisher()
  case .prefixUntilNever:
    return upstream.prefix(untilOutputFrom: Empty<Int, TestError>(completeImmediately: false))
      .eraseToAnyPublisher()
  case .share: return upstream.share().eraseToAnyPublisher()
  case .measureIntervalImmediate:
    return upstream.measureInterval(using: ImmediateScheduler.shared).map { _ in 7 }
      .eraseToAnyPublisher()
  case .throttleImmediate(let latest):
    return upstream.throttle(for: .zero, scheduler: ImmediateScheduler.shared, latest: latest)
      .eraseToAnyPublisher()
  case .buffer(let size, let keepFull, let whenFull):
    let strategy: Publishers.BufferingStrategy<TestError> =
      switch whenFull {
      case 0: .dropNewest
      case 1: .dropOldest
      default: .customError { TestError(code: 50) }
      }
    return upstream.buffer(
      size: size, prefetch: keepFull ? .keepFull : .byRequest, whenFull: strategy
    ).eraseToAnyPublisher()
  case .debounceVirtual(let k):
    return upstream.debounce(for: .init(k), scheduler: driver.scheduler).eraseToAnyPublisher()
  case .throttleVirtual(let k, let latest):
    return upstream.throttle(for: .init(k), scheduler: driver.scheduler, latest: latest)
      .eraseToAnyPublisher()
  case .delayVirtual(let k):
    return upstream.delay(for: .init(k), scheduler: driver.scheduler).eraseToAnyPublisher()
  case .timeoutVirtual(let k):
    return upstream.timeout(.init(k), scheduler: driver.scheduler).eraseToAnyPublisher()
  case .measureIntervalVirtual:
    return upstream.measureInterval(using: driver.scheduler).map { $0.ticks }
      .eraseToAnyPublisher()
  }
}
