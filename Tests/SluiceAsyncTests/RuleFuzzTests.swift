import Foundation
import SluiceAsync
import SluiceTestSupport
import SluiceTesting
import Synchronization
import Testing

/// The seeds each publisher is fuzzed with: 120 at the full stress size (`SLUICE_STRESS_SCALE=1`,
/// CI), scaled with it and never fewer than 12 (a plain `swift test` runs 12);
/// `SLUICE_FUZZ_SEEDS=n` runs `n` per publisher whatever the scale.
let fuzzSeeds = UInt64(
  ProcessInfo.processInfo.environment["SLUICE_FUZZ_SEEDS"].flatMap(Int.init)
    ?? max(12, stressScaled(120)))

/// Fuzzes the publishers `make` builds with `fuzzSeeds` scripts and records the report.
@discardableResult
func fuzz<P: Publisher>(
  _ name: String, maxThreads: Int = 8, checksUpstream: Bool = true,
  sourceLocation: SourceLocation = #_sourceLocation,
  _ make: (FuzzUpstream) -> P
) -> Int {
  var fuzzer = RuleFuzzer(seeds: 0..<fuzzSeeds, maxThreads: maxThreads)
  fuzzer.checksUpstream = checksUpstream
  let report = fuzzer.check(make)
  #expect(report.failure == nil, "\(name): \(report)", sourceLocation: sourceLocation)
  return report.scripts
}

@Suite("RuleFuzzer: every built-in operator under generated scripts", .onThreadsOfTheirOwn)
struct RuleFuzzTests {
  typealias Failure = FuzzUpstream.Failure

  @Test("one-upstream operators keep every rule")
  func oneUpstreamOperators() {
    var scripts = 0
    scripts += fuzz("map") { $0.map { $0 * 2 } }
    scripts += fuzz("tryMap") { $0.tryMap { $0 * 2 } }
    scripts += fuzz("filter") { $0.filter { $0.isMultiple(of: 2) } }
    scripts += fuzz("compactMap") { $0.compactMap { $0 == 1 ? nil : $0 } }
    scripts += fuzz("scan") { $0.scan(0, +) }
    scripts += fuzz("removeDuplicates") { $0.map { $0 / 2 }.removeDuplicates() }
    scripts += fuzz("dropFirst") { $0.dropFirst(1) }
    scripts += fuzz("drop(while:)") { $0.drop { $0 < 2 } }
    scripts += fuzz("prefix") { $0.prefix(2) }
    scripts += fuzz("prefix(while:)") { $0.prefix { $0 < 3 } }
    scripts += fuzz("output(in:)") { $0.output(in: 1..<3) }
    scripts += fuzz("first") { $0.first() }
    scripts += fuzz("last") { $0.last() }
    scripts += fuzz("collect") { $0.collect() }
    scripts += fuzz("collect(2)") { $0.collect(2) }
    scripts += fuzz("reduce") { $0.reduce(0, +) }
    scripts += fuzz("count") { $0.count() }
    scripts += fuzz("contains") { $0.contains(2) }
    scripts += fuzz("allSatisfy") { $0.allSatisfy { $0 < 3 } }
    scripts += fuzz("ignoreOutput") { $0.ignoreOutput() }
    scripts += fuzz("replaceEmpty") { $0.replaceEmpty(with: -1) }
    scripts += fuzz("replaceError") { $0.replaceError(with: -1) }
    scripts += fuzz("mapError") { $0.mapError { _ in URLError(.badURL) } }
    scripts += fuzz("catch") { $0.catch { _ in Just(-1) } }
    scripts += fuzz("retry") { $0.retry(1) }
    scripts += fuzz("handleEvents") { $0.handleEvents(receiveOutput: { _ in }) }
    scripts += fuzz("buffer") { $0.buffer(size: 2, prefetch: .byRequest, whenFull: .dropOldest) }
    scripts += fuzz("append") { $0.append(7, 8) }
    scripts += fuzz("prepend") { $0.prepend(7, 8) }
    #expect(scripts == 29 * Int(fuzzSeeds))
  }

  @Test("operators let go of their closures when the subscription ends")
  func closuresAreReleased() {
    func fuzzReleasing<P: Publisher>(
      _ name: String, sourceLocation: SourceLocation = #_sourceLocation,
      _ make: (FuzzUpstream, FuzzToken) -> P
    ) {
      let report = RuleFuzzer(seeds: 0..<max(1, fuzzSeeds / 2)).check(make)
      #expect(report.failure == nil, "\(name): \(report)", sourceLocation: sourceLocation)
    }
    fuzzReleasing("map") { upstream, token in upstream.map { token.touch($0) } }
    fuzzReleasing("tryMap") { upstream, token in upstream.tryMap { token.touch($0) } }
    fuzzReleasing("filter") { upstream, token in upstream.filter { token.touch($0) > 0 } }
    fuzzReleasing("compactMap") { upstream, token in upstream.compactMap { token.touch($0) } }
    fuzzReleasing("scan") { upstream, token in upstream.scan(0) { token.touch($0 + $1) } }
    fuzzReleasing("reduce") { upstream, token in upstream.reduce(0) { token.touch($0 + $1) } }
    fuzzReleasing("removeDuplicates(by:)") { upstream, token in
      upstream.removeDuplicates { token.touch($0 == $1) }
    }
    fuzzReleasing("drop(while:)") { upstream, token in upstream.drop { token.touch($0 < 2) } }
    fuzzReleasing("prefix(while:)") { upstream, token in upstream.prefix { token.touch($0 < 3) } }
    fuzzReleasing("first(where:)") { upstream, token in upstream.first { token.touch($0 > 1) } }
    fuzzReleasing("handleEvents") { upstream, token in
      upstream.handleEvents(receiveOutput: { _ = token.touch($0) })
    }
    fuzzReleasing("catch") { upstream, token in upstream.catch { _ in Just(token.touch(-1)) } }
    fuzzReleasing("flatMap") { upstream, token in
      upstream.flatMap(maxPublishers: .max(2)) { Just(token.touch($0)) }
    }
    fuzzReleasing("map → switchToLatest") { upstream, token in
      upstream.map { [token.touch($0)].publisher.setFailureType(to: Failure.self) }
        .switchToLatest()
    }
    fuzzReleasing("zip with a transform") { upstream, token in
      upstream.zip([10, 11].publisher.setFailureType(to: Failure.self)) { token.touch($0 + $1) }
    }
    fuzzReleasing("combineLatest with a transform") { upstream, token in
      upstream.combineLatest(Just(9).setFailureType(to: Failure.self)) { token.touch($0 + $1) }
    }
  }

  @Test("an operator that keeps its closure after the subscription ended is caught")
  func operatorKeepingItsClosureIsCaught() {
    let report = RuleFuzzer(seeds: 0..<20, maxThreads: 1).check { upstream, token in
      KeepsItsClosure(upstream: upstream) { token.touch($0) }
    }
    #expect(
      report.failure?.problems.contains { $0.contains("closures (holding the FuzzToken)") }
        == true, "\(report)")
    KeepsItsClosure.kept.withLock { $0.removeAll() }
  }

  @Test("combining, flattening and multicasting operators keep every rule")
  func combiningOperators() {
    fuzz("flatMap(.max(2)) { Just }") { $0.flatMap(maxPublishers: .max(2)) { Just($0) } }
    fuzz("flatMap { sequence }") {
      $0.flatMap { [$0, $0].publisher.setFailureType(to: Failure.self) }
    }
    fuzz("switchToLatest") {
      $0.map { [$0, $0 + 1].publisher.setFailureType(to: Failure.self) }.switchToLatest()
    }
    fuzz("merge") { $0.merge(with: Just(9).setFailureType(to: Failure.self)) }
    fuzz("zip") { $0.zip([10, 11, 12].publisher.setFailureType(to: Failure.self)) }
    fuzz("combineLatest") { $0.combineLatest(Just(9).setFailureType(to: Failure.self)) }
    fuzz("share") { $0.share() }
    fuzz("autoconnect") { $0.replaceError(with: -1).makeConnectable().autoconnect() }
  }

  @Test("scheduling and time operators on ImmediateScheduler keep every rule")
  func schedulingOperators() {
    let immediate = ImmediateScheduler.shared
    fuzz("receive(on:)") { $0.receive(on: immediate) }
    fuzz("subscribe(on:)") { $0.subscribe(on: immediate) }
    fuzz("debounce") { $0.debounce(for: .zero, scheduler: immediate) }
    fuzz("throttle") { $0.throttle(for: .zero, scheduler: immediate, latest: true) }
    fuzz("delay") { $0.delay(for: .zero, scheduler: immediate) }
  }

  @Test("publishers and subjects keep every rule")
  func publishersAndSubjects() {
    fuzz("Just") { _ in Just(1) }
    fuzz("Sequence.publisher") { _ in [1, 2, 3, 4].publisher }
    fuzz("Empty") { _ in Empty<Int, Never>() }
    fuzz("Deferred") { _ in Deferred { [1, 2].publisher } }
    // A subject keeps its own upstream when a subscriber cancels (as Combine's): only the
    // subscriber's side is checked.
    fuzz("PassthroughSubject fed by the upstream", checksUpstream: false) { upstream in
      let subject = PassthroughSubject<Int, Failure>()
      upstream.receive(subscriber: AnySubscriber(subject))
      return subject
    }
    fuzz("CurrentValueSubject fed by the upstream", checksUpstream: false) { upstream in
      let subject = CurrentValueSubject<Int, Failure>(0)
      upstream.receive(subscriber: AnySubscriber(subject))
      return subject
    }
  }

  @Test("bridges driven by tasks keep every rule, end their upstream and let go of the subscriber")
  func bridges() async {
    // A task notices a cancel asynchronously: the end checks wait for it, up to the grace
    // period, which is a hang net as long as the other liveness tests' (600 s) because other
    // tests may keep the cooperative pool's threads busy for minutes under the thread
    // sanitizer (a bridge that passes waits only as long as its task takes). Fewer seeds than
    // the synchronous operators: each script waits for tasks.
    func fuzzBridge<P: Publisher & SendableMetatype>(
      _ name: String, sourceLocation: SourceLocation = #_sourceLocation,
      _ make: @escaping @Sendable (FuzzUpstream) -> P
    ) async {
      var fuzzer = RuleFuzzer(seeds: 0..<max(1, fuzzSeeds / 4), maxThreads: 4)
      fuzzer.gracePeriod = .seconds(600)
      let report = await onThreadOfItsOwn { [fuzzer] in fuzzer.check(make) }
      #expect(report.failure == nil, "\(name): \(report)", sourceLocation: sourceLocation)
    }
    await fuzzBridge("AsyncFuture") { _ in AsyncFuture<Int, Never> { 42 } }
    await fuzzBridge("AsyncProducer") { _ in
      AsyncProducer<Int, Never> { sender in
        for value in 0..<5 {
          guard await sender.send(value) else { return }
        }
      }
    }
    await fuzzBridge("AsyncStream.publisher") { _ in
      AsyncStream<Int> { continuation in
        for value in 0..<4 { continuation.yield(value) }
        continuation.finish()
      }.publisher
    }
    // Both directions at once: the upstream read by `values`, read back by a task.
    await fuzzBridge("values.publisher") { $0.values.publisher }
    await fuzzBridge("values(prefetch: 2).publisher") {
      $0.values(bufferingPolicy: .prefetch(2)).publisher
    }
    await fuzzBridge("values(bufferingNewest: 2).publisher") {
      $0.values(bufferingPolicy: .bufferingNewest(2)).publisher
    }
    await fuzzBridge("stream().publisher") { $0.replaceError(with: -1).stream().publisher }
    await fuzzBridge("asyncMap(maxConcurrent: 2)") { $0.asyncMap(maxConcurrent: 2) { $0 * 2 } }
    await fuzzBridge("asyncFilter") { $0.asyncFilter { $0.isMultiple(of: 2) } }
    // asyncMap's closure is released once the subscription ends and its tasks are done.
    var releasing = RuleFuzzer(seeds: 0..<max(1, fuzzSeeds / 4), maxThreads: 4)
    releasing.gracePeriod = .seconds(600)
    let report = await onThreadOfItsOwn { [releasing] in
      releasing.check { upstream, token in
        upstream.asyncMap(maxConcurrent: 2) { token.touch($0) }
      }
    }
    #expect(report.failure == nil, "asyncMap releasing its closure: \(report)")
  }

  @Test("the grace period waits for a task to let go, and no longer")
  func gracePeriod() async {
    var patient = RuleFuzzer(seeds: 0..<3, maxThreads: 1)
    // Generous: it returns as soon as the subscriber is let go, which on a machine whose cores
    // are busy can take the dispatch queue seconds.
    patient.gracePeriod = .seconds(120)
    let waited = await onThreadOfItsOwn { [patient] in
      patient.check { _ in LetsGoLater(after: .milliseconds(100)) }
    }
    #expect(waited.failure == nil, "\(waited)")
    var hasty = RuleFuzzer(seeds: 0..<3, maxThreads: 1)
    hasty.gracePeriod = .milliseconds(10)
    let report = await onThreadOfItsOwn { [hasty] in
      hasty.check { _ in LetsGoLater(after: .milliseconds(300)) }
    }
    #expect(report.failure?.problems.contains { $0.contains("still referenced") } == true)
  }

  @Test("an app's test fuzzes its own pipeline from the main actor, closures capturing a class")
  @MainActor func fromTheMainActor() {
    let model = SearchModel()
    let report = RuleFuzzer(seeds: 0..<50).check { upstream in
      upstream.map { model.label(for: $0) }.filter { !$0.isEmpty }
    }
    #expect(report.failure == nil, "\(report)")
    #expect(report.scripts == 50)
  }

  @Test("closures released, checked with the token from the main actor (closures capture a class)")
  @MainActor func closureReleaseFromTheMainActor() {
    let model = SearchModel()
    let report = RuleFuzzer(seeds: 0..<50).check { upstream, token in
      upstream.map { model.label(for: token.touch($0)) }.filter { !$0.isEmpty }
    }
    #expect(report.failure == nil, "\(report)")
    #expect(report.scripts == 50)
  }

  @Test("closures released, checked with the token from inside an actor")
  func closureReleaseFromAnActor() async {
    let report = await PipelineOwner().fuzzOwnPipelineReleasing()
    #expect(report.failure == nil, "\(report)")
    #expect(report.scripts == 50)
  }

  @Test("an actor fuzzes a pipeline built from its own state")
  func fromAnActor() async {
    let report = await PipelineOwner().fuzzOwnPipeline()
    #expect(report.failure == nil, "\(report)")
    #expect(report.scripts == 50)
  }

  @Test("an operator that ignores cancel() is caught: its upstream goes on, its subscriber is kept")
  func operatorIgnoringCancelIsCaught() {
    let report = RuleFuzzer(seeds: 0..<50, maxThreads: 1).check { upstream in
      IgnoresCancel(upstream: upstream)
    }
    let problems = report.failure?.problems ?? []
    #expect(problems.contains { $0.contains("neither cancelled nor completed") }, "\(report)")
    #expect(problems.contains { $0.contains("still referenced") }, "\(report)")
  }
}

/// A broken operator: demand passes through, but `cancel()` neither cancels the upstream nor
/// lets go of the downstream.
struct IgnoresCancel: Publisher {
  typealias Output = Int
  typealias Failure = FuzzUpstream.Failure
  let upstream: FuzzUpstream

  func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Failure {
    upstream.subscribe(Inner(downstream: subscriber))
  }

  final class Inner<Downstream: Subscriber>: Subscriber, Subscription, @unchecked Sendable
  where Downstream.Input == Int, Downstream.Failure == Failure {
    // Safety: a test double; the fuzzer drives it from one thread (maxThreads: 1).
    var downstream: Downstream?
    var upstream: (any Subscription)?
    var cancelled = false

    init(downstream: Downstream) { self.downstream = downstream }

    func receive(subscription: any Subscription) {
      upstream = subscription
      downstream?.receive(subscription: self)
    }

    func receive(_ input: Int) -> Subscribers.Demand {
      cancelled ? .none : downstream?.receive(input) ?? .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
      if !cancelled { downstream?.receive(completion: completion) }
      downstream = nil
    }

    func request(_ demand: Subscribers.Demand) { upstream?.request(demand) }

    func cancel() { cancelled = true }  // the bug: the upstream goes on, the downstream is kept
  }
}

/// A publisher that sends nothing and lets go of its subscriber only `after` a while once
/// cancelled (as a task-driven bridge does when its task notices the cancel).
struct LetsGoLater: Publisher {
  typealias Output = Int
  typealias Failure = Never
  let after: Duration

  func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
    subscriber.receive(subscription: Inner(downstream: subscriber, after: after))
  }

  final class Inner: Subscription, @unchecked Sendable {
    // Safety: the subscriber is in a lock (kept as `Any`: the task needs no generic type).
    let downstream: Mutex<UncheckedBox<Any>?>
    let after: Duration

    init(downstream: some Subscriber, after: Duration) {
      self.downstream = Mutex(UncheckedBox(downstream))
      self.after = after
    }

    func request(_ demand: Subscribers.Demand) {}

    func cancel() {
      // On a dispatch queue, not in a task: other tests may keep the cooperative pool busy.
      let milliseconds = Int(
        after.components.seconds * 1_000 + after.components.attoseconds / 1_000_000_000_000_000)
      DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
        let released = self.downstream.withLock { downstream in
          defer { downstream = nil }
          return downstream
        }
        withExtendedLifetime(released) {}
      }
    }
  }
}

/// Carries a value out of a `Mutex` body (which requires a `sending` result).
struct UncheckedBox<Value>: @unchecked Sendable {
  // Safety: a test helper; the value is only released by the caller.
  let value: Value
  init(_ value: Value) { self.value = value }
}

/// A broken operator: a `map` that also keeps its closure for good (as if cached globally).
struct KeepsItsClosure: Publisher {
  typealias Output = Int
  typealias Failure = FuzzUpstream.Failure
  /// Where the closures leak to.
  static let kept = Mutex<[UncheckedBox<Any>]>([])
  let upstream: FuzzUpstream
  let transform: (Int) -> Int

  func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Failure {
    Self.kept.withLock { $0.append(UncheckedBox(transform)) }
    upstream.map(transform).receive(subscriber: subscriber)
  }
}

/// An app's view model: a class the pipeline's closures capture (not `Sendable`).
final class SearchModel {
  var prefix = "result "
  func label(for value: Int) -> String { prefix + String(value) }
}

/// An actor whose pipeline, built from its own state, is fuzzed from inside it.
actor PipelineOwner {
  let model = SearchModel()

  func fuzzOwnPipeline() -> RuleFuzzReport {
    RuleFuzzer(seeds: 0..<50).check { upstream in
      upstream.map { [model] in model.label(for: $0) }.removeDuplicates()
    }
  }

  func fuzzOwnPipelineReleasing() -> RuleFuzzReport {
    RuleFuzzer(seeds: 0..<50).check { upstream, token in
      upstream.map { [model] in model.label(for: token.touch($0)) }.removeDuplicates()
    }
  }
}
