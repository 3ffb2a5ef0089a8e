// Runs seeded scenarios on Sluice and on OpenCombine and compares their logs.
//
//   swift run --package-path Conformance sluice-conformance [count] [first seed]
//
// `CONFORMANCE_SCENARIOS` overrides the count (default 10,000). Prints the first
// disagreements in full, then "N scenarios, M agree". Exits with failure when fewer than
// 99.9 % agree once OpenCombine's own known departures from Combine are set aside
// (`KnownDivergence`).
import Foundation
import OpenCombineSide
import ScenarioKit
import SluiceSide

let arguments = CommandLine.arguments.dropFirst()
let environment = ProcessInfo.processInfo.environment["CONFORMANCE_SCENARIOS"].flatMap(Int.init)
let count = environment ?? arguments.first.flatMap(Int.init) ?? 10_000
let firstSeed = arguments.dropFirst().first.flatMap(UInt64.init) ?? 0

var agree = 0
var excused: [String: Int] = [:]
var disagreements: [(Scenario, [String], [String])] = []
let tracing = ProcessInfo.processInfo.environment["CONFORMANCE_TRACE"] != nil
for seed in firstSeed..<(firstSeed + UInt64(count)) {
  let scenario = Scenario(seed: seed)
  // A crash inside either implementation then shows which scenario caused it.
  if tracing { FileHandle.standardError.write(Data("RUN \(scenario)\n".utf8)) }
  let sluice = SluiceSide.run(scenario)
  let unfiltered = OpenCombineSide.run(scenario)
  let reference = KnownDivergence.withoutZeroDemandPrints(unfiltered)
  if sluice == reference, reference.count == unfiltered.count {
    agree += 1
  } else if sluice == reference {
    excused[KnownDivergence.printZeroDemand.name, default: 0] += 1
  } else if let known = KnownDivergence.explaining(scenario, sluice: sluice, openCombine: reference)
  {
    excused[known.name, default: 0] += 1
  } else {
    disagreements.append((scenario, sluice, reference))
  }
}

if ProcessInfo.processInfo.environment["CONFORMANCE_SUMMARY"] != nil {
  for (scenario, sluice, reference) in disagreements {
    let index =
      zip(sluice, reference).enumerated().first { $0.element.0 != $0.element.1 }?.offset
      ?? min(sluice.count, reference.count)
    let left = index < sluice.count ? sluice[index] : "—"
    let right = index < reference.count ? reference[index] : "—"
    let ops = scenario.operators.map(\.description).joined(separator: " → ")
    print("\(scenario.seed)\t\(ops)\t\(left)\t\(right)")
  }
}
for (scenario, sluice, reference) in disagreements.prefix(5) {
  print("DISAGREE \(scenario)")
  let width = max(sluice.count, reference.count)
  for line in 0..<width {
    let left = line < sluice.count ? sluice[line] : ""
    let right = line < reference.count ? reference[line] : ""
    let mark = left == right ? " " : "≠"
    print("  \(mark) \(left.padding(toLength: 44, withPad: " ", startingAt: 0)) | \(right)")
  }
}
for known in KnownDivergence.all {
  let times = excused[known.name, default: 0]
  let whose = known.kind == .openCombine ? "OpenCombine departs from Combine" : "Sluice, on purpose"
  print("differ \(times)× where \(whose): \(known.name)")
  if times > 0 {
    for line in known.evidence.split(separator: "\n") { print("    \(line)") }
  }
}
let settled = agree + excused.values.reduce(0, +)
print("\(count) scenarios, \(agree) agree")
print(
  "\(settled) agree or differ only where a known divergence explains it; "
    + "\(disagreements.count) disagree")
if count > 0, Double(settled) / Double(count) < 0.999 { exit(1) }
