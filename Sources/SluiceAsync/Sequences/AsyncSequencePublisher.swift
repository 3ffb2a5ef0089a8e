/// A publisher that delivers the elements of an async sequence, pulled by a `Task` as the
/// subscriber demands them.
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

  public func receive<S: Subscriber>(subscriber: S)
  where S.Input == Output, S.Failure == Failure {
    subscriber.receive(
      subscription: AsyncSequenceSubscription(
        base: base, priority: priority, downstream: subscriber)
    )
  }
}

extension AsyncSequence where Self: Sendable {
  /// A publisher of this sequence's elements, pulled by a task as the subscriber demands them.
  public var publisher: AsyncSequencePublisher<Self> {
    AsyncSequencePublisher(self)
  }

  /// A publisher of this sequence's elements, pulled by a task of `priority`.
  public func publisher(priority: TaskPriority?) -> AsyncSequencePublisher<Self> {
    AsyncSequencePublisher(self, priority: priority)
  }
}

/// The subscription of ``AsyncSequencePublisher``; see ``PullState`` for its states.
final class AsyncSequenceSubscription<Base: AsyncSequence & Sendable, Downstream: Subscriber>:
  Subscription, PullingTask, CustomStringConvertible, @unchecked Sendable
where Downstream.Input == Base.Element, Downstream.Failure == Base.Failure {
  // Safety: all mutable state is in `state`'s lock; the subscriber is called only from the one
  // pulling task, after unlocking; continuations are resumed after unlocking.
  private let state: Lock<PullState<Downstream>>
  private let base: Base
  private let priority: TaskPriority?

  init(base: Base, priority: TaskPriority?, downstream: Downstream) {
    self.base = base
    self.priority = priority
    state = Lock(PullState(downstream: downstream))
  }

  func request(_ demand: Subscribers.Demand) {
    if demand == .none { AsyncViolation.zeroDemand(description) }
    switch state.withLock({ $0.requested(demand) }) {
    case .start:
      let puller: any PullingTask = self  // erases `Downstream`, whose metatype is not Sendable
      let task = Task(priority: priority) { await puller.pull() }
      state.withLock { $0.taskStarted(task) }?.cancel()
    case .resume(let parked):
      parked.resume(returning: true)
    case .none:
      break
    }
  }

  func cancel() {
    let (downstream, task, parked) = state.withLock { $0.cancelled() }
    task?.cancel()
    parked?.resume(returning: false)
    withExtendedLifetime(downstream) {}
  }

  func pull() async {
    var iterator = base.makeAsyncIterator()
    while await mayPull() {
      let element: Base.Element?
      do {
        element = try await iterator.next(isolation: nil)
      } catch {
        state.withLock { $0.finishing() }?.receive(completion: .failure(error))
        return
      }
      guard let element else {
        state.withLock { $0.finishing() }?.receive(completion: .finished)
        return
      }
      guard let downstream = state.withLock({ $0.willDeliver() }) else { return }
      let more = downstream.receive(element)
      if more > 0 { state.withLock { $0.returned(more) } }
    }
  }

  /// Takes one unit of demand, parking until there is some; `false` once cancelled.
  private func mayPull() async -> Bool {
    switch state.withLock({ $0.nextPull() }) {
    case .pull: return true
    case .stop: return false
    case .park:
      return await withUnsafeContinuation { continuation in
        if let (continuation, proceed) = state.withLock({ $0.parking(continuation) }) {
          continuation.resume(returning: proceed)
        }
      }
    }
  }

  var description: String { "AsyncSequence" }
}

/// The body of a pulling task, seen without the subscriber's type.
protocol PullingTask: Sendable {
  func pull() async
}
