// What clients that never read cost a server, and whether a new client is still served
// meanwhile. Starts `pipeline-server` (built beside this tool) serving its counting pipeline,
// opens --clients connections that never read and never write, waits until every one's
// pipeline has stopped (its buffers full), and reports the server's resident memory per
// client, the kernel's TCP memory, and the time a new client waits for its first value (--trials
// times, one after the other, while the flood stays connected).
//
//   swift run -c release --package-path Integrations/NIO pipeline-flood \
//     [--clients 1000] [--trials 5] [--receive-buffer BYTES] [-- pipeline-server options…]
import Foundation
import NIOCore
import NIOPosix
import Sluice
import SluiceNIO
import Synchronization

let arguments = CommandLine.arguments
func option(_ name: String) -> Int? {
  arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? Int(arguments[$0 + 1]) : nil }
}
let clients = option("--clients") ?? 1000
let receiveBuffer = option("--receive-buffer")
let trials = option("--trials") ?? 5
let serverOptions = arguments.firstIndex(of: "--").map { Array(arguments[($0 + 1)...]) } ?? []

// A thousand connections need a thousand descriptors here too.
var limit = rlimit()
if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max {
  limit.rlim_cur = limit.rlim_max
  _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

/// The server process and what it prints.
final class Server: @unchecked Sendable {
  // Safety: `lines` is read and written only under `lock`; `process` is set up in `init`.
  private let lock = NSLock()
  private var lines: [String] = []
  private var partial = Data()
  let process = Process()

  init(_ options: [String]) throws {
    let pipe = Pipe()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
      .deletingLastPathComponent().appendingPathComponent("pipeline-server")
    process.arguments = options
    process.standardOutput = pipe
    pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
      self?.take(handle.availableData)
    }
    try process.run()
  }

  private func take(_ data: Data) {
    lock.withLock {
      partial.append(data)
      while let newline = partial.firstIndex(of: UInt8(ascii: "\n")) {
        lines.append(String(decoding: partial[partial.startIndex..<newline], as: UTF8.self))
        partial.removeSubrange(partial.startIndex...newline)
      }
    }
  }

  func last(_ prefix: String) -> Int? {
    lock.withLock {
      lines.last { $0.hasPrefix(prefix) }.flatMap { Int($0.dropFirst(prefix.count)) }
    }
  }

  /// The CPU time the server has used, in clock ticks (/proc: user and system).
  var cpuTicks: Int {
    let stat =
      (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8))
      ?? ""
    let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
    return fields.count > 12 ? (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) : 0
  }

  var residentKiB: Int {
    let status =
      (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8))
      ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? "VmRSS: 0 kB"
    return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
  }
}

/// The kernel's memory for TCP sockets, all of the machine's, in KiB (/proc/net/sockstat's
/// `mem`, in pages).
func kernelTCPKiB() -> Int {
  let text = (try? String(contentsOfFile: "/proc/net/sockstat", encoding: .utf8)) ?? ""
  guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("TCP:") }),
    let index = line.split(separator: " ").firstIndex(of: "mem")
  else { return 0 }
  let fields = line.split(separator: " ")
  return (Int(fields[index + 1]) ?? 0) * 4
}

func waitFor(_ what: String, seconds: Double = 600, _ condition: () -> Bool) async throws {
  let deadline = ContinuousClock.now + .seconds(seconds)
  while !condition() {
    guard ContinuousClock.now < deadline else {
      print("pipeline-flood: gave up waiting for \(what)")
      exit(1)
    }
    try await Task.sleep(for: .milliseconds(20))
  }
}

/// Waits until the server is idle: no CPU tick (its CPU time, from /proc) in each of four
/// quarter seconds in a row. (Its own `produced` reports come from a task that waits its turn with the
/// pipelines, so they can lag while it is busy.)
func settle() async throws {
  var last = server.cpuTicks
  var quiet = 0
  while quiet < 4 {
    try await Task.sleep(for: .milliseconds(250))
    let now = server.cpuTicks
    quiet = now - last <= 0 ? quiet + 1 : 0
    last = now
  }
}

/// The time from subscribing a new client to its first value.
func timeToFirstValue(port: Int) async throws -> Duration {
  let start = ContinuousClock.now
  _ = try await RemotePipeline<Int>(port: port).first().firstValue()
  return ContinuousClock.now - start
}

func seconds(_ duration: Duration) -> String {
  let (whole, attoseconds) = duration.components
  return String(format: "%.3f s", Double(whole) + Double(attoseconds) / 1e18)
}

let cpu =
  (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
  .split(separator: "\n").first { $0.hasPrefix("model name") }
  .map { String($0.split(separator: ":", maxSplits: 1)[1]).trimmingCharacters(in: .whitespaces) }
  ?? "unknown CPU"
let load =
  (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?
  .split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
print("pipeline-flood: \(clients) clients that never read, \(cpu), load \(load)")

let server = try Server(
  [
    "--max-connections", "\(clients + trials + 10)", "--read-timeout-ms", "3600000",
    "--report-ms", "20",
  ] + serverOptions)
defer { server.process.terminate() }
try await waitFor("the server to listen") { server.last("listening ") != nil }
let port = server.last("listening ")!

_ = try await timeToFirstValue(port: port)  // warms the server up
try await waitFor("the warm-up client's pipeline") { server.last("subscribed ") == 1 }
try await Task.sleep(for: .milliseconds(200))
let memoryBefore = server.residentKiB
let kernelBefore = kernelTCPKiB()
print("server resident memory after one client: \(memoryBefore) KiB")

let started = ContinuousClock.now
var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
  .channelOption(.autoRead, value: false)
if let receiveBuffer {
  bootstrap = bootstrap.channelOption(
    .socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBuffer))
}
var flood: [any Channel] = []
for _ in 0..<clients {
  flood.append(try await bootstrap.connect(host: "127.0.0.1", port: port).get())
}
let connected = ContinuousClock.now - started
// A new client while the flood's pipelines are still filling their connections' buffers.
let duringFill = try await timeToFirstValue(port: port)
try await waitFor("every flood connection's pipeline") {
  (server.last("subscribed ") ?? 0) >= clients + 2
}
try await settle()
let filled = ContinuousClock.now - started
let memoryAfter = server.residentKiB
let kernelAfter = kernelTCPKiB()
let produced = server.last("produced ") ?? 0
print(
  "connected \(clients) in \(seconds(connected)); their pipelines stopped after \(seconds(filled))")
print(
  "server resident memory: \(memoryBefore) → \(memoryAfter) KiB, "
    + "+\((memoryAfter - memoryBefore) / 1024) MiB, "
    + "\((memoryAfter - memoryBefore) * 1024 / clients) bytes a client")
print(
  "kernel TCP memory (both ends, whole machine): +\((kernelAfter - kernelBefore) / 1024) MiB; "
    + "\(produced) values produced, \(produced / max(1, clients)) a client")

print(
  "first value of a new client while the flood's buffers were filling: \(seconds(duringFill))")
var waits: [Duration] = []
for _ in 0..<trials {
  let wait = try await timeToFirstValue(port: port)
  waits.append(wait)
}
waits.sort()
print(
  "first value of a new client during the flood: median \(seconds(waits[waits.count / 2])), "
    + "max \(seconds(waits.last!)) (\(trials) clients, one after the other)")
for channel in flood { channel.close(promise: nil) }
