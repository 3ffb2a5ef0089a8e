import SluiceAsync
import SluiceTesting
import Testing

/// An error for failing publishers in tests.
struct TestError: Error, Hashable {
  var code = 1
}

/// A value that is thread-safe by contract but not `Sendable` by type.
typealias Shared<Value> = UncheckedSendable<Value>

/// What an exit test's child process wrote to standard error, as text.
func standardError(of result: ExitTest.Result?) -> String {
  String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
}

/// Waits until `condition` holds, yielding between checks; a safety net of `limit` yields.
func eventually(
  limit: Int = 100_000, isolation: isolated (any Actor)? = #isolation,
  _ condition: () async -> Bool
) async -> Bool {
  for _ in 0..<limit {
    if await condition() { return true }
    await Task.yield()
  }
  return await condition()
}
