// A server process for the networked tests and the benchmark: serves the pipeline
// `0..<count → handleEvents → tryMap(fail at --fail-after)` to every client, and reports on
// standard output, one line each: `listening <port>`, `produced <n>` (the values its source has
// emitted, every --report-ms), `cancelled` (its source saw cancel()).
//
//   pipeline-server [--count N] [--fail-after K] [--report-ms MS] [--send-buffer BYTES]
//                   [--write-buffer BYTES]
import Foundation
import NetworkedPipelines
import Sluice
import Synchronization

let arguments = CommandLine.arguments
func option(_ name: String) -> Int? {
  arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? Int(arguments[$0 + 1]) : nil }
}
let count = option("--count") ?? Int.max
let failAfter = option("--fail-after")
let reportMilliseconds = option("--report-ms") ?? 50
let sendBuffer = option("--send-buffer")
let writeBuffer = option("--write-buffer")

func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let produced = Atomic<Int>(0)
let server = PipelineServer<Int>(
  sendBufferSize: sendBuffer ?? 64 * 1024, writeBufferHighWatermark: writeBuffer ?? 64 * 1024
) {
  (0..<count).publisher
    .handleEvents(
      receiveOutput: { _ in produced.add(1, ordering: .relaxed) },
      receiveCancel: { say("cancelled") }
    )
    .tryMap { value in
      if let failAfter, value == failAfter { throw PipelineFailure("failed at \(value)") }
      return value
    }
    .eraseToAnyPublisher()
}

let reporter = Task {
  var last = -1
  while !Task.isCancelled {
    let now = produced.load(ordering: .relaxed)
    if now != last { say("produced \(now)") }
    last = now
    try? await Task.sleep(for: .milliseconds(reportMilliseconds))
  }
}
try await server.run { port in say("listening \(port)") }
reporter.cancel()
