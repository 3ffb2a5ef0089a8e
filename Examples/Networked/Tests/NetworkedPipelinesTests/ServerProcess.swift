import Foundation
import Synchronization

/// A `pipeline-server` process started for one test: its port, and what it reports on standard
/// output (`produced <n>`, `cancelled`), read on a thread of its own.
final class ServerProcess: @unchecked Sendable {
  // Safety: `lines`, `buffered` and `port` are read and written only under `lock`.
  private let lock = NSLock()
  private var lines: [String] = []
  private var buffered = Data()
  private var listeningPort: Int?
  let process = Process()
  private let output = Pipe()

  /// Starts the server with `arguments` and waits (up to a minute) until it listens.
  init(_ arguments: [String] = []) async throws {
    process.executableURL = try Self.executable()
    process.arguments = arguments
    process.standardOutput = output
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
    if process.isRunning { process.terminate() }
    output.fileHandleForReading.readabilityHandler = nil
  }

  var port: Int? { lock.withLock { listeningPort } }

  /// The values the server's source has emitted, as last reported.
  var produced: Int {
    lock.withLock {
      lines.last { $0.hasPrefix("produced ") }.flatMap { Int($0.dropFirst("produced ".count)) }
        ?? 0
    }
  }

  /// Whether the server's source saw `cancel()`.
  var sawCancel: Bool { lock.withLock { lines.contains("cancelled") } }

  /// The server's resident memory, in KiB (Linux: /proc).
  var residentKiB: Int? { residentMemoryKiB(of: process.processIdentifier) }

  /// Kills the server at once (SIGKILL): its connections drop.
  func kill() {
    Foundation.kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
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
        .deletingLastPathComponent().appendingPathComponent(".build/debug"),
    ].map { $0.appendingPathComponent("pipeline-server") }
    guard
      let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) })
    else { throw ServerDidNotStart() }
    return found
  }

  struct ServerDidNotStart: Error {}
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
