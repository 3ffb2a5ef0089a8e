/// A publisher that delivers the elements of an async sequence, pulled by a `Task` as the
/// subscriber demands them.
///
/// ![Marble diagram of asyncSequence-publisher, drawn from a run](asyncSequence-publisher)
///
/// **Demand**: nothing runs until the first request; each `request(n)` lets the task pull up to
/// `n` more elements (so `.max(3)` then `.max(2)` pulls exactly 5); demand returned from
/// `receive(_:)` counts; at zero demand the task parks on a continuation, without spinning.
/// `request(.none)` traps. **Ordering**: the sequence's; all signals come from the one task.
/// **Cancellation**: `cancel()` cancels the task (a sequence that honours cancellation stops
/// pulling), unparks it, and releases the subscriber at once; nothing is delivered afterwards.
/// **Failure**: the sequence's own `Failure` (`Never` for `AsyncStream`).
///
/// Each subscriber gets its own iteration of the sequence.
///
/// `values` of this publisher, when `Base` is an `AsyncStream` or `AsyncThrowingStream` made
/// with a continuation (not `init(unfolding:)`) and the policy is
/// ``AsyncBufferingPolicy/demandOne``, reads the stream from the consuming task, with no second
/// task (see ``AsyncPublisher/Iterator``); `priority` is then the consuming task's.
///
/// ```swift
/// let (stream, continuation) = AsyncStream<Int>.makeStream()
/// let cancellable = stream.publisher.sink { print($0) }
/// continuation.yield(1)   // prints "1" (from the pulling task)
/// ```
public struct AsyncSequencePublisher<Base: AsyncSequence & Sendable>: Publisher, Sendable {
  public typealias Output = Base.Element
  public typealias Failure = Base.Failure

  /// The sequence whose elements are published.
  public let base: Base
  /// The priority of the task that pulls the elements.
  public let priority: TaskPriority?

  /// Creates a publisher of `base`'s elements, pulled by a task of `priority`.
  public init(_ base: Base, priority: TaskPriority? = nil) {
    self.base = base
    self.priority = priority
  }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S)
  where S.Input == Output, S.Failure == Failure {
    TaskDrivenSubscription.attach(
      subscriber, description: "AsyncSequence", priority: priority,
      body: { [base] feed in await Self.pull(base, into: feed) })
  }

  /// The task's body: one pull per unit of demand, until the end, a failure or cancellation.
  @inlinable
  static func pull(_ base: Base, into feed: any ValueFeed<Output, Failure>) async {
    var iterator = base.makeAsyncIterator()
    while await feed.takeDemand() {
      do {
        guard let element = try await iterator.next(isolation: nil) else {
          feed.finish(.finished)
          return
        }
        guard feed.deliver(element) else { return }
      } catch {
        feed.finish(.failure(error))
        return
      }
    }
  }
}

extension AsyncSequence where Self: Sendable {
  /// A publisher of this sequence's elements, pulled by a task as the subscriber demands them.
  ///
  /// ![Marble diagram of asyncSequence-publisher, drawn from a run](asyncSequence-publisher)
  public var publisher: AsyncSequencePublisher<Self> {
    AsyncSequencePublisher(self)
  }

  /// A publisher of this sequence's elements, pulled by a task of `priority`.
  ///
  /// ![Marble diagram of asyncSequence-publisher, drawn from a run](asyncSequence-publisher)
  public func publisher(priority: TaskPriority?) -> AsyncSequencePublisher<Self> {
    AsyncSequencePublisher(self, priority: priority)
  }
}
