import Foundation
import FuzzDriver
import SluiceCore
import SluiceTesting

// Operator pipelines driven by scripts decoded from the fuzzer's input instead of a seed, so
// that coverage steers the scripts to the branches seeded runs miss. The input's first bytes
// choose a pipeline of one to three operators (from every built-in operator that runs without
// a real clock; time operators run on a virtual-time scheduler advanced between the steps and
// the end); the rest is a `FuzzScript` (`FuzzScript(bytes:)`: requests, demand returned from
// `receive`, re-entrant requests, cancels, the upstream's values, completion and failure, on
// one to four threads). SluiceTesting's `RuleFuzzer` runs it and checks every rule: never a
// value beyond demand, serial signals, one completion, nothing after `cancel()` returned, the
// upstream's subscription ended, the subscriber and the pipeline's closures released after the
// end. A broken rule crashes the target with the script, shrunk.

typealias Failure = FuzzUpstream.Failure
typealias Clock = TestSchedulerOf<DispatchQueue>
typealias Stage =
  @Sendable (AnyPublisher<Int, Failure>, FuzzToken, Clock) -> AnyPublisher<
    Int, Failure
  >

/// Every stage a pipeline is built from, each keeping a closure that captures the run's token
/// where the operator takes one (the fuzzer checks it is released with the subscription). Time
/// operators run on the input's own virtual-time scheduler (`s`), advanced by the fuzzer's
/// `settle` (after the steps, and after the subscriber cancels), never by a real clock; a new
/// one for each input, so that no input's actions are left for the next.
let stages: [(name: String, make: Stage)] = [
  ("map", { up, t, _ in up.map { t.touch($0) * 2 }.any }),
  ("tryMap", { up, t, _ in up.tryMap { t.touch($0) + 1 }.mapError { _ in Failure() }.any }),
  ("filter", { up, t, _ in up.filter { t.touch($0).isMultiple(of: 2) }.any }),
  ("compactMap", { up, t, _ in up.compactMap { t.touch($0) == 1 ? nil : $0 }.any }),
  ("scan", { up, t, _ in up.scan(0) { t.touch($0 + $1) }.any }),
  ("tryScan", { up, t, _ in up.tryScan(0) { t.touch($0 + $1) }.mapError { _ in Failure() }.any }),
  (
    "removeDuplicates", { up, t, _ in up.map { $0 / 2 }.removeDuplicates { t.touch($0 == $1) }.any }
  ),
  ("dropFirst", { up, _, _ in up.dropFirst(1).any }),
  ("drop(while:)", { up, t, _ in up.drop { t.touch($0 < 2) }.any }),
  ("prefix", { up, _, _ in up.prefix(2).any }),
  ("prefix(while:)", { up, t, _ in up.prefix { t.touch($0 < 3) }.any }),
  ("output(in:)", { up, _, _ in up.output(in: 1..<3).any }),
  ("first(where:)", { up, t, _ in up.first { t.touch($0 > 0) }.any }),
  ("last", { up, _, _ in up.last().any }),
  ("collect(2)", { up, _, _ in up.collect(2).map { $0.reduce(0, +) }.any }),
  ("reduce", { up, t, _ in up.reduce(0) { t.touch($0 + $1) }.any }),
  ("count", { up, _, _ in up.count().any }),
  ("max", { up, _, _ in up.max().any }),
  ("contains", { up, _, _ in up.contains(2).map { $0 ? 1 : 0 }.any }),
  ("allSatisfy", { up, t, _ in up.allSatisfy { t.touch($0 < 3) }.map { $0 ? 1 : 0 }.any }),
  ("ignoreOutput", { up, _, _ in up.ignoreOutput().map(absurd).any }),
  ("replaceEmpty", { up, _, _ in up.replaceEmpty(with: -1).any }),
  (
    "catch",
    { up, t, _ in up.catch { _ in Just(t.touch(-1)).setFailureType(to: Failure.self) }.any }
  ),
  ("retry", { up, _, _ in up.retry(1).any }),
  ("handleEvents", { up, t, _ in up.handleEvents(receiveOutput: { _ = t.touch($0) }).any }),
  ("buffer", { up, _, _ in up.buffer(size: 2, prefetch: .byRequest, whenFull: .dropOldest).any }),
  (
    "buffer keepFull",
    { up, _, _ in up.buffer(size: 2, prefetch: .keepFull, whenFull: .dropNewest).any }
  ),
  ("append", { up, _, _ in up.append(7, 8).any }),
  ("prepend", { up, _, _ in up.prepend(7, 8).any }),
  (
    "flatMap",
    { up, t, _ in
      up.flatMap(maxPublishers: .max(2)) { Just(t.touch($0)).setFailureType(to: Failure.self) }.any
    }
  ),
  (
    "flatMap sequence",
    { up, _, _ in up.flatMap { [$0, $0].publisher.setFailureType(to: Failure.self) }.any }
  ),
  (
    "switchToLatest",
    { up, t, _ in
      up.map { [t.touch($0), $0 + 1].publisher.setFailureType(to: Failure.self) }.switchToLatest()
        .any
    }
  ),
  ("merge", { up, _, _ in up.merge(with: Just(9).setFailureType(to: Failure.self)).any }),
  (
    "zip",
    { up, t, _ in
      up.zip([10, 11, 12].publisher.setFailureType(to: Failure.self)) { t.touch($0 + $1) }.any
    }
  ),
  (
    "combineLatest",
    { up, t, _ in
      up.combineLatest(Just(9).setFailureType(to: Failure.self)) { t.touch($0 + $1) }.any
    }
  ),
  ("share", { up, _, _ in up.share().any }),
  ("receive(on:)", { up, _, _ in up.receive(on: ImmediateScheduler.shared).any }),
  ("subscribe(on:)", { up, _, _ in up.subscribe(on: ImmediateScheduler.shared).any }),
  ("debounce", { up, _, s in up.debounce(for: .seconds(1), scheduler: s).any }),
  ("throttle", { up, _, s in up.throttle(for: .seconds(1), scheduler: s, latest: true).any }),
  ("delay", { up, _, s in up.delay(for: .seconds(1), scheduler: s).any }),
  ("timeout", { up, _, s in up.timeout(.seconds(1), scheduler: s).any }),
  ("receive(on: test)", { up, _, s in up.receive(on: s).any }),
  ("collect(byTime)", { up, _, s in up.collect(.byTime(s, .seconds(1))).map { $0.count }.any }),
  ("measureInterval", { up, _, s in up.measureInterval(using: s).map { _ in 0 }.any }),
]

/// A value of any type from one that cannot exist: what `ignoreOutput()`'s `Never` maps to.
func absurd<T>(_ never: Never) -> T {}

extension Publisher where Output == Int, Failure == FuzzUpstream.Failure {
  var any: AnyPublisher<Int, Failure> { eraseToAnyPublisher() }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzPipeline(_ data: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
  var input = FuzzReader(fuzzInput(data, count))
  let chosen = (0...input.choice(3)).map { _ in stages[input.choice(stages.count)] }
  let script = FuzzScript(bytes: input.rest(), maxThreads: 4, maxSteps: 48)
  let clock = DispatchQueue.test
  let fuzzer = RuleFuzzer(seeds: 0..<1, attempts: 1) {
    clock.advance(by: .seconds(10))
  }
  let make = { (upstream: FuzzUpstream, token: FuzzToken) -> AnyPublisher<Int, Failure> in
    chosen.reduce(upstream.eraseToAnyPublisher()) { publisher, stage in
      stage.make(publisher, token, clock)
    }
  }
  let problems = fuzzer.problems(of: script, make)
  guard !problems.isEmpty else { return 0 }
  let pipeline = chosen.map(\.name).joined(separator: " → ")
  let minimal = fuzzer.minimalFailure(of: script, make)
  propertyFailed(
    """
    \(pipeline) broke the rules:
    \(problems.map { "  - \($0)" }.joined(separator: "\n"))
    script:
    \(script)
    minimal (\(minimal.map { "\($0.script.stepCount)" } ?? "?") steps):
    \(minimal.map { "\($0.script)\n\($0.problems.joined(separator: "\n"))" } ?? "(passed when shrunk)")
    """)
}
