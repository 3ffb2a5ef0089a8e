import SluiceTestSupport
import SluiceTesting
import Testing

@testable import SluiceExamples

@Suite("RuleFuzzer catches the tour's broken operator", .onThreadsOfTheirOwn)
struct RuleFuzzerCatchesTests {
  @Test("an operator ignoring demand is caught, and its script shrunk to a minimal one")
  func brokenOperatorIsCaught() {
    let report = RuleFuzzer(seeds: 0..<200, maxThreads: 1).check { upstream in
      ForwardsEverything(upstream: upstream)
    }
    guard let failure = report.failure else {
      Issue.record("the broken operator passed \(report.scripts) scripts")
      return
    }
    #expect(failure.problems.first?.contains("more values than demanded") == true, "\(report)")
    // Shrunk to the essence: the upstream sends a value nobody asked for.
    #expect(failure.minimal.stepCount <= 3, "\(report)")
    #expect(failure.minimal.stepCount <= failure.script.stepCount)
    #expect("\(report)".contains("Minimal reproduction"))
  }
}
