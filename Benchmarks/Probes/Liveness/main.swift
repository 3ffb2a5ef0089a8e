// The liveness rows: a second thread's call latency while another thread sends without pause
// (see Probe.swift).
//
//   Liveness             # every row, three runs each
//   Liveness --runs 1    # one run each
//   Liveness --filter 'merge'   # rows whose "scenario | implementation" contains the text
import Foundation

let arguments = CommandLine.arguments
let runs = arguments.firstIndex(of: "--runs").flatMap { Int(arguments[$0 + 1]) } ?? 3
print(
  "| pipeline | implementation | A's worst call (µs), per run | A's p99 (µs), per run | resident MiB before → after, last run |"
)
print("|---|---|---|---|---|")
let only = arguments.firstIndex(of: "--filter").map { arguments[$0 + 1] }
for (scenario, implementation, body) in livenessRows()
where only.map({ "\(scenario) | \(implementation)".contains($0) }) ?? true {
  var worst: [String] = []
  var p99: [String] = []
  var memory = ""
  for _ in 0..<runs {
    if let result = run(body) {
      worst.append(String(format: "%.0f", result.worst))
      p99.append(String(format: "%.0f", result.p99))
      memory = String(format: "%.0f → %.0f", result.memory.before, result.memory.after)
    } else {
      worst.append("stuck > 30 s")
      p99.append("—")
    }
  }
  print(
    "| \(scenario) | \(implementation) | \(worst.joined(separator: ", ")) | \(p99.joined(separator: ", ")) | \(memory) |"
  )
}
