// Values per second over loopback, the Sluice path against a plain NIOAsyncChannel loop with
// the same framing, in one run:
// - Sluice: `PipelineServer` serving `(0..<N).publisher` → TCP → `RemotePipeline` → `sink`;
// - plain: a server task encoding the same frames into batches of the same size and writing
//   them with a `NIOAsyncChannel`'s outbound writer → TCP → a client task iterating a
//   `NIOAsyncChannel`'s inbound frames (the same `WireFrameDecoder`) and decoding each value.
// Each round runs in a process of its own (server and client in it, over 127.0.0.1), which
// reports its time and how far its resident memory rose; rounds alternate between the two
// paths (and which goes first). Two phases: the machine as it is ("idle"; the load average is
// printed), then with --busy processes spinning on every core ("loaded").
//
//   swift run -c release --package-path Integrations/NIO pipeline-bench \
//     [--values 1000000] [--rounds 5] [--busy 2] [--phases idle,loaded] [--prefetch 64]
import Foundation
import Logging
import NIOCore
import NIOPosix
import Sluice
import SluiceNIO
import Synchronization

let arguments = CommandLine.arguments
func text(_ name: String) -> String? {
  arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
}
func option(_ name: String) -> Int? { text(name).flatMap { Int($0) } }
let count = option("--values") ?? 1_000_000
let batchBytes = option("--batch-bytes") ?? PipelineServerConfiguration().batchBytes
let prefetch = option("--prefetch") ?? PipelineServerConfiguration().prefetch
let sendBufferSize = PipelineServerConfiguration().sendBufferSize ?? 64 * 1024
let client = RemotePipelineConfiguration()
/// The server's and the client's event loops: one thread each, as if in processes of their own.
let serverLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let clientLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)

/// Resident memory of this process in KiB (Linux /proc), 0 elsewhere.
func residentKiB() -> Int {
  guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
    let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
  else { return 0 }
  return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
}

func seconds(_ duration: Duration) -> Double {
  Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

// MARK: One round (a child process)

/// The Sluice path: PipelineServer → TCP → RemotePipeline → sink. Returns the values received.
func sluiceRound() async throws -> Int {
  var logger = Logger(label: "pipeline-bench")
  logger.logLevel = .warning
  let server = PipelineServer<Int>(
    configuration: .init(batchBytes: batchBytes, prefetch: prefetch), logger: logger
  ) {
    (0..<count).publisher
  }
  let (ports, portContinuation) = AsyncStream<Int>.makeStream()
  let serving = Task { try await server.run(group: serverLoops) { portContinuation.yield($0) } }
  var portIterator = ports.makeAsyncIterator()
  let port = await portIterator.next() ?? 0
  let received = Counter()
  let (completions, completed) = AsyncStream<Subscribers.Completion<RemotePipelineError>>
    .makeStream()
  let subscription = RemotePipeline<Int>(port: port, group: clientLoops).sink(
    receiveCompletion: { completed.yield($0) },
    receiveValue: { _ in received.count += 1 })
  var iterator = completions.makeAsyncIterator()
  let completion = await iterator.next()
  subscription.cancel()
  serving.cancel()
  precondition(completion == .finished, "Sluice: \(String(describing: completion))")
  return received.count
}

/// Values counted by a sink's closure, which one event loop runs, one call at a time (as the
/// plain client counts in its own loop).
final class Counter: @unchecked Sendable {
  // Safety: `count` is written only by the sink's closure (serial signals, on the connection's
  // event loop) and read after the completion was received.
  var count = 0
}

/// The anchor: a plain NIOAsyncChannel loop on each side, the same frames and batches.
func plainRound() async throws -> Int {
  let (port, serving) = try await plainServer()
  defer { serving.cancel() }
  return try await plainClient(port: port)
}

/// The plain server: its port and its task.
func plainServer() async throws -> (Int, Task<Void, any Error>) {
  let listener = try await ServerBootstrap(group: serverLoops)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.so_sndbuf), value: SocketOptionValue(sendBufferSize))
    .bind(host: "127.0.0.1", port: 0) { channel in
      channel.eventLoop.makeCompletedFuture {
        try channel.pipeline.syncOperations.addWireFrameDecoder(maximumFrameLength: 16)
        return try NIOAsyncChannel<[WireFrame], ByteBuffer>(
          wrappingChannelSynchronously: channel,
          configuration: .init(isOutboundHalfClosureEnabled: true))
      }
    }
  let port = listener.channel.localAddress?.port ?? 0
  let serving = Task {
    try await listener.executeThenClose { connections in
      for try await connection in connections {
        try await connection.executeThenClose { inbound, outbound in
          var batch = ByteBuffer()
          for value in 0..<count {
            try WireFrame.write(value: value, into: &batch)
            if batch.readableBytes >= batchBytes {
              try await outbound.write(batch)
              batch = ByteBuffer()
            }
          }
          WireFrame.write(.finished, into: &batch)
          try await outbound.write(batch)
          // As PipelineServer: half-close (what is queued goes out first), then wait for the
          // client to close.
          outbound.finish()
          for try await _ in inbound {}
        }
        return
      }
    }
  }
  return (port, serving)
}

/// The plain client: the values it received.
func plainClient(port: Int) async throws -> Int {
  let channel = try await ClientBootstrap(group: clientLoops)
    .channelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(client.receiveBufferSize!))
    .channelOption(
      .recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: client.readSize)
    )
    .channelOption(.maxMessagesPerRead, value: 1)
    .connect(host: "127.0.0.1", port: port) { channel in
      channel.eventLoop.makeCompletedFuture {
        try channel.pipeline.syncOperations.addWireFrameDecoder(
          maximumFrameLength: client.maximumFrameLength)
        return try NIOAsyncChannel<[WireFrame], ByteBuffer>(
          wrappingChannelSynchronously: channel,
          configuration: .init(
            backPressureStrategy: .init(
              lowWatermark: 2, highWatermark: 4)))
      }
    }
  let received = try await channel.executeThenClose { inbound, _ in
    var received = 0
    for try await frames in inbound {
      for frame in frames {
        switch frame.tag {
        case .value:
          _ = try Int(wirePayload: frame.payload)
          received += 1
        case .finished: return received
        default: fatalError("unexpected frame \(frame.tag)")
        }
      }
    }
    return received
  }
  return received
}

/// Diagnostics: one side Sluice, the other plain.
func mixedRound(sluiceServer: Bool) async throws -> Int {
  if sluiceServer {
    var logger = Logger(label: "pipeline-bench")
    logger.logLevel = .warning
    let server = PipelineServer<Int>(
      configuration: .init(batchBytes: batchBytes, prefetch: prefetch), logger: logger
    ) {
      (0..<count).publisher
    }
    let (ports, portContinuation) = AsyncStream<Int>.makeStream()
    let serving = Task { try await server.run(group: serverLoops) { portContinuation.yield($0) } }
    var portIterator = ports.makeAsyncIterator()
    let port = await portIterator.next() ?? 0
    defer { serving.cancel() }
    return try await plainClient(port: port)
  } else {
    let (port, serving) = try await plainServer()
    defer { serving.cancel() }
    let received = Counter()
    let (completions, completed) = AsyncStream<Subscribers.Completion<RemotePipelineError>>
      .makeStream()
    let subscription = RemotePipeline<Int>(port: port, group: clientLoops).sink(
      receiveCompletion: { completed.yield($0) },
      receiveValue: { _ in received.count += 1 })
    var iterator = completions.makeAsyncIterator()
    _ = await iterator.next()
    subscription.cancel()
    return received.count
  }
}

if let path = text("--round") {
  let before = residentKiB()
  let peak = Atomic<Int>(before)
  let sampler = Task {
    while !Task.isCancelled {
      _ = peak.max(residentKiB(), ordering: .relaxed)
      try? await Task.sleep(for: .milliseconds(10))
    }
  }
  let start = ContinuousClock.now
  let received =
    switch path {
    case "sluice": try await sluiceRound()
    case "plain": try await plainRound()
    case "sluice-server": try await mixedRound(sluiceServer: true)
    default: try await mixedRound(sluiceServer: false)
    }
  let elapsed = ContinuousClock.now - start
  sampler.cancel()
  _ = peak.max(residentKiB(), ordering: .relaxed)
  precondition(received == count, "\(path): received \(received) of \(count)")
  var usage = rusage()
  getrusage(RUSAGE_SELF.rawValue, &usage)
  let cpu =
    Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
    + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
  print("seconds \(seconds(elapsed)) rise \(peak.load(ordering: .relaxed) - before) cpu \(cpu)")
  exit(0)
}

// MARK: The orchestrator

/// Runs one round in a child process: its time in seconds, its memory rise in KiB, and the CPU
/// time it used (user and system, both ends, process start included) in seconds.
func round(_ path: String) throws -> (seconds: Double, riseKiB: Int, cpu: Double) {
  let process = Process()
  let pipe = Pipe()
  process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
  process.arguments = [
    "--round", path, "--values", "\(count)", "--batch-bytes", "\(batchBytes)", "--prefetch",
    "\(prefetch)",
  ]
  process.standardOutput = pipe
  try process.run()
  let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  process.waitUntilExit()
  let last = output.split(separator: "\n").last { $0.hasPrefix("seconds ") } ?? ""
  let fields = last.split(whereSeparator: \.isWhitespace)
  guard process.terminationStatus == 0, fields.count == 6, let time = Double(fields[1]),
    let rise = Int(fields[3]), let cpu = Double(fields[5])
  else { fatalError("a \(path) round failed: \(output)") }
  return (time, rise, cpu)
}

/// Processes that spin until killed, one a core: the "loaded" phase.
func spinners(_ count: Int) throws -> [Process] {
  try (0..<count).map { _ in
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", "while :; do :; done"]
    try process.run()
    return process
  }
}

func loadAverage() -> String {
  (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?
    .split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
}

func median(_ values: [Double]) -> Double {
  let sorted = values.sorted()
  return sorted.count % 2 == 1
    ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

let rounds = option("--rounds") ?? 5
let busy = option("--busy") ?? ProcessInfo.processInfo.activeProcessorCount
let phases = (text("--phases") ?? "idle,loaded").split(separator: ",").map(String.init)
let cpu =
  (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
  .split(separator: "\n").first { $0.hasPrefix("model name") }
  .map { String($0.split(separator: ":", maxSplits: 1)[1]).trimmingCharacters(in: .whitespaces) }
  ?? "unknown CPU"
print(
  "pipeline-bench: \(count) values a round, \(rounds) rounds of each path a phase, "
    + "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(cpu)")
for phase in phases {
  let spinning = phase == "loaded" ? try spinners(busy) : []
  defer { for process in spinning { process.terminate() } }
  print(
    "\(phase)\(spinning.isEmpty ? "" : " (\(busy) spinning processes)"): "
      + "load average \(loadAverage()) at the start")
  var sluice: [(seconds: Double, riseKiB: Int, cpu: Double)] = []
  var plain: [(seconds: Double, riseKiB: Int, cpu: Double)] = []
  for index in 0..<rounds {
    if index % 2 == 0 {
      plain.append(try round("plain"))
      sluice.append(try round("sluice"))
    } else {
      sluice.append(try round("sluice"))
      plain.append(try round("plain"))
    }
    print(
      String(
        format: "  round %d: plain %.0f values/s (+%d KiB), Sluice %.0f values/s (+%d KiB)",
        index + 1, Double(count) / plain[index].seconds, plain[index].riseKiB,
        Double(count) / sluice[index].seconds, sluice[index].riseKiB))
  }
  let plainRate = median(plain.map { Double(count) / $0.seconds })
  let sluiceRate = median(sluice.map { Double(count) / $0.seconds })
  print(
    String(
      format:
        "  median: plain %.0f values/s, Sluice %.0f values/s, Sluice/plain %.2f; "
        + "memory rise (median) plain %.0f KiB, Sluice %.0f KiB; load average %@ at the end",
      plainRate, sluiceRate, sluiceRate / plainRate,
      median(plain.map { Double($0.riseKiB) }), median(sluice.map { Double($0.riseKiB) }),
      loadAverage()))
  let plainCPU = median(plain.map(\.cpu))
  let sluiceCPU = median(sluice.map(\.cpu))
  print(
    String(
      format: "  CPU time a round (median): plain %.3f s, Sluice %.3f s, Sluice/plain %.2f",
      plainCPU, sluiceCPU, sluiceCPU / plainCPU))
}
