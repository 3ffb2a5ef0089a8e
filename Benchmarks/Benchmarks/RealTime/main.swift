// The real-time benchmark rows, measured without package-benchmark.
//
// package-benchmark runs an async row by blocking a thread of the cooperative pool until the
// row's task ends; on a 2-core Linux host libdispatch then sometimes starts no thread for that
// task, or for a queue the row waits on, and the row never ends (gdb: the runner in
// `runAsync`'s semaphore, no other worker thread). These rows wait for queues, timers and an
// actor's worker, so they run here: from `main`, which suspends (it never blocks a thread) while
// each iteration runs on the cooperative pool.
//
//   RealTime --list                        # "<scenario> | <implementation>", one per line
//   RealTime --filter REGEX --json FILE    # run the matching rows; results in package-benchmark's
//                                          # JMH shape, which compare.sh reads
import Foundation
import MallocCount

/// Values per iteration, as in SluiceBenchmarks.
let elements = 1_000

/// A registered row: one implementation of a scenario.
struct Row: Sendable {
  let name: String
  /// Values one iteration moves; results are reported per `elements` values like every row's.
  let values: Int
  let body: @Sendable () async -> Void
}

nonisolated(unsafe) var rows: [Row] = []

/// Registers `body` under "<scenario> | <implementation>" (registration happens on the main
/// thread, before anything runs); one iteration of `body` moves `values` values.
func register(
  _ scenario: String, _ implementation: String, values: Int = elements,
  _ body: @escaping @Sendable () async -> Void
) {
  rows.append(Row(name: "\(scenario) | \(implementation)", values: values, body: body))
}

/// A counter one iteration writes from one thread at a time.
final class Tally: @unchecked Sendable {
  // Safety: each iteration uses its own tally, from one thread at a time.
  var count = 0
}

/// Stops a row that lost or duplicated values: a lossless scenario that is not lossless is a
/// bug, not a result.
func check(_ delivered: Int, _ expected: Int = elements, _ scenario: String) {
  if delivered != expected {
    fatalError("\(scenario): delivered \(delivered) values, expected \(expected)")
  }
}

/// Runs `row` for about `seconds` (at least 20 and at most 2,000 iterations, after 10 to warm
/// up): the median wall time of an iteration and the mean number of allocations per iteration.
func measure(_ row: Row, seconds: Double) async -> (medianNanoseconds: Double, allocations: Double)
{
  for _ in 0..<10 { await row.body() }
  var times: [Double] = []
  let clock = ContinuousClock()
  let allocationsBefore = malloc_count_total()
  let start = clock.now
  while times.count < 2_000 && (times.count < 20 || (clock.now - start) < .seconds(seconds)) {
    let iteration = clock.now
    await row.body()
    let elapsed = (clock.now - iteration).components
    times.append(Double(elapsed.seconds) * 1e9 + Double(elapsed.attoseconds) / 1e9)
  }
  let allocations = Double(malloc_count_total() - allocationsBefore) / Double(times.count)
  times.sort()
  return (times[times.count / 2], allocations)
}

registerRealTimeRows()
let arguments = CommandLine.arguments.dropFirst()
if arguments.contains("--list") {
  for row in rows { print(row.name) }
  exit(0)
}
func option(_ name: String) -> String? {
  guard let index = arguments.firstIndex(of: name),
    arguments.index(after: index) < arguments.endIndex
  else { return nil }
  return arguments[arguments.index(after: index)]
}
let filter = try Regex(option("--filter") ?? ".*")
let seconds = Double(option("--seconds") ?? "1") ?? 1
var results: [[String: Any]] = []
for row in rows where row.name.contains(filter) {
  let (perIteration, allocationsPerIteration) = await measure(row, seconds: seconds)
  // compare.sh divides by `elements`: a row moving more values reports per `elements` of them.
  let scale = Double(elements) / Double(row.values)
  let (median, allocations) = (perIteration * scale, allocationsPerIteration * scale)
  FileHandle.standardError.write(
    "\(row.name): \(Int(median)) ns, \(allocations) allocations per iteration\n".data(using: .utf8)!
  )
  // The JMH entry shape package-benchmark writes (what compare.sh reads of it).
  results.append([
    "benchmark": "RealTime.\(row.name.replacingOccurrences(of: " ", with: "_"))",
    "secondaryMetrics": [
      "Time (wall clock)": ["scoreUnit": "ns", "scorePercentiles": ["50.0": median]],
      "Malloc (total)": ["scoreUnit": "#", "scorePercentiles": ["50.0": allocations]],
    ],
  ])
}
if let path = option("--json") {
  let data = try JSONSerialization.data(withJSONObject: results, options: [.prettyPrinted])
  try data.write(to: URL(fileURLWithPath: path))
}
