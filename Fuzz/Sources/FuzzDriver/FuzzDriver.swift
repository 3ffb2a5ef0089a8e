internal import CLibFuzzer
internal import Foundation

/// A fuzz target: libFuzzer calls it with each input it makes (`LLVMFuzzerTestOneInput`'s
/// signature). It returns 0; a broken property crashes it (``propertyFailed(_:)``), and
/// libFuzzer keeps the input that did.
public typealias FuzzTarget = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

/// Runs libFuzzer on `target` with this process's command line (corpus directories, `-runs=`,
/// `-max_total_time=`, …) and exits with its status.
///
/// Each target is an executable whose `main` calls this, and which also exports `target` as
/// `LLVMFuzzerTestOneInput` (`@_cdecl`), the name other libFuzzer drivers look for.
public func runFuzzer(_ target: FuzzTarget) -> Never {
  var argc = CommandLine.argc
  var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
  exit(LLVMFuzzerRunDriver(&argc, &argv, target))
}

/// The bytes of an input libFuzzer passed to a target.
public func fuzzInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> UnsafeBufferPointer<UInt8> {
  UnsafeBufferPointer(start: count > 0 ? data : nil, count: count)
}

/// Reports a broken property on standard error and crashes, so that libFuzzer keeps the input
/// (in the directory `-artifact_prefix=` names) for a regression test.
public func propertyFailed(_ message: @autoclosure () -> String) -> Never {
  FileHandle.standardError.write(Data("\nPROPERTY FAILED: \(message())\n".utf8))
  abort()
}

/// Checks a property of the input; see ``propertyFailed(_:)``.
public func require(_ condition: Bool, _ message: @autoclosure () -> String) {
  if !condition { propertyFailed(message()) }
}

/// Reads an input from the front: bytes, integers, choices. Reading past the end gives zeros,
/// so every input is valid and a short one means the smallest choices.
public struct FuzzReader {
  private var bytes: Slice<UnsafeBufferPointer<UInt8>>

  /// A reader of `bytes`.
  public init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes[...] }

  /// Whether every byte was read.
  public var isAtEnd: Bool { bytes.isEmpty }

  /// The next byte, or 0 at the end.
  public mutating func byte() -> UInt8 { bytes.popFirst() ?? 0 }

  /// A number in `0..<count` (`count` > 0) from the next byte.
  public mutating func choice(_ count: Int) -> Int { Int(byte()) % count }

  /// An `Int` from the next eight bytes, little-endian (zeros past the end).
  public mutating func int() -> Int {
    var value: UInt64 = 0
    for shift in stride(from: 0, to: 64, by: 8) { value |= UInt64(byte()) << UInt64(shift) }
    return Int(truncatingIfNeeded: value)
  }

  /// The bytes not read yet.
  public mutating func rest() -> [UInt8] {
    defer { bytes = bytes[bytes.endIndex...] }
    return Array(bytes)
  }
}
