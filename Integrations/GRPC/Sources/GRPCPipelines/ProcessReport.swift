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

/// Ends this process as soon as its standard input reaches its end: a process started by a
/// test, which holds the other end of that pipe, then dies with the test even when the test
/// crashed (a server left behind would keep `swift test` waiting for the end of the output
/// it shares). Reads on a thread of its own; `_exit`, so that nothing of the process's
/// teardown runs meanwhile on other threads.
public func exitWhenStandardInputCloses() {
  let watcher = Thread {
    var byte: UInt8 = 0
    while true {
      let count = read(0, &byte, 1)
      if count == 0 || (count < 0 && errno != EINTR) { _exit(0) }
    }
  }
  watcher.start()
}
