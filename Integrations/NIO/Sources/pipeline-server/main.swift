// A server process for the tests and the tools. It serves, to every client:
// - by default, the pipeline `0..<count → handleEvents → tryMap(fail at --fail-after)`, whose
//   source emits as fast as it is asked, or one value every --interval-ms, or synchronously
//   with a pause of --sync-pause-ms before each value (or only before value --pause-at; only
//   for the first --slow-connections connections, the later ones' sources emit at once);
// - with --strings-hex H1,H2,…: those strings (each UTF-8, in hex), then finished;
// - with --bytes-hex H1,H2,…: those byte strings as `ByteBuffer` values, then finished;
// - with --blob-bytes SIZE: --count values of SIZE bytes each, value i the 8 bytes of i
//   repeated (the rest of the last 8 bytes: i's low byte), then finished;
// - with --raw-hex H1,H2,…: those bytes as they are, not through `PipelineServer` (a hostile
//   server), each part written --raw-pause-ms after the one before (100 by default), then
//   closes (--then close) or stays silent (--then silent).
// It reports on standard output, one line each: `listening <port>`, `produced <n>` (values its
// sources emitted, every --report-ms while it changes), `subscribed <n>` (pipelines subscribed
// to), `cancelled` (a source saw cancel()), and the server's log (swift-log, --log-level).
//
//   pipeline-server [--count N] [--fail-after K] [--interval-ms MS] [--report-ms MS]
//                   [--sync-pause-ms MS [--pause-at K] [--slow-connections N]]
//                   [--send-buffer BYTES]
//                   [--batch-bytes BYTES] [--max-connections N] [--max-frame BYTES]
//                   [--read-timeout-ms MS] [--heartbeat-ms MS] [--log-level LEVEL]
//                   [--strings-hex H,… | --bytes-hex H,…
//                    | --raw-hex H,… [--raw-pause-ms MS] [--then close|silent]]
//                   [--exit-when-stdin-closes]
//
// --exit-when-stdin-closes ends the process when its standard input closes (the tests start it
// so: it dies with the test process, even one that crashed, and never keeps `swift test`
// waiting for the end of an output it shares).
import Foundation
import Logging
import NIOCore
import NIOPosix
import Sluice
import SluiceNIO
import Synchronization

if CommandLine.arguments.contains("--exit-when-stdin-closes") {
  // A thread of its own reads until the end; `_exit`, so that no teardown runs meanwhile.
  Thread {
    var byte: UInt8 = 0
    while true {
      let count = read(0, &byte, 1)
      if count == 0 || (count < 0 && errno != EINTR) { _exit(0) }
    }
  }.start()
}

let arguments = CommandLine.arguments
func text(_ name: String) -> String? {
  arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
}
func option(_ name: String) -> Int? { text(name).flatMap { Int($0) } }
func hexList(_ name: String) -> [[UInt8]]? {
  text(name).map { list in list.split(separator: ",", omittingEmptySubsequences: false).map(hex) }
}
func hex(_ text: Substring) -> [UInt8] {
  var bytes: [UInt8] = []
  var index = text.startIndex
  while index < text.endIndex, let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex) {
    bytes.append(UInt8(text[index..<next], radix: 16) ?? 0)
    index = next
  }
  return bytes
}

func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

// Many connections at once (the flood tool opens a thousand): as many descriptors as allowed.
var limit = rlimit()
if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max {
  limit.rlim_cur = limit.rlim_max
  _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

let level = text("--log-level").flatMap { Logger.Level(rawValue: $0) } ?? .info
LoggingSystem.bootstrap { label in
  var handler = StreamLogHandler.standardOutput(label: label)
  handler.logLevel = level
  return handler
}

let defaults = PipelineServerConfiguration()
let configuration = PipelineServerConfiguration(
  maximumConnections: option("--max-connections") ?? defaults.maximumConnections,
  maximumFrameLength: option("--max-frame") ?? defaults.maximumFrameLength,
  batchBytes: option("--batch-bytes") ?? defaults.batchBytes,
  readTimeout: option("--read-timeout-ms").map { .milliseconds($0) } ?? defaults.readTimeout,
  heartbeatInterval: option("--heartbeat-ms").map { .milliseconds($0) }
    ?? defaults.heartbeatInterval,
  sendBufferSize: option("--send-buffer") ?? defaults.sendBufferSize)

let produced = Atomic<Int>(0)
let subscribed = Atomic<Int>(0)
/// Connections whose pipeline was made (see --slow-connections).
let connections = Atomic<Int>(0)
/// `size` bytes: the 8 bytes of `index` (big-endian), repeated.
func blob(index: Int, size: Int) -> ByteBuffer {
  var buffer = ByteBuffer()
  buffer.reserveCapacity(size)
  while buffer.readableBytes + 8 <= size { buffer.writeInteger(UInt64(index)) }
  buffer.writeRepeatingByte(UInt8(truncatingIfNeeded: index), count: size - buffer.readableBytes)
  return buffer
}

/// `values`, counted and reported like the counting pipeline's.
func reported<Output>(_ values: [Output]) -> AnyPublisher<Output, any Error> {
  values.publisher
    .handleEvents(
      receiveSubscription: { _ in subscribed.add(1, ordering: .relaxed) },
      receiveOutput: { _ in produced.add(1, ordering: .relaxed) },
      receiveCancel: { say("cancelled") }
    )
    .setFailureType(to: (any Error).self)
    .eraseToAnyPublisher()
}

let reporter = Task {
  var last = (-1, -1)
  while !Task.isCancelled {
    let now = (produced.load(ordering: .relaxed), subscribed.load(ordering: .relaxed))
    if now.0 != last.0 { say("produced \(now.0)") }
    if now.1 != last.1 { say("subscribed \(now.1)") }
    last = now
    try? await Task.sleep(for: .milliseconds(option("--report-ms") ?? 50))
  }
}

if let strings = hexList("--strings-hex") {
  let values = strings.map { String(decoding: $0, as: UTF8.self) }
  try await PipelineServer<String>(configuration: configuration) { reported(values) }
    .run { port in say("listening \(port)") }
} else if let byteStrings = hexList("--bytes-hex") {
  let values = byteStrings.map { ByteBuffer(bytes: $0) }
  try await PipelineServer<ByteBuffer>(configuration: configuration) { reported(values) }
    .run { port in say("listening \(port)") }
} else if let size = option("--blob-bytes") {
  // `--count` values of `size` bytes, value i filled with the 8 bytes of i (big-endian) over
  // and over: a client can check every byte of every value.
  let values = (0..<(option("--count") ?? 1_000)).map { blob(index: $0, size: size) }
  try await PipelineServer<ByteBuffer>(configuration: configuration) { reported(values) }
    .run { port in say("listening \(port)") }
} else if let parts = hexList("--raw-hex") {
  try await serveRaw(
    parts, pause: .milliseconds(option("--raw-pause-ms") ?? 100),
    thenClose: text("--then") != "silent")
} else {
  let count = option("--count") ?? Int.max
  let failAfter = option("--fail-after")
  let interval = option("--interval-ms").map { Duration.milliseconds($0) }
  let pauseAt = option("--pause-at")
  // With --sync-pause-ms: only the first this many connections' sources pause (the others
  // emit at once: a fast client beside slow ones).
  let slowConnections = option("--slow-connections") ?? Int.max
  try await PipelineServer<Int>(configuration: configuration) {
    let connection = connections.add(1, ordering: .relaxed).oldValue
    let source =
      if let interval {
        AsyncProducer<Int, Never> { sender in
          for value in 0..<count {
            do { try await Task.sleep(for: interval) } catch { return }  // cancelled
            guard await sender.send(value) else { return }
          }
        }
        .eraseToAnyPublisher()
      } else if let pause = option("--sync-pause-ms"), connection < slowConnections {
        // A synchronous source that takes `pause` before each value (or only before value
        // --pause-at): it runs inside the writer's request call, on that call's thread.
        (0..<count).publisher.handleEvents(receiveOutput: { value in
          if pauseAt == nil || value == pauseAt { usleep(UInt32(pause) * 1_000) }
        })
        .eraseToAnyPublisher()
      } else {
        (0..<count).publisher.eraseToAnyPublisher()
      }
    return
      source
      .handleEvents(
        receiveSubscription: { _ in subscribed.add(1, ordering: .relaxed) },
        receiveOutput: { _ in produced.add(1, ordering: .relaxed) },
        receiveCancel: { say("cancelled") }
      )
      .tryMap { value in
        if let failAfter, value == failAfter { throw PipelineFailure("failed at \(value)") }
        return value
      }
  }
  .run { port in say("listening \(port)") }
}
reporter.cancel()

/// Writes `parts` to every client, `pause` apart, then closes the connection or leaves it open
/// and silent (reading and dropping whatever the client sends).
func serveRaw(_ parts: [[UInt8]], pause: Duration, thenClose: Bool) async throws {
  final class RawHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let parts: [[UInt8]]
    let pause: TimeAmount
    let thenClose: Bool
    init(parts: [[UInt8]], pause: TimeAmount, thenClose: Bool) {
      self.parts = parts
      self.pause = pause
      self.thenClose = thenClose
    }
    func channelActive(context: ChannelHandlerContext) {
      write(part: 0, to: context.channel)
    }
    func write(part index: Int, to channel: any Channel) {
      guard index < parts.count else {
        if thenClose { channel.close(mode: .output, promise: nil) }
        return
      }
      channel.writeAndFlush(ByteBuffer(bytes: parts[index])).whenComplete { _ in
        channel.eventLoop.scheduleTask(in: self.pause) { self.write(part: index + 1, to: channel) }
      }
    }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
  }
  let (seconds, attoseconds) = pause.components
  let pauseAmount = TimeAmount.nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
  let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.allowRemoteHalfClosure, value: true)
    .childChannelInitializer { channel in
      channel.eventLoop.makeCompletedFuture {
        try channel.pipeline.syncOperations.addHandler(
          RawHandler(parts: parts, pause: pauseAmount, thenClose: thenClose))
      }
    }
    .bind(host: "127.0.0.1", port: 0).get()
  say("listening \(server.localAddress?.port ?? 0)")
  try await server.closeFuture.get()
}
