import SluiceAsync
import SluiceTesting
import Testing

/// An error for failing publishers in tests.
struct TestError: Error, Hashable {
  var code = 1
}

/// A place for a test to keep a value that closures set.
final class Box<Value>: @unchecked Sendable {
  // Safety: every access goes through the lock.
  private let lock: Lock<Value?>
  init(_ value: Value? = nil) { lock = Lock(value) }
  func set(_ value: Value) { lock.withLock { $0 = value } }
  var value: Value? { lock.withLock { $0 } }
  func update<R>(_ body: (inout Value?) -> R) -> R { lock.withLock(body) }
}

/// A value that is thread-safe by contract but not `Sendable` by type.
typealias Shared<Value> = UncheckedSendable<Value>

/// What an exit test's child process wrote to standard error, as text.
func standardError(of result: ExitTest.Result?) -> String {
  String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
}

/// Waits until `condition` holds, yielding between checks; a safety net of `limit` yields.
func eventually(limit: Int = 100_000, _ condition: () -> Bool) async -> Bool {
  for _ in 0..<limit {
    if condition() { return true }
    await Task.yield()
  }
  return condition()
}
