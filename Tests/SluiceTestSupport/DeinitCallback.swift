import Foundation

/// A value whose `deinit` runs a closure: an app's resource that closes, cancels or reports when
/// it goes. Tests send it through the library to check that the library never lets go of it
/// while holding a lock of its own (the closure calls back into the same object).
package final class DeinitCallback: @unchecked Sendable {
  // Safety: `onDeinit` and `id` are set in `init` and never changed.
  package let onDeinit: () -> Void
  package let id: Int

  package init(_ id: Int = 0, onDeinit: @escaping () -> Void) {
    self.id = id
    self.onDeinit = onDeinit
  }

  deinit { onDeinit() }
}

/// Exits the process with status 3 (and "a call never returned" on standard error) unless
/// `body`, run on a thread of its own, returns within `seconds`: for exit tests of code that
/// could hang.
package func exitUnlessReturns(
  within seconds: Double = 20, _ body: @escaping @Sendable () -> Void
) {
  let done = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    body()
    done.signal()
  }
  if done.wait(timeout: .now() + seconds) == .timedOut {
    FileHandle.standardError.write(Data("a call never returned\n".utf8))
    exit(3)
  }
}
