// Values per second over loopback: a Sluice pipeline served by `PipelineServer` and read by
// `RemotePipeline` → `sink`, against a plain `NIOAsyncChannel` server loop and client loop with
// the same framing (one `=value` line a value, `.` at the end), in the same run, rounds
// alternating. Both ends in this process, over 127.0.0.1; resident memory sampled during the
// Sluice runs.
//
//   swift run -c release --package-path Examples/Networked pipeline-bench [values] [rounds]
import Foundation
import NIOCore
import NIOPosix
import NetworkedPipelines
import Sluice
import Synchronization

let arguments = CommandLine.arguments
let count = arguments.count > 1 ? Int(arguments[1]) ?? 1_000_000 : 1_000_000
let rounds = arguments.count > 2 ? Int(arguments[2]) ?? 3 : 3

/// Resident memory of this process in KiB (Linux /proc), 0 elsewhere.
func residentKiB() -> Int {
  guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
    let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
  else { return 0 }
  return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
}

/// Starts `run(bound:)` in a task and returns the port it bound and the task.
func start(_ run: @escaping @Sendable (@escaping @Sendable (Int) -> Void) async throws -> Void)
  async -> (port: Int, task: Task<Void, any Error>)
{
  let (ports, continuation) = AsyncStream<Int>.makeStream()
  let task = Task { try await run { continuation.yield($0) } }
  var iterator = ports.makeAsyncIterator()
  return (await iterator.next() ?? 0, task)
}

/// The Sluice path: PipelineServer → TCP → RemotePipeline → sink.
/// Returns the round's time and how far resident memory rose above where it started.
func sluiceRound() async throws -> (seconds: Double, growthKiB: Int) {
  let server = PipelineServer<Int> {
    (0..<count).publisher.setFailureType(to: (any Error).self).eraseToAnyPublisher()
  }
  let (port, serving) = await start { bound in try await server.run(bound: bound) }
  let before = residentKiB()
  let peak = Atomic<Int>(before)
  let sampler = Task {
    while !Task.isCancelled {
      let now = residentKiB()
      _ = peak.max(now, ordering: .relaxed)
      try? await Task.sleep(for: .milliseconds(20))
    }
  }
  let start = ContinuousClock.now
  let received = try await RemotePipeline<Int>(port: port).reduce(0) { count, _ in count + 1 }
    .firstValue()
  let elapsed = ContinuousClock.now - start
  sampler.cancel()
  serving.cancel()
  precondition(received == count, "Sluice: received \(received) of \(count)")
  return (seconds(elapsed), peak.load(ordering: .relaxed) - before)
}

/// The anchor: a plain NIOAsyncChannel loop on each side, the same frames.
func plainRound() async throws -> Double {
  let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.so_sndbuf), value: 64 * 1024)
    .bind(host: "127.0.0.1", port: 0) { channel in
      channel.eventLoop.makeCompletedFuture {
        try channel.pipeline.syncOperations.addLineFraming()
        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
          wrappingChannelSynchronously: channel,
          configuration: .init(isOutboundHalfClosureEnabled: true))
      }
    }
  let port = listener.channel.localAddress?.port ?? 0
  let serving = Task {
    try await listener.executeThenClose { connections in
      for try await connection in connections {
        try await connection.executeThenClose { inbound, outbound in
          var buffer = ByteBuffer()
          for value in 0..<count {
            buffer.clear()
            Frame<Int>.value(value).write(to: &buffer)
            try await outbound.write(buffer)
          }
          buffer.clear()
          Frame<Int>.finished.write(to: &buffer)
          try await outbound.write(buffer)
          // As PipelineServer: half-close (what is queued goes out first), then wait for the
          // client to close.
          outbound.finish()
          for try await _ in inbound {}
        }
        return
      }
    }
  }
  let start = ContinuousClock.now
  let client = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
    .channelOption(.socketOption(.so_rcvbuf), value: 64 * 1024)
    .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 16 * 1024))
    .connect(host: "127.0.0.1", port: port) { channel in
      channel.eventLoop.makeCompletedFuture {
        try channel.pipeline.syncOperations.addLineFraming()
        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
          wrappingChannelSynchronously: channel,
          configuration: .init(backPressureStrategy: .init(lowWatermark: 32, highWatermark: 64)))
      }
    }
  let received = try await client.executeThenClose { inbound, _ in
    var received = 0
    for try await line in inbound {
      switch Frame<Int>(line: line) {
      case .value: received += 1
      case .finished: return received
      default: fatalError("malformed frame")
      }
    }
    return received
  }
  let elapsed = ContinuousClock.now - start
  serving.cancel()
  precondition(received == count, "plain: received \(received) of \(count)")
  return seconds(elapsed)
}

func seconds(_ duration: Duration) -> Double {
  Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

let cpu =
  (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
  .split(separator: "\n").first { $0.hasPrefix("model name") }
  .map { String($0.split(separator: ":", maxSplits: 1)[1]).trimmingCharacters(in: .whitespaces) }
  ?? "unknown CPU"
print("pipeline-bench: \(count) values a round, \(rounds) rounds, \(cpu)")
print("resident memory before: \(residentKiB()) KiB")
var sluiceRates: [Double] = []
var plainRates: [Double] = []
var peak = 0  // KiB
let sluiceFirst = ProcessInfo.processInfo.environment["SLUICE_FIRST"] != nil
for round in 1...rounds {
  var plain = 0.0
  if !sluiceFirst { plain = try await plainRound() }
  let before = residentKiB()
  let (sluice, growth) = try await sluiceRound()
  if sluiceFirst { plain = try await plainRound() }
  peak = max(peak, growth)
  print(
    "resident memory: \(before) KiB before the Sluice run, at most \(growth) KiB more during it; "
      + "\(residentKiB()) KiB after the round")
  plainRates.append(Double(count) / plain)
  sluiceRates.append(Double(count) / sluice)
  print(
    "round \(round): plain NIOAsyncChannel \(Int(Double(count) / plain)) values/s, "
      + "Sluice pipeline \(Int(Double(count) / sluice)) values/s")
}
let medianPlain = plainRates.sorted()[rounds / 2]
let medianSluice = sluiceRates.sorted()[rounds / 2]
print(
  "median: plain \(Int(medianPlain)) values/s, Sluice \(Int(medianSluice)) values/s, "
    + "Sluice/plain \(String(format: "%.2f", medianSluice / medianPlain))")
print("largest rise of resident memory during a Sluice run: \(peak) KiB")
