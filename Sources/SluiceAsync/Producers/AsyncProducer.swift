/// A publisher whose values come from an async producer closure that `send`s them, suspending
/// while the subscriber has no demand: a producer loop gets backpressure for free (like
/// kotlinx-coroutines' `publish {}`).
///
/// ![Marble diagram of asyncProducer, drawn from a run](asyncProducer)
///
/// The closure runs in a `Task`, once per subscriber, starting on the subscriber's first
/// request. Returning from it finishes the publisher; throwing fails it with the closure's own
/// error type.
///
/// **Demand**: each `send` takes one unit of demand and suspends (parked, not spinning) while
/// there is none, so the producer never runs ahead of the subscriber. **Ordering**: the order
/// of the `send`s; `send` may be called from several tasks at once (child tasks of the
/// producer): they take turns, first come first served, and deliveries never overlap.
/// **Cancellation**: cancelling the subscription cancels the task; a `send` then returns `false`
/// at once without delivering, and cancellation-aware code in the closure (sleeps,
/// `Task.checkCancellation()`) stops.
///
/// ```swift
/// let ticks = AsyncProducer<Int, Never> { producer in
///   for tick in 0... {
///     guard await producer.send(tick) else { return }   // waits for demand
///   }
/// }
/// ```
public struct AsyncProducer<Output, Failure: Error>: Publisher, Sendable {
  /// The producer closure, run once per subscriber.
  public let produce: @Sendable (Sender) async throws(Failure) -> Void
  /// The priority of the task that runs it.
  public let priority: TaskPriority?

  /// Creates a publisher whose values `produce` sends, in a task of `priority`.
  public init(
    priority: TaskPriority? = nil,
    _ produce: @escaping @Sendable (Sender) async throws(Failure) -> Void
  ) {
    self.priority = priority
    self.produce = produce
  }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S)
  where S.Input == Output, S.Failure == Failure {
    TaskDrivenSubscription.attach(
      subscriber, description: "AsyncProducer", priority: priority,
      body: { [produce] feed in
        do throws(Failure) {
          try await produce(Sender(feed))
          feed.finish(.finished)
        } catch {
          feed.finish(.failure(error))
        }
      })
  }

  /// What the producer closure sends its values with.
  public struct Sender: Sendable {
    @usableFromInline let feed: any ValueFeed<Output, Failure>
    @usableFromInline let turns = AsyncTurns()

    @inlinable
    init(_ feed: any ValueFeed<Output, Failure>) {
      self.feed = feed
    }

    /// Sends `value` once the subscriber has demand for it, suspending until then.
    ///
    /// - Returns: `true` if it was delivered; `false` if the subscription was cancelled (the
    ///   producer should stop).
    @inlinable @discardableResult
    public func send(_ value: Output) async -> Bool {
      await turns.begin()
      defer { turns.end() }
      guard await feed.takeDemand() else { return false }
      return feed.deliver(value)
    }
  }
}
