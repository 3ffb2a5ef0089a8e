// Messages per second through the Sluice adapters against plain grpc-swift streaming loops (the
// same messages, the same HTTP/2 transport, both ends in this process over 127.0.0.1), idle and
// with both cores busy (two spinning processes started by this one), medians of alternating
// rounds; and resident memory per idle stream.
//
//   swift run -c release --package-path Integrations/GRPC pipeline-grpc-bench [messages] [rounds]
//
// Paths timed, each a server-streaming call of `messages` ticks:
// - Sluice: `StreamingServerResponse(publishing:)` on the server (batches of ≤ 16 values →
//   RPCWriter), `RPCResponsePublisher` → `reduce` on the client (demand drives next());
// - plain: a `writer.write` loop on the server, `for try await` over `response.messages`.
// And a bidirectional call (Square): Sluice publishers on both streams of both ends, against
// plain loops.
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import GRPCPipelines
import GRPCProtobuf
import Sluice
import SluiceGRPC
import SwiftProtobuf
import Synchronization

let arguments = CommandLine.arguments
let messages = arguments.count > 1 ? Int(arguments[1]) ?? 300_000 : 300_000
let rounds = arguments.count > 2 ? Int(arguments[2]) ?? 3 : 3
let idleStreams = 1_000
/// How long an idle stream waits before its one tick (opening the streams and reading memory
/// take a second or two).
let idleSeconds = 10

func seconds(_ duration: Duration) -> Double {
  Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func loadAverage() -> String {
  (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ")
    .prefix(3).joined(separator: " ") ?? "?"
}

let cpu =
  (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
  .split(separator: "\n").first { $0.hasPrefix("model name") }
  .map { String($0.split(separator: ":", maxSplits: 1)[1]).trimmingCharacters(in: .whitespaces) }
  ?? "unknown CPU"

/// Two processes spinning on the two cores while the loaded rounds run.
final class Spinners {
  private var processes: [Process] = []
  func start() throws {
    for _ in 0..<2 {
      let spinner = Process()
      spinner.executableURL = URL(fileURLWithPath: "/bin/sh")
      spinner.arguments = ["-c", "while :; do :; done"]
      try spinner.run()
      processes.append(spinner)
    }
  }
  /// SIGKILL: a child of this process starts with SIGTERM blocked (the runtime blocks it in
  /// its threads), so `terminate()` would not end it.
  func stop() {
    for spinner in processes {
      kill(spinner.processIdentifier, SIGKILL)
      spinner.waitUntilExit()
    }
    processes = []
  }
}

/// A server of `service` on an ephemeral port, and a client connected to it.
struct Endpoint: Sendable {
  let server: GRPCServer<HTTP2ServerTransport.Posix>
  let client: GRPCClient<HTTP2ClientTransport.Posix>
  let events: ServiceEvents
}

func withEndpoints<Result: Sendable>(
  _ body: (_ sluice: Endpoint, _ plain: Endpoint) async throws -> Result
) async throws -> Result {
  let sluiceEvents = ServiceEvents()
  let plainEvents = ServiceEvents()
  // Streams beyond the server's limit (swift-nio-http2's default: 100) would wait for one to
  // end: the idle streams' phase opens `idleStreams` at once.
  let settings = TransportSettings(maxConcurrentStreams: idleStreams + 100)
  let sluiceServer = GRPCServer(
    transport: settings.serverTransport(), services: [SluicePipelinesService(events: sluiceEvents)])
  let plainServer = GRPCServer(
    transport: settings.serverTransport(),
    services: [PlainPipelinesService(events: plainEvents, counting: false)])
  let serving = Task {
    try await withThrowingDiscardingTaskGroup { group in
      group.addTask { try await sluiceServer.serve() }
      group.addTask { try await plainServer.serve() }
    }
  }
  let sluicePort = try await sluiceServer.listeningAddress?.ipv4?.port ?? 0
  let plainPort = try await plainServer.listeningAddress?.ipv4?.port ?? 0
  let sluiceClient = GRPCClient(transport: try settings.clientTransport(port: sluicePort))
  let plainClient = GRPCClient(transport: try settings.clientTransport(port: plainPort))
  let connections = Task {
    try await withThrowingDiscardingTaskGroup { group in
      group.addTask { try await sluiceClient.runConnections() }
      group.addTask { try await plainClient.runConnections() }
    }
  }
  let result: Swift.Result<Result, any Error>
  do {
    result = .success(
      try await body(
        Endpoint(server: sluiceServer, client: sluiceClient, events: sluiceEvents),
        Endpoint(server: plainServer, client: plainClient, events: plainEvents)))
  } catch {
    result = .failure(error)
  }
  // Clients first, then the servers, each gracefully (see `awaitEnd(of:within:)`).
  sluiceClient.beginGracefulShutdown()
  plainClient.beginGracefulShutdown()
  await awaitEnd(of: connections, within: .seconds(5))
  sluiceServer.beginGracefulShutdown()
  plainServer.beginGracefulShutdown()
  await awaitEnd(of: serving, within: .seconds(5))
  return try result.get()
}

/// One server-streaming round through the Sluice adapters: messages per second.
func sluiceCount(_ endpoint: Endpoint) async throws -> Double {
  let start = ContinuousClock.now
  let received = try await endpoint.client.count(CountRequest.with { $0.count = Int64(messages) })
    .reduce(0) { count, _ in count + 1 }.singleValue()
  precondition(received == messages, "Sluice: \(received) of \(messages)")
  return Double(messages) / seconds(ContinuousClock.now - start)
}

/// The same call with plain grpc-swift loops.
func plainCount(_ endpoint: Endpoint) async throws -> Double {
  let start = ContinuousClock.now
  let pipelines = Sluice_Pipelines_Pipelines.Client(wrapping: endpoint.client)
  let received = try await pipelines.count(CountRequest.with { $0.count = Int64(messages) }) {
    response in
    var received = 0
    for try await _ in response.messages { received += 1 }
    return received
  }
  precondition(received == messages, "plain: \(received) of \(messages)")
  return Double(messages) / seconds(ContinuousClock.now - start)
}

/// A bidirectional round (Square) through Sluice publishers on both streams of both ends.
func sluiceSquare(_ endpoint: Endpoint) async throws -> Double {
  let count = Int64(messages / 2)
  let start = ContinuousClock.now
  let received = try await endpoint.client.square {
    (0..<count).publisher.map { value in Tick.with { $0.value = value } }
  }.reduce(0) { count, _ in count + 1 }.singleValue()
  precondition(received == count, "Sluice: \(received) of \(count)")
  return Double(count) / seconds(ContinuousClock.now - start)
}

/// The same with plain loops: a request producer writing, a response loop reading.
func plainSquare(_ endpoint: Endpoint) async throws -> Double {
  let count = Int64(messages / 2)
  let start = ContinuousClock.now
  let pipelines = Sluice_Pipelines_Pipelines.Client(wrapping: endpoint.client)
  let received = try await pipelines.square(
    request: StreamingClientRequest { writer in
      for value in 0..<count { try await writer.write(Tick.with { $0.value = value }) }
    }
  ) { response in
    var received = 0
    for try await _ in response.messages { received += 1 }
    return received
  }
  precondition(received == count, "plain: \(received) of \(count)")
  return Double(count) / seconds(ContinuousClock.now - start)
}

/// Calls of ``idleStreamMemory(_:sluice:)`` that have ended.
final class EndedCalls: Sendable {
  let count = Atomic<Int>(0)
}

/// Opens `idleStreams` server-streaming calls whose server sends one tick after
/// `idleSeconds` and ends, and returns how much resident memory they take while idle, per
/// stream, in KiB (both ends, this process); then waits until every call has ended. The calls
/// end normally rather than by `cancel()`: a burst of 1,000 cancels can leave a client unable
/// to open streams (see the README's known limits).
func idleStreamMemory(_ endpoint: Endpoint, sluice: Bool) async throws -> Double {
  let idle = CountRequest.with {
    $0.count = 1
    $0.intervalMicros = Int64(idleSeconds) * 1_000_000
  }
  let before = residentMemoryKiB() ?? 0
  let startedBefore = endpoint.events.rpcsStarted.load(ordering: .relaxed)
  let ended = EndedCalls()
  var cancellables: [AnyCancellable] = []
  let pipelines = Sluice_Pipelines_Pipelines.Client(wrapping: endpoint.client)
  for _ in 0..<idleStreams {
    if sluice {
      cancellables.append(
        endpoint.client.count(idle).sink(
          receiveCompletion: { _ in ended.count.add(1, ordering: .relaxed) }, receiveValue: { _ in }
        ))
    } else {
      Task {
        defer { ended.count.add(1, ordering: .relaxed) }
        try await pipelines.count(idle) { response in
          for try await _ in response.messages {}
        }
      }
    }
  }
  let deadline = ContinuousClock.now + .seconds(idleSeconds)
  while endpoint.events.rpcsStarted.load(ordering: .relaxed) - startedBefore < idleStreams {
    guard ContinuousClock.now < deadline else {
      fatalError("idle streams: \(idleStreams) calls did not start within \(idleSeconds) s")
    }
    try await Task.sleep(for: .milliseconds(10))
  }
  try await Task.sleep(for: .milliseconds(300))  // let the streams settle before reading memory
  let open = residentMemoryKiB() ?? 0
  while ended.count.load(ordering: .relaxed) < idleStreams {
    try await Task.sleep(for: .milliseconds(50))
  }
  withExtendedLifetime(cancellables) {}
  return Double(open - before) / Double(idleStreams)
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

report("pipeline-grpc-bench: \(messages) messages a round, \(rounds) rounds a setting; \(cpu)")
report("load average at start: \(loadAverage())")
try await withEndpoints { sluice, plain in
  // Warm both paths up (connections, allocations).
  _ = try await sluiceCount(sluice)
  _ = try await plainCount(plain)
  let spinners = Spinners()
  for loaded in [false, true] {
    if loaded { try spinners.start() }
    defer { if loaded { spinners.stop() } }
    let setting = loaded ? "both cores busy" : "idle"
    var rates: [String: [Double]] = [:]
    for round in 1...rounds {
      // Alternate which path goes first.
      let order = round % 2 == 1 ? ["plain", "sluice"] : ["sluice", "plain"]
      for path in order {
        rates["\(path) count", default: []].append(
          path == "sluice" ? try await sluiceCount(sluice) : try await plainCount(plain))
        rates["\(path) square", default: []].append(
          path == "sluice" ? try await sluiceSquare(sluice) : try await plainSquare(plain))
      }
      report(
        "\(setting), round \(round): "
          + ["plain count", "sluice count", "plain square", "sluice square"].map {
            "\($0) \(Int(rates[$0]!.last!))/s"
          }.joined(separator: ", ") + " (load \(loadAverage()))")
    }
    for shape in ["count", "square"] {
      let plainMedian = median(rates["plain \(shape)"]!)
      let sluiceMedian = median(rates["sluice \(shape)"]!)
      report(
        "\(setting), \(shape == "count" ? "server streaming" : "bidirectional"): median plain "
          + "\(Int(plainMedian)) messages/s, Sluice \(Int(sluiceMedian)) messages/s, "
          + "Sluice/plain \(String(format: "%.2f", sluiceMedian / plainMedian))")
    }
  }
  // The first `idleStreams` streams grow the process (heap arenas, the connections' buffers),
  // and that memory is kept for later streams: measured first, either path shows about 50 KiB
  // a stream; measured after the other, 10 to 20. So one unmeasured pass of each first, then
  // one measured pass of each: the rise a stream costs in a process that has held that many
  // streams before.
  let sluiceFirst = try await idleStreamMemory(sluice, sluice: true)
  let plainFirst = try await idleStreamMemory(plain, sluice: false)
  let plainPerStream = try await idleStreamMemory(plain, sluice: false)
  let sluicePerStream = try await idleStreamMemory(sluice, sluice: true)
  report(
    "memory per idle stream (\(idleStreams) streams, client and server in this process, "
      + "after a pass of each): Sluice \(String(format: "%.1f", sluicePerStream)) KiB, plain "
      + "\(String(format: "%.1f", plainPerStream)) KiB (first passes, growing the process: "
      + "Sluice \(String(format: "%.1f", sluiceFirst)), plain \(String(format: "%.1f", plainFirst)))"
  )
}
