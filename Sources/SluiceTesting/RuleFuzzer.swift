import Dispatch
import Foundation
public import SluiceCore

/// Drives a publisher (or an operator) with scripts generated from seeds and checks every rule
/// of the publisher–subscriber contract, then shrinks a failing script to a minimal one and
/// prints it as a readable reproduction.
///
/// The publisher under test is made by a factory from a ``FuzzUpstream`` — a well-behaved
/// upstream that sends a value only while it has demand — so an operator is tested on what it
/// does with demand, cancellation and completion it receives (a publisher that has no upstream
/// ignores it). Each script has 1…`maxThreads` (8 unless set) lanes, run on as many threads at once; a lane's
/// steps are requests (and the demand `receive(_:)` returns, and requests made re-entrantly
/// from inside `receive(_:)`), a `cancel()`, and the upstream's values, completion or failure.
/// After the lanes, the subscriber cancels (unless it completed), and the fuzzer checks:
/// - every rule ``RuleChecker`` watches (never more than demanded, serial signals, one
///   completion, nothing after `cancel()` returned);
/// - the upstream's subscriptions ended: cancelled or completed;
/// - the subscriber was released (a weak reference to it is `nil` once the test let go).
///
/// ```swift
/// let report = RuleFuzzer(seeds: 0..<200).check { upstream in upstream.map { $0 * 2 } }
/// #expect(report.failure == nil, "\(report)")
/// ```
///
/// A failing script is shrunk by removing steps (and threads) while it still fails; scripts
/// with several threads are run up to ``attempts`` times per candidate, since their failures
/// depend on timing.
public struct RuleFuzzer: Sendable {
  /// The seeds to generate scripts from, one script per seed.
  public var seeds: Range<UInt64>
  /// The most threads a script runs on (1 makes every script deterministic).
  public var maxThreads: Int
  /// The most steps per script.
  public var maxSteps: Int
  /// How many times a multi-threaded script is run before it is taken to pass.
  public var attempts: Int
  /// Called after the lanes and before the release check: lets asynchronous publishers (a
  /// queue, a scheduler) finish what they started.
  public var settle: @Sendable () -> Void
  /// Whether the upstream's subscriptions must have ended once the subscriber cancelled
  /// (`false` for a publisher that keeps its upstream on purpose, like a subject).
  public var checksUpstream = true
  /// How long a publisher whose signals come from a task (`AsyncFuture`, `AsyncProducer`,
  /// `asyncSequence.publisher`, `asyncMap`, …) may take, once its subscriber cancelled, to end
  /// its upstream's subscription and release the subscriber: the checks are repeated until
  /// they pass or this time is over. Zero (the default) checks once, right away. The fuzzer
  /// blocks its thread meanwhile, so run it off Swift's cooperative pool (on a dispatch queue)
  /// when the publisher's tasks need that pool to run.
  public var gracePeriod: Duration = .zero

  /// A fuzzer running one script per seed in `seeds`.
  public init(
    seeds: Range<UInt64>, maxThreads: Int = 8, maxSteps: Int = 12, attempts: Int = 5,
    settle: @escaping @Sendable () -> Void = {}
  ) {
    self.seeds = seeds
    self.maxThreads = max(1, maxThreads)
    self.maxSteps = max(1, maxSteps)
    self.attempts = max(1, attempts)
    self.settle = settle
  }

  /// Runs a script per seed against the publishers `make` builds; stops at the first failing
  /// script and shrinks it.
  public func check<P: Publisher>(
    _ make: (FuzzUpstream) -> P
  ) -> RuleFuzzReport {
    check { upstream, _ in make(upstream) }
  }

  /// `check(_:)` that also checks the pipeline's closures are released when its subscription
  /// ends: `make` gets a ``FuzzToken`` for the closures it passes to operators to capture, and
  /// the token must be gone once the subscriber cancelled or completed (each operator's
  /// subscription lets go of its closures then).
  ///
  /// ```swift
  /// let report = RuleFuzzer(seeds: 0..<100).check { upstream, token in
  ///   upstream.map { token.touch($0) }.filter { token.touch($0) > 1 }
  /// }
  /// ```
  public func check<P: Publisher>(
    _ make: (FuzzUpstream, FuzzToken) -> P
  ) -> RuleFuzzReport {
    var scripts = 0
    for seed in seeds {
      let script = FuzzScript(seed: seed, maxThreads: maxThreads, maxSteps: maxSteps)
      scripts += 1
      if let problems = failures(of: script, make) {
        let (minimal, minimalProblems) = shrink(script, problems, make)
        return RuleFuzzReport(
          scripts: scripts,
          failure: RuleFuzzReport.Failure(
            seed: seed, script: script, minimal: minimal, problems: minimalProblems))
      }
    }
    return RuleFuzzReport(scripts: scripts, failure: nil)
  }

  /// The problems of one given script, empty when every rule held: a script decoded from a
  /// coverage-guided fuzzer's input (``FuzzScript/init(bytes:maxThreads:maxSteps:)``) or kept
  /// by a regression test. A script with several lanes runs up to ``attempts`` times.
  ///
  /// ```swift
  /// let script = FuzzScript(lanes: [[.request(.max(1)), .send(0), .cancel]])
  /// #expect(RuleFuzzer(seeds: 0..<1).problems(of: script) { upstream, _ in upstream.prefix(1) } == [])
  /// ```
  public func problems<P: Publisher>(
    of script: FuzzScript, _ make: (FuzzUpstream, FuzzToken) -> P
  ) -> [String] {
    failures(of: script, make) ?? []
  }

  /// The smallest script found that still fails, shrunk from a failing `script` as `check(_:)`
  /// shrinks a generated one, with its problems; `nil` if `script` passes.
  public func minimalFailure<P: Publisher>(
    of script: FuzzScript, _ make: (FuzzUpstream, FuzzToken) -> P
  ) -> (script: FuzzScript, problems: [String])? {
    guard let problems = failures(of: script, make) else { return nil }
    let (minimal, minimalProblems) = shrink(script, problems, make)
    return (minimal, minimalProblems)
  }

  /// The problems of `script` (run up to `attempts` times if it has several lanes), or `nil`.
  func failures<P: Publisher>(
    of script: FuzzScript, _ make: (FuzzUpstream, FuzzToken) -> P
  ) -> [String]? {
    for _ in 0..<(script.lanes.count > 1 ? attempts : 1) {
      let problems = FuzzRun.run(
        script, make: make, settle: settle, checksUpstream: checksUpstream,
        gracePeriod: gracePeriod)
      if !problems.isEmpty { return problems }
    }
    return nil
  }

  /// Removes steps, then threads, while the script still fails.
  func shrink<P: Publisher>(
    _ script: FuzzScript, _ problems: [String], _ make: (FuzzUpstream, FuzzToken) -> P
  ) -> (FuzzScript, [String]) {
    var current = (script, problems)
    var progress = true
    while progress {
      progress = false
      // All lanes on one thread, in lane order.
      if current.0.lanes.count > 1 {
        let serial = FuzzScript(lanes: [current.0.lanes.flatMap { $0 }])
        if let found = failures(of: serial, make) {
          current = (serial, found)
          progress = true
          continue
        }
      }
      for lane in current.0.lanes.indices {
        for step in current.0.lanes[lane].indices.reversed() {
          var candidate = current.0
          candidate.lanes[lane].remove(at: step)
          candidate.lanes.removeAll { $0.isEmpty }
          if let found = failures(of: candidate, make) {
            current = (candidate, found)
            progress = true
            break
          }
        }
        if progress { break }
      }
    }
    return current
  }
}

/// What a ``RuleFuzzer`` run found.
public struct RuleFuzzReport: Sendable, CustomStringConvertible {
  /// A failing script: as generated, and shrunk.
  public struct Failure: Sendable {
    /// The seed that generated the script.
    public let seed: UInt64
    /// The script as generated.
    public let script: FuzzScript
    /// The smallest script found that still fails.
    public let minimal: FuzzScript
    /// What the minimal script broke.
    public let problems: [String]
  }

  /// How many scripts ran.
  public let scripts: Int
  /// The first failing script, or `nil` if every script passed.
  public let failure: Failure?

  public var description: String {
    guard let failure else { return "\(scripts) scripts, every rule kept" }
    return """
      Rule fuzzing failed at seed \(failure.seed) (script \(scripts)):
      \(failure.problems.map { "  - \($0)" }.joined(separator: "\n"))
      Minimal reproduction (\(failure.minimal.stepCount) of \(failure.script.stepCount) steps):
      \(failure.minimal)
      """
  }
}

/// One step of a fuzzing script.
public enum FuzzStep: Sendable, Equatable, CustomStringConvertible {
  /// The subscriber requests this much.
  case request(Subscribers.Demand)
  /// From now on, `receive(_:)` returns this demand.
  case returnDemand(Subscribers.Demand)
  /// The next `receive(_:)` requests this much from inside it (re-entrantly).
  case requestFromReceive(Subscribers.Demand)
  /// The subscriber cancels.
  case cancel
  /// The upstream sends this value (if it has demand: it is well-behaved).
  case send(Int)
  /// The upstream finishes.
  case finish
  /// The upstream fails.
  case fail

  public var description: String {
    switch self {
    case .request(let demand): "subscription.request(\(demand))"
    case .returnDemand(let demand): "receive(_:) returns \(demand) from now on"
    case .requestFromReceive(let demand): "the next receive(_:) calls request(\(demand))"
    case .cancel: "subscription.cancel()"
    case .send(let value): "upstream.send(\(value))"
    case .finish: "upstream.send(completion: .finished)"
    case .fail: "upstream.send(completion: .failure(FuzzUpstream.Failure()))"
    }
  }
}

/// A fuzzing script: lanes of steps, each lane run on a thread of its own, all at once.
public struct FuzzScript: Sendable, CustomStringConvertible {
  /// The lanes; one lane runs on the calling thread, in order.
  public var lanes: [[FuzzStep]]

  /// A script of these lanes.
  public init(lanes: [[FuzzStep]]) { self.lanes = lanes }

  /// The script generated from `seed`.
  public init(seed: UInt64, maxThreads: Int, maxSteps: Int) {
    var random = SplitMix64(seed: seed)
    let threads = 1 + Int(random.next() % UInt64(maxThreads))
    let steps = 1 + Int(random.next() % UInt64(maxSteps))
    var lanes = Array(repeating: [FuzzStep](), count: threads)
    var value = 0
    for _ in 0..<steps {
      let lane = Int(random.next() % UInt64(threads))
      let demand: Subscribers.Demand =
        random.next() % 5 == 0 ? .unlimited : .max(1 + Int(random.next() % 3))
      let step: FuzzStep
      switch random.next() % 16 {
      case 0..<4: step = .request(demand)
      case 4..<10:
        step = .send(value)
        value += 1
      case 10: step = .returnDemand(random.next() % 2 == 0 ? .none : .max(1))
      case 11: step = .requestFromReceive(demand)
      case 12, 13: step = .cancel
      case 14: step = .finish
      default: step = .fail
      }
      lanes[lane].append(step)
    }
    self.lanes = lanes.filter { !$0.isEmpty }
  }

  /// The script `bytes` spell, for a coverage-guided fuzzer: the first byte chooses the
  /// number of lanes (1…`maxThreads`), then each step takes one byte — its lane (high nibble)
  /// and its kind (low nibble, in the proportions of a seeded script) — and a request or a
  /// demand returned from `receive(_:)` one more for the demand. Values are sent numbered
  /// 0, 1, 2, … At most `maxSteps` steps; bytes left over are ignored, and missing ones end
  /// the script, so every input is a script and a small change of input a small change of
  /// script.
  public init(bytes: some Sequence<UInt8>, maxThreads: Int = 8, maxSteps: Int = 64) {
    var input = bytes.makeIterator()
    let threads = 1 + Int(input.next() ?? 0) % max(1, maxThreads)
    var lanes = Array(repeating: [FuzzStep](), count: threads)
    var value = 0
    func demand(_ byte: UInt8?) -> Subscribers.Demand {
      guard let byte else { return .max(1) }
      return byte % 8 == 7 ? .unlimited : .max(1 + Int(byte % 8))
    }
    for _ in 0..<max(1, maxSteps) {
      guard let byte = input.next() else { break }
      let lane = Int(byte >> 4) % threads
      let step: FuzzStep
      switch byte & 0x0F {
      case 0..<4: step = .request(demand(input.next()))
      case 4..<10:
        step = .send(value)
        value += 1
      case 10: step = .returnDemand((input.next() ?? 0) % 2 == 0 ? .none : .max(1))
      case 11: step = .requestFromReceive(demand(input.next()))
      case 12, 13: step = .cancel
      case 14: step = .finish
      default: step = .fail
      }
      lanes[lane].append(step)
    }
    self.lanes = lanes.filter { !$0.isEmpty }
  }

  /// The number of steps in every lane.
  public var stepCount: Int { lanes.reduce(0) { $0 + $1.count } }

  public var description: String {
    lanes.enumerated().map { index, lane in
      let steps = lane.enumerated().map { "    \($0.offset + 1). \($0.element)" }
      return (lanes.count > 1 ? "  thread \(index + 1):\n" : "") + steps.joined(separator: "\n")
    }.joined(separator: "\n")
  }
}

/// The upstream a ``RuleFuzzer`` hands to the publisher under test: it sends a value only to
/// subscribers that have demand for it (it keeps the rules itself), one signal at a time, and
/// records whether each of its subscriptions ended.
public final class FuzzUpstream: Publisher, @unchecked Sendable {
  // Safety: the list of subscriptions is in `subscriptions`' lock and each subscription's state
  // in its own; signals are sent while holding `delivering`, a recursive lock, so they are
  // serial even when lanes send at once (a subscriber may request or cancel from inside
  // `receive`, which takes only the subscription's lock).
  public typealias Output = Int

  /// The upstream's failure.
  public struct Failure: Error, Equatable, Sendable {
    /// A failure.
    public init() {}
  }

  /// One subscriber's subscription. It holds no reference to the upstream (the upstream holds
  /// it, to send and to count open subscriptions), and lets go of its subscriber when it ends,
  /// so nothing of a run outlives it.
  final class Subscription: SluiceCore.Subscription, @unchecked Sendable {
    // Safety: mutable state is only touched inside `state`'s lock.
    struct State {
      var subscriber: AnySubscriber<Int, Failure>?
      var demand = Subscribers.Demand.none
      var ended = false
    }

    let state: Lock<State>

    init(subscriber: AnySubscriber<Int, Failure>) {
      state = Lock(State(subscriber: subscriber))
    }

    func request(_ demand: Subscribers.Demand) {
      state.withLock { state in if !state.ended { state.demand += demand } }
    }

    func cancel() { withExtendedLifetime(end()) {} }

    /// Ends the subscription; returns the subscriber it let go of (`nil` if it had ended), to
    /// be released (or completed) after unlocking.
    func end() -> AnySubscriber<Int, Failure>? {
      state.withLock { state in
        state.ended = true
        defer { state.subscriber = nil }
        return state.subscriber
      }
    }

    /// The subscriber, if the subscription is open and has demand for a value (which it uses).
    func takeDemand() -> AnySubscriber<Int, Failure>? {
      state.withLock { state in
        guard !state.ended, state.demand > 0, let subscriber = state.subscriber else { return nil }
        state.demand -= 1
        return subscriber
      }
    }

    var isEnded: Bool { state.withLock { $0.ended } }
  }

  let subscriptions = Lock<[Subscription]>([])
  let delivering = NSRecursiveLock()

  /// An upstream with no subscribers yet.
  public init() {}

  public func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Failure {
    let subscription = Subscription(subscriber: AnySubscriber(subscriber))
    subscriptions.withLock { $0.append(subscription) }
    subscriber.receive(subscription: subscription)
  }

  /// Sends `value` to every subscriber with demand for it.
  public func send(_ value: Int) {
    delivering.lock()
    defer { delivering.unlock() }
    let targets = subscriptions.withLock { $0 }.compactMap { subscription in
      subscription.takeDemand().map { (subscription, $0) }
    }
    for (subscription, subscriber) in targets {
      let more = subscriber.receive(value)
      if more > 0 { subscription.request(more) }
    }
  }

  /// Completes every subscription that has not ended.
  public func send(completion: Subscribers.Completion<Failure>) {
    delivering.lock()
    defer { delivering.unlock() }
    let targets = subscriptions.withLock { $0 }.compactMap { $0.end() }
    for subscriber in targets { subscriber.receive(completion: completion) }
  }

  /// How many of the subscriptions have not ended (neither cancelled nor completed).
  var openSubscriptions: Int { subscriptions.withLock { $0 }.filter { !$0.isEnded }.count }

  /// Finishes every subscription still open and lets go of its subscriber: the end of a run,
  /// after its checks. A publisher that keeps its upstream on purpose (a subject fed by this
  /// upstream) or a broken operator that ignores `cancel()` keeps a subscription open, and it
  /// and its subscriber would otherwise keep each other alive after the run.
  func finishOpenSubscriptions() {
    send(completion: .finished)
  }
}

/// The subscriber of a fuzzing run: requests, returns demand and cancels as the script says.
final class FuzzSubscriber<Input, Failure: Error>: Subscriber, @unchecked Sendable {
  // Safety: all mutable state is in `state`'s lock; the subscription is called after unlocking.
  struct State {
    var subscription: (any Subscription)?
    var returned = Subscribers.Demand.none
    var requestFromReceive: Subscribers.Demand?
    var completed = false
  }

  let state = Lock(State())

  func receive(subscription: any Subscription) {
    state.withLock { $0.subscription = subscription }
  }

  func receive(_ input: Input) -> Subscribers.Demand {
    let (subscription, reentrant, returned) = state.withLock { state in
      defer { state.requestFromReceive = nil }
      return (state.subscription, state.requestFromReceive, state.returned)
    }
    if let reentrant { subscription?.request(reentrant) }
    return returned
  }

  func receive(completion: Subscribers.Completion<Failure>) {
    let subscription = state.withLock { state -> (any Subscription)? in
      state.completed = true
      defer { state.subscription = nil }
      return state.subscription
    }
    withExtendedLifetime(subscription) {}
  }

  func perform(_ step: FuzzStep) {
    switch step {
    case .request(let demand): state.withLock { $0.subscription }?.request(demand)
    case .returnDemand(let demand): state.withLock { $0.returned = demand }
    case .requestFromReceive(let demand): state.withLock { $0.requestFromReceive = demand }
    case .cancel: cancel()
    case .send, .finish, .fail: break
    }
  }

  func cancel() {
    let subscription = state.withLock { state -> (any Subscription)? in
      defer { state.subscription = nil }
      return state.subscription
    }
    subscription?.cancel()
  }
}

/// An object for a fuzzed pipeline's closures to capture, so that ``RuleFuzzer`` can check
/// they are released when the subscription ends (see `RuleFuzzer.check(_:)`, whose `make` takes
/// a token).
public final class FuzzToken: Sendable {
  /// A token (made by the fuzzer for each run).
  init() {}

  /// Returns `value`: call it from a closure so that the closure captures the token.
  public func touch<Value>(_ value: Value) -> Value { value }
}

/// One run of one script.
enum FuzzRun {
  static func run<P: Publisher>(
    _ script: FuzzScript, make: (FuzzUpstream, FuzzToken) -> P,
    settle: @Sendable () -> Void, checksUpstream: Bool, gracePeriod: Duration
  ) -> [String] {
    let upstream = FuzzUpstream()
    let checker = RuleChecker()
    weak var weakSubscriber: FuzzSubscriber<P.Output, P.Failure>?
    weak var weakToken: FuzzToken?
    do {
      let subscriber = FuzzSubscriber<P.Output, P.Failure>()
      weakSubscriber = subscriber
      let token = FuzzToken()
      weakToken = token
      make(upstream, token).checkingRules(checker).subscribe(subscriber)
      let lanes = script.lanes
      let perform = { @Sendable (lane: Int) in
        for step in lanes[lane] {
          switch step {
          case .send(let value): upstream.send(value)
          case .finish: upstream.send(completion: .finished)
          case .fail: upstream.send(completion: .failure(FuzzUpstream.Failure()))
          default: subscriber.perform(step)
          }
        }
      }
      if lanes.count == 1 {
        perform(0)
      } else {
        DispatchQueue.concurrentPerform(iterations: lanes.count, execute: perform)
      }
      settle()
      // The end of every run: the subscriber cancels, unless it completed.
      if !subscriber.state.withLock({ $0.completed }) { subscriber.cancel() }
      settle()
    }
    // A publisher driven by a task ends its upstream and lets go of the subscriber when the
    // task notices the cancel: wait for that, up to the grace period.
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: gracePeriod)
    var upstreamOpen = checksUpstream && upstream.openSubscriptions > 0
    var subscriberKept = weakSubscriber != nil
    var closuresKept = checksUpstream && weakToken != nil
    while (upstreamOpen || subscriberKept || closuresKept) && clock.now < deadline {
      usleep(500)
      upstreamOpen = checksUpstream && upstream.openSubscriptions > 0
      subscriberKept = weakSubscriber != nil
      closuresKept = checksUpstream && weakToken != nil
    }
    // After the checks: nothing of the run outlives it.
    defer { upstream.finishOpenSubscriptions() }
    var problems = checker.violations.map(\.description)
    if upstreamOpen {
      problems.append(
        "the upstream's subscription was neither cancelled nor completed after the subscriber "
          + "cancelled")
    }
    if subscriberKept {
      problems.append("the subscriber was still referenced after the subscription ended")
    }
    if closuresKept {
      problems.append(
        "the pipeline's closures (holding the FuzzToken) were still referenced after the "
          + "subscription ended")
    }
    return problems
  }
}

/// A small, fast, seedable random number generator (SplitMix64), so that a seed always gives
/// the same script.
struct SplitMix64: RandomNumberGenerator {
  var state: UInt64

  init(seed: UInt64) { state = seed }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
