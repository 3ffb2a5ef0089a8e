// The example service's client: calls one RPC of `Pipelines` on 127.0.0.1:<port> through the
// Sluice adapters and prints what comes back.
//
//   pipeline-grpc-client --port P count N [--every-ms MS]   N ticks, one asked for every MS
//   pipeline-grpc-client --port P count N --cancel-after K  cancels after K ticks, waits 2 s
//   pipeline-grpc-client --port P sum N                     the sum of 0..<N, streamed up
//   pipeline-grpc-client --port P square N                  the squares of 0..<N
//
// --window BYTES sets the client's HTTP/2 window (grpc-swift's default: 8 MiB).
// --connections N makes the call N times at once, each on a connection of its own (a flood of
// clients in one process). For count, --payload BYTES and --interval-us US set the request's
// payload_bytes and interval_micros (a server source that pauses between ticks).
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import GRPCPipelines
import Sluice
import SluiceGRPC
import SwiftProtobuf

let arguments = CommandLine.arguments
guard let port = commandLineOption("--port"),
  let command = ["count", "sum", "square"].first(where: arguments.contains),
  let n = commandLineOption(command).map(Int64.init)
else {
  report("usage: pipeline-grpc-client --port P (count N [--every-ms MS] | sum N | square N)")
  exit(2)
}
let pace = commandLineOption("--every-ms").map { Duration.milliseconds($0) }

let connections = commandLineOption("--connections") ?? 1
try await withThrowingDiscardingTaskGroup { group in
  for _ in 0..<connections {
    group.addTask { try await call(port: port, command: command, n: n, pace: pace) }
  }
}

/// Makes the call `command` on a connection of its own and reports what comes back.
func call(port: Int, command: String, n: Int64, pace: Duration?) async throws {
  let settings = TransportSettings(window: commandLineOption("--window"))
  try await withGRPCClient(transport: settings.clientTransport(port: port)) { client in
    do {
      switch command {
      case "count":
        let ticks = client.count(
          CountRequest.with {
            $0.count = n
            $0.payloadBytes = UInt32(commandLineOption("--payload") ?? 0)
            $0.intervalMicros = Int64(commandLineOption("--interval-us") ?? 0)
          })
        if let cancelAfter = commandLineOption("--cancel-after") {
          // A sink cancelled from its own receiveValue: cancel() reaches the server's source.
          let (cancelled, done) = AsyncStream<Void>.makeStream()
          let subscription = SubscriptionBox()
          subscription.set(
            ticks.sink(receiveCompletion: { report("completed: \($0)") }) { tick in
              report("\(tick.value)")
              if tick.value + 1 == cancelAfter {
                subscription.cancel()
                done.yield()
              }
            })
          for await _ in cancelled { break }
          report("cancelled after \(cancelAfter) ticks at \(monotonicNanoseconds())")
          try await Task.sleep(for: .seconds(2))
        } else if let pace {
          // Paced: one value asked for every `pace` (demand through `values`, one per `next()`).
          for try await tick in ticks.values {
            report("\(tick.value)")
            try await Task.sleep(for: pace)
          }
        } else {
          for value in try await ticks.map(\.value).allValues() { report("\(value)") }
        }
      case "sum":
        let total = try await client.sum {
          (0..<n).publisher.map { v in Tick.with { $0.value = v } }
        }
        .firstValue()
        report("sum \(total.sum) of \(total.count) ticks")
      default:
        let squares = client.square { (0..<n).publisher.map { v in Tick.with { $0.value = v } } }
        for value in try await squares.map(\.value).allValues() { report("\(value)") }
      }
    } catch let error as RPCError {
      report("failed: \(error.code): \(error.message)")
    }
  }
}

/// Holds the sink's cancellable so that its own closure can cancel it.
final class SubscriptionBox: @unchecked Sendable {
  // Safety: `cancellable` is read and written only under `lock`.
  private let lock = NSLock()
  private var cancellable: AnyCancellable?
  func set(_ cancellable: AnyCancellable) { lock.withLock { self.cancellable = cancellable } }
  func cancel() { lock.withLock { cancellable }?.cancel() }
}
