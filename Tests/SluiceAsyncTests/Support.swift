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

/// Waits until `condition` holds, yielding between checks (then sleeping a millisecond, once it
/// has yielded a while), and returns whether it held before `timeout` — a deadline against hangs
/// only. (It used to give up after a number of yields: on a loaded machine those can all pass
/// before the thread that does the awaited work gets a core.)
func eventually(
  timeout: Duration = .seconds(900), isolation: isolated (any Actor)? = #isolation,
  _ condition: () async -> Bool
) async -> Bool {
  let clock = ContinuousClock()
  let deadline = clock.now.advanced(by: timeout)
  var checks = 0
  while clock.now < deadline {
    if await condition() { return true }
    checks += 1
    if checks < 1_000 {
      await Task.yield()
    } else {
      try? await Task.sleep(for: .milliseconds(1))
    }
  }
  return await condition()
}
