import Sluice
import SluiceTestSupport
import SluiceTesting
import Testing

@testable import SluiceExamples

/// The rule fuzzer driven by bytes instead of a seed: what the coverage-guided pipeline target
/// (Fuzz/Sources/PipelineFuzzer) decodes its input with, and what a regression test keeps.
@Suite("RuleFuzzer with scripts decoded from bytes", .onThreadsOfTheirOwn)
struct FuzzScriptBytesTests {
  @Test("every input is a script: lanes, steps and demands as the layout says")
  func bytesSpellAScript() {
    // 2 lanes; lane 0 requests max(3), lane 1 sends 0, lane 0 sends 1, lane 1 cancels,
    // lane 0 makes receive return .none, then requests unlimited from receive.
    let script = FuzzScript(bytes: [1, 0x00, 2, 0x14, 0x05, 0x1C, 0x0A, 0, 0x0B, 7])
    #expect(script.lanes.count == 2)
    #expect(
      script.lanes[0] == [
        .request(.max(3)), .send(1), .returnDemand(.none), .requestFromReceive(.unlimited),
      ])
    #expect(script.lanes[1] == [.send(0), .cancel])
    #expect(FuzzScript(bytes: []).stepCount == 0)
    // A missing operand is the smallest choice; a step past `maxSteps` is ignored.
    #expect(FuzzScript(bytes: [0, 0x03]).lanes == [[.request(.max(1))]])
    #expect(FuzzScript(bytes: [0] + Array(repeating: 0x04, count: 100), maxSteps: 5).stepCount == 5)
    // Lanes beyond `maxThreads` fold into those there are; empty lanes are dropped.
    #expect(FuzzScript(bytes: [7, 0x74, 0x3E], maxThreads: 2).lanes.count == 1)
  }

  // The pipeline fuzz target's input 02 1d 23 52 ... (flatMap → share → subscribe(on:)), shrunk
  // to an upstream that finishes: the flatMap closure outlived the pipeline, kept by
  // subscribe(on:), which held share()'s subscription after the completion.
  @Test("flatMap → share → subscribe(on:) releases its closures when the upstream finishes")
  func shareThenSubscribeOnReleasesEverything() {
    let fuzzer = RuleFuzzer(seeds: 0..<1, attempts: 1)
    let scripts: [[UInt8]] = [
      [0, 0x0E], [0, 0x00, 0, 0x04, 0x0E], [1, 0x00, 7, 0x14, 0x0F], [0, 0x0C],
    ]
    for script in scripts {
      let problems = fuzzer.problems(of: FuzzScript(bytes: script)) {
        (upstream: FuzzUpstream, token: FuzzToken) -> AnyPublisher<Int, FuzzUpstream.Failure> in
        upstream.flatMap(maxPublishers: .max(2)) { (value: Int) in
          Just(token.touch(value)).setFailureType(to: FuzzUpstream.Failure.self)
        }
        .share()
        .subscribe(on: ImmediateScheduler.shared)
        .eraseToAnyPublisher()
      }
      #expect(problems == [], "\(FuzzScript(bytes: script))")
    }
  }

  @Test("a given script is checked, and a failing one shrunk")
  func aGivenScriptIsCheckedAndShrunk() {
    let fuzzer = RuleFuzzer(seeds: 0..<1, attempts: 1)
    // Requests one, then the upstream sends three: a correct operator passes one on.
    let script = FuzzScript(bytes: [0, 0x00, 0, 0x04, 0x04, 0x04, 0x0E])
    #expect(fuzzer.problems(of: script) { upstream, _ in upstream.map { $0 + 1 } } == [])
    #expect(fuzzer.minimalFailure(of: script) { upstream, _ in upstream.prefix(2) } == nil)
    let problems = fuzzer.problems(of: script) { upstream, _ in
      ForwardsEverything(upstream: upstream)
    }
    #expect(problems.contains { $0.contains("more values than demanded") }, "\(problems)")
    let minimal = fuzzer.minimalFailure(of: script) { upstream, _ in
      ForwardsEverything(upstream: upstream)
    }
    #expect(minimal != nil)
    #expect((minimal?.script.stepCount ?? .max) < script.stepCount)
    #expect(minimal?.problems.isEmpty == false)
  }
}
