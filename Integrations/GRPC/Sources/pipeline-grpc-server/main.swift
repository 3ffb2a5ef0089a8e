// The example service's server process (the tests start it): serves `Pipelines` (Count, Sum,
// Square, each a Sluice pipeline) on 127.0.0.1 and reports on standard output, one line each:
//
//   listening <port>                 once it listens
//   rpc <method> <peer>              as each RPC starts
//   produced <n>                     values the Count sources emitted (every --report-ms)
//   read <n>                         request messages Sum and Square read (every --report-ms)
//   cancelled <monotonic ns>         a source saw cancel(), at that time
//
//   pipeline-grpc-server [--port P] [--window BYTES] [--max-request-bytes BYTES]
//                        [--max-concurrent-streams N] [--keepalive-ms MS] [--prefetch N]
//                        [--write-stall-ms MS] [--report-ms MS] [--plain]
//                        [--exit-when-stdin-closes]
//
// --write-stall-ms ends a response stream whose write has waited that long for a client that
// takes nothing (a stopped or vanished client; off by default): the source sees cancel().
//
// --exit-when-stdin-closes ends the process when its standard input closes (the tests start it
// so: it dies with the test process, even one that crashed).
//
// --plain serves the same RPCs written as plain grpc-swift loops (the anchor the tests compare
// the adapters with): `cancelled` then reports when the RPC was cancelled.
import GRPCCore
import GRPCPipelines

if CommandLine.arguments.contains("--exit-when-stdin-closes") { exitWhenStandardInputCloses() }

var settings = TransportSettings(
  window: commandLineOption("--window"), maxRequestBytes: commandLineOption("--max-request-bytes"),
  maxConcurrentStreams: commandLineOption("--max-concurrent-streams"))
if let keepalive = commandLineOption("--keepalive-ms") {
  settings.keepaliveTime = .milliseconds(keepalive)
  settings.keepaliveTimeout = .milliseconds(keepalive)
}
let reportInterval = Duration.milliseconds(commandLineOption("--report-ms") ?? 50)

let events = ServiceEvents(
  onCancel: { report("cancelled \(monotonicNanoseconds())") },
  onRPC: { method, peer in report("rpc \(method) \(peer)") })
let service: any RegistrableRPCService =
  CommandLine.arguments.contains("--plain")
  ? PlainPipelinesService(events: events)
  : PipelinesService(
    events: events, prefetch: commandLineOption("--prefetch") ?? 16,
    writeStallTimeout: commandLineOption("--write-stall-ms").map { .milliseconds($0) })
let server = GRPCServer(
  transport: settings.serverTransport(port: commandLineOption("--port") ?? 0), services: [service])

try await withThrowingDiscardingTaskGroup { group in
  group.addTask { try await server.serve() }
  guard let address = try await server.listeningAddress?.ipv4 else {
    report("error: the server is not listening")
    server.beginGracefulShutdown()
    return
  }
  report("listening \(address.port)")
  group.addTask {
    var last = (produced: -1, read: -1)
    while true {
      let produced = events.produced.load(ordering: .relaxed)
      let read = events.requestsRead.load(ordering: .relaxed)
      if produced != last.produced { report("produced \(produced)") }
      if read != last.read { report("read \(read)") }
      last = (produced, read)
      try await Task.sleep(for: reportInterval)
    }
  }
}
