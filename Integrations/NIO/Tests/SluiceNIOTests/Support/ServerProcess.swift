import Foundation
import Synchronization

/// A `pipeline-server` process started for one test: its port, and what it reports on standard
/// output (`produced <n>`, `subscribed <n>`, `cancelled`, its log), read on a thread of its own.
final class ServerProcess: @unchecked Sendable {
  // Safety: `lines`, `buffered` and `listeningPort` are read and written only under `lock`;
  // `process` and `output` are set up in `init` and only read afterwards.
  private let lock = NSLock()
  private var lines: [String] = []
  private var buffered = Data()
  private var listeningPort: Int?
  let process = Process()
  private let output = Pipe()
  /// The server's standard input, never written: the server ends when it closes, with this
  /// process (`--exit-when-stdin-closes`).
  private let input = Pipe()
  /// The server's standard error, copied to this process's: a server left behind (stopped, or
  /// outliving a crashed test) then holds no pipe of `swift test`'s, which would wait for it.
  private let errors = Pipe()

  /// Starts the server with `arguments` and waits (up to a minute) until it listens.
  init(_ arguments: [String] = []) async throws {
    process.executableURL = try Self.executable()
    process.arguments = arguments + ["--exit-when-stdin-closes"]
    process.standardInput = input
    process.standardOutput = output
    process.standardError = errors
    errors.fileHandleForReading.readabilityHandler = { handle in
      FileHandle.standardError.write(handle.availableData)
    }
    output.fileHandleForReading.readabilityHandler = { [weak self] handle in
      self?.take(handle.availableData)
    }
    try process.run()
    let deadline = ContinuousClock.now + .seconds(60)
    while port == nil {
      guard ContinuousClock.now < deadline, process.isRunning else {
        throw ServerDidNotStart()
      }
      try await Task.sleep(for: .milliseconds(10))
    }
  }

  deinit {
    if process.isRunning {
      Foundation.kill(process.processIdentifier, SIGKILL)  // also ends a stopped process
      process.waitUntilExit()
    }
    output.fileHandleForReading.readabilityHandler = nil
    errors.fileHandleForReading.readabilityHandler = nil
  }

  var port: Int? { lock.withLock { listeningPort } }

  /// Whether the server process is still running (a trap ends it).
  var isRunning: Bool { process.isRunning }

  /// The values the server's sources have emitted, as last reported.
  var produced: Int { lastCount("produced ") }

  /// The pipelines the server has subscribed to, as last reported.
  var subscribed: Int { lastCount("subscribed ") }

  /// How many times a source saw `cancel()`.
  var cancelCount: Int { lock.withLock { lines.count { $0 == "cancelled" } } }

  /// Whether a source saw `cancel()`.
  var sawCancel: Bool { cancelCount > 0 }

  /// The lines the server printed that contain `text` (its log lines among them).
  func lines(containing text: String) -> [String] {
    lock.withLock { lines.filter { $0.contains(text) } }
  }

  /// The server's resident memory, in KiB (Linux: /proc).
  var residentKiB: Int? { residentMemoryKiB(of: process.processIdentifier) }

  /// The CPU time the server has used, in clock ticks (Linux: /proc; user and system).
  var cpuTicks: Int {
    let stat =
      (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8))
      ?? ""
    let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
    return fields.count > 12 ? (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) : 0
  }

  /// Waits (up to `seconds`) until the server is idle: no CPU tick in each of four quarter
  /// seconds in a row. (Its `produced` reports come from a task that waits its turn with the
  /// pipelines, so they lag while it is busy.) Whether it became idle.
  func idle(within seconds: Int = 120) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    var last = cpuTicks
    var quiet = 0
    while quiet < 4 {
      guard ContinuousClock.now < deadline else { return false }
      try? await Task.sleep(for: .milliseconds(250))
      let now = cpuTicks
      quiet = now == last ? quiet + 1 : 0
      last = now
    }
    return true
  }

  /// Kills the server at once (SIGKILL): its connections drop.
  func kill() {
    Foundation.kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
  }

  /// Stops the server (SIGSTOP): its connections stay open, and it sends nothing more.
  func stop() {
    Foundation.kill(process.processIdentifier, SIGSTOP)
  }

  private func lastCount(_ prefix: String) -> Int {
    lock.withLock {
      lines.last { $0.hasPrefix(prefix) }.flatMap { Int($0.dropFirst(prefix.count)) } ?? 0
    }
  }

  private func take(_ data: Data) {
    lock.withLock {
      buffered.append(data)
      while let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
        let line = String(decoding: buffered[buffered.startIndex..<newline], as: UTF8.self)
        buffered.removeSubrange(buffered.startIndex...newline)
        lines.append(line)
        if line.hasPrefix("listening ") { listeningPort = Int(line.dropFirst("listening ".count)) }
      }
    }
  }

  /// The built `pipeline-server`, next to the test bundle (or in the package's .build/debug).
  static func executable() throws -> URL {
    let candidates = [
      URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
      Bundle.main.bundleURL.deletingLastPathComponent(),
      URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(".build/debug"),
    ].map { $0.appendingPathComponent("pipeline-server") }
    guard
      let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) })
    else { throw ServerDidNotStart() }
    return found
  }

  struct ServerDidNotStart: Error {}
}

/// `bytes` in hex, as `pipeline-server`'s hex options take them.
func hex(_ bytes: some Sequence<UInt8>) -> String {
  bytes.map {
    String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16)
  }
  .joined()
}

/// The resident memory of process `pid` in KiB, from /proc (Linux); `nil` elsewhere.
func residentMemoryKiB(of pid: Int32) -> Int? {
  guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
    let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
  else { return nil }
  return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
}

/// Waits (up to `seconds`) until `condition` holds; whether it did.
func eventually(within seconds: Int = 30, _ condition: () -> Bool) async -> Bool {
  let deadline = ContinuousClock.now + .seconds(seconds)
  while !condition() {
    if ContinuousClock.now > deadline { return false }
    try? await Task.sleep(for: .milliseconds(10))
  }
  return true
}
