/// A publisher that runs an async closure when a subscriber first asks for a value, and
/// publishes its result: the lazy, cancellable, async counterpart of `Future`.
///
/// ![Marble diagram: AsyncFuture { await load() }   // load takes 2 ticks](asyncFuture)
///
/// Unlike `Future` (which runs its closure at once, when created, and shares the result), an
/// `AsyncFuture` runs the closure for each subscriber, in a `Task`, on the subscriber's first
/// request, and cancels that task when the subscription is cancelled, so the async work stops
/// (if it honours cancellation) and nothing is delivered.
///
/// **Demand**: the closure starts on the first request; its value is followed by `.finished`.
/// `request(.none)` traps. **Failure**: the closure's own error type. **Cancellation**: cancels
/// the task; nothing is delivered afterwards.
///
/// ```swift
/// let user = AsyncFuture { try await api.fetchUser(id: 42) }   // nothing runs yet
/// let cancellable = user.sink(receiveCompletion: { _ in }, receiveValue: { print($0) })
/// ```
public struct AsyncFuture<Output, Failure: Error>: Publisher, Sendable {
  /// The work to run for each subscriber.
  public let operation: @Sendable () async throws(Failure) -> Output
  /// The priority of the task that runs it.
  public let priority: TaskPriority?

  /// Creates a publisher that runs `operation` in a task of `priority` on first demand.
  public init(
    priority: TaskPriority? = nil,
    _ operation: @escaping @Sendable () async throws(Failure) -> Output
  ) {
    self.priority = priority
    self.operation = operation
  }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S)
  where S.Input == Output, S.Failure == Failure {
    TaskDrivenSubscription.attach(
      subscriber, description: "AsyncFuture", priority: priority,
      body: { [operation] feed in
        guard await feed.takeDemand() else { return }
        do throws(Failure) {
          let value = try await operation()
          if feed.deliver(value) { feed.finish(.finished) }
        } catch {
          feed.finish(.failure(error))
        }
      })
  }
}
