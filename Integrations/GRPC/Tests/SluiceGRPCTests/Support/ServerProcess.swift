import Foundation
import GRPCPipelines

/// A `pipeline-grpc-server` process started for one test: its port and what it reports on
/// standard output, read on a thread of its own.
final class ServerProcess: @unchecked Sendable {
  // Safety: `buffered` is touched only by the pipe's readability handler (one at a time); the
  // rest is `Observed` (locked) or immutable after `init`.
  struct Report: Sendable {
    var port: Int?
    var produced = 0
    var read = 0
    /// The monotonic times at which sources saw `cancel()`, in nanoseconds.
    var cancellations: [UInt64] = []
    /// Each RPC as it started: method and the client's address (one per connection).
    var rpcs: [(method: String, peer: String)] = []
  }

  let reports = Observed(Report())
  let process = Process()
  private let output = Pipe()
  /// The server's standard input, never written: the server ends when it closes, with this
  /// process (`--exit-when-stdin-closes`).
  private let input = Pipe()
  /// The server's standard error, copied to this process's: a server left behind (stopped, or
  /// outliving a crashed test) then holds no pipe of `swift test`'s, which would wait for it.
  private let errors = Pipe()
  private var buffered = Data()

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
    let process = process
    let listening = await reports.wait(timeout: .seconds(60)) { $0.port != nil }
    guard listening, process.isRunning else { throw ServerDidNotStart() }
  }

  deinit {
    if process.isRunning {
      Foundation.kill(process.processIdentifier, SIGKILL)  // also ends a stopped process
      process.waitUntilExit()
    }
    output.fileHandleForReading.readabilityHandler = nil
    errors.fileHandleForReading.readabilityHandler = nil
  }

  var port: Int { reports.value.port ?? 0 }
  var produced: Int { reports.value.produced }
  var cancellations: [UInt64] { reports.value.cancellations }

  /// The server's resident memory in KiB.
  var residentKiB: Int { residentMemoryKiB(of: process.processIdentifier) ?? 0 }

  /// Waits until the server reports `condition`; whether it did within `timeout`.
  func wait(
    timeout: Duration = .seconds(60), until condition: @escaping @Sendable (Report) -> Bool
  ) async -> Bool {
    await reports.wait(timeout: timeout, until: condition)
  }

  /// Sends `signal` to the server (SIGKILL: it dies and its connections drop; SIGSTOP: it goes
  /// silent with its connections open; SIGCONT: it resumes).
  func signal(_ signal: Int32) {
    Foundation.kill(process.processIdentifier, signal)
    if signal == SIGKILL { process.waitUntilExit() }
  }

  private func take(_ data: Data) {
    buffered.append(data)
    var lines: [String] = []
    while let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
      lines.append(String(decoding: buffered[buffered.startIndex..<newline], as: UTF8.self))
      buffered.removeSubrange(buffered.startIndex...newline)
    }
    guard !lines.isEmpty else { return }
    reports.update { report in
      for line in lines {
        let words = line.split(separator: " ").map(String.init)
        switch words.first {
        case "listening": report.port = Int(words[1])
        case "produced": report.produced = Int(words[1]) ?? report.produced
        case "read": report.read = Int(words[1]) ?? report.read
        case "cancelled": report.cancellations.append(UInt64(words[1]) ?? 0)
        case "rpc": report.rpcs.append((words[1], words.dropFirst(2).joined(separator: " ")))
        default: break
        }
      }
    }
  }

  /// The built executable `name` (`pipeline-grpc-server`), next to the test bundle (or in the package's .build).
  static func executable(named name: String = "pipeline-grpc-server") throws -> URL {
    let candidates = [
      URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
      Bundle.main.bundleURL.deletingLastPathComponent(),
      URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
          ".build/debug"),
    ].map { $0.appendingPathComponent(name) }
    guard
      let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) })
    else { throw ServerDidNotStart() }
    return found
  }

  struct ServerDidNotStart: Error {}
}
