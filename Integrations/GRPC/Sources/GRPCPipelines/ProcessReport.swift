import Foundation

/// The reading of the system's monotonic clock in nanoseconds: the same clock in every process
/// of the machine, so a server and a client can time what passes between them.
public func monotonicNanoseconds() -> UInt64 {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// The resident memory of process `pid` (the calling process by default) in KiB, from /proc
/// (Linux); `nil` elsewhere.
public func residentMemoryKiB(of pid: Int32? = nil) -> Int? {
  let path = pid.map { "/proc/\($0)/status" } ?? "/proc/self/status"
  guard let status = try? String(contentsOfFile: path, encoding: .utf8),
    let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
  else { return nil }
  return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
}

/// Writes `line` and a newline to standard output at once (unbuffered: a process reading it
/// sees it now).
public func report(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The integer after `--name` on the command line, if any.
public func commandLineOption(_ name: String) -> Int? {
  let arguments = CommandLine.arguments
  return arguments.firstIndex(of: name).flatMap {
    $0 + 1 < arguments.count ? Int(arguments[$0 + 1]) : nil
  }
}
