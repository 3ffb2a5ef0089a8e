/// Waits until `task` ended, and cancels it if it has not within `timeout`.
///
/// A server's or a client's task is ended so after its graceful shutdown rather than cancelled
/// at once: cancelling a grpc-swift-nio-transport server while it accepts a connection or a
/// stream can drop a `NIOAsyncChannel` unfinished, and swift-nio traps ("Deinited
/// NIOAsyncWriter without calling finish()", apple/swift-nio#2637).
public func awaitEnd<Success: Sendable>(
  of task: Task<Success, any Error>, within timeout: Duration
) async {
  let timer = Task {
    guard (try? await Task.sleep(for: timeout)) != nil else { return }
    task.cancel()
  }
  _ = await task.result
  timer.cancel()
}
