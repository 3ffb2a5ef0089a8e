/// A publisher that eventually produces a single value and then finishes or fails, as in
/// Combine.
///
/// ![Marble diagram: Future { promise in … promise(.success("a")) }](future)
///
/// The closure runs once, at once, when the future is created; the first call of its promise
/// wins and later calls are ignored. Every subscriber, before or after fulfilment, receives the
/// same result.
///
/// **Demand**: a success is delivered (followed by `.finished`) once the subscriber has requested
/// at least one value; a failure is delivered without demand. `request(.none)` traps.
/// **Cancellation**: a cancelled subscriber is released at once and receives nothing.
/// The promise may be called from any thread.
///
/// ```swift
/// let answer = Future<Int, Never> { promise in promise(.success(42)) }
/// _ = answer.sink { print($0) }   // prints "42"
/// ```
public final class Future<Output, Failure: Error>: Publisher, @unchecked Sendable {
  // Safety: all mutable state is in `state`'s lock; subscribers are called after unlocking.

  /// The closure type a future passes to its producer. It may be called from any thread.
  public typealias Promise = @Sendable (Result<Output, Failure>) -> Void

  private struct State {
    var result: Result<Output, Failure>?
    var waiting: [any FutureWaiter<Output, Failure>] = []
  }

  private let state = Lock(State())

  /// Creates a future that calls `attemptToFulfill` at once with its promise.
  public init(_ attemptToFulfill: @escaping (@escaping Promise) -> Void) {
    attemptToFulfill { [weak self] result in self?.fulfil(result) }
  }

  public func receive<S: Subscriber>(subscriber: S)
  where Output == S.Input, Failure == S.Failure {
    let subscription = FutureSubscription(future: self, downstream: subscriber)
    let result = state.withLock { state -> Result<Output, Failure>? in
      if state.result == nil { state.waiting.append(subscription) }
      return state.result
    }
    subscriber.receive(subscription: subscription)
    subscription.subscribed(result)
  }

  private func fulfil(_ result: Result<Output, Failure>) {
    let waiting = state.withLock { state -> [any FutureWaiter<Output, Failure>] in
      guard state.result == nil else { return [] }
      state.result = result
      defer { state.waiting = [] }
      return state.waiting
    }
    for waiter in waiting { waiter.fulfilled(with: result) }
  }

  fileprivate func forget(_ waiter: AnyObject) {
    let removed = state.withLock { state -> (any FutureWaiter<Output, Failure>)? in
      guard let index = state.waiting.firstIndex(where: { $0 === waiter }) else { return nil }
      return state.waiting.remove(at: index)
    }
    withExtendedLifetime(removed) {}
  }
}

private protocol FutureWaiter<Output, Failure>: AnyObject {
  associatedtype Output
  associatedtype Failure: Error
  func fulfilled(with result: Result<Output, Failure>)
}

/// States: `subscribing` (until the subscriber's `receive(subscription:)` returns: a promise
/// fulfilled on another thread meanwhile waits) → `waiting(demand?, result?)` → `delivering` once
/// both a result and (for a success) demand are there → `terminal` after the completion, or on
/// cancel. Exactly one thread performs the delivery, never during `receive(subscription:)`; a
/// `cancel()` while it delivers the value suppresses the completion.
private final class FutureSubscription<Downstream: Subscriber>: Subscription, FutureWaiter,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
{
  // Safety: all mutable state is in `state`'s lock; the subscriber is called after unlocking.
  typealias Output = Downstream.Input
  typealias Failure = Downstream.Failure

  private struct State {
    /// `nil` once terminal (completed or cancelled).
    var downstream: Downstream?
    var future: Future<Output, Failure>?
    var hasDemand = false
    var result: Result<Output, Failure>?
    /// The subscriber's `receive(subscription:)` has returned: deliveries may start.
    var subscribed = false
    /// A thread is delivering the value; the completion follows unless cancelled meanwhile.
    var delivering = false

    /// The delivery to perform once a result and (for a success) demand are both present.
    /// The future and the downstream stay until the delivery is over (the mirror shows them).
    mutating func takeDelivery() -> (Downstream, Result<Output, Failure>)? {
      guard subscribed, !delivering, let downstream, let result else { return nil }
      if case .success = result, !hasDemand { return nil }
      delivering = true
      return (downstream, result)
    }

    /// The delivery is over: what to release.
    mutating func ended() -> (Downstream?, Future<Output, Failure>?) {
      defer {
        downstream = nil
        future = nil
      }
      return (downstream, future)
    }
  }

  private let state: Lock<State>

  init(future: Future<Output, Failure>, downstream: Downstream) {
    state = Lock(State(downstream: downstream, future: future))
  }

  /// The subscriber's `receive(subscription:)` returned; `result`: the future's, if it was
  /// fulfilled before this subscription was made.
  func subscribed(_ result: Result<Output, Failure>?) {
    deliver(
      state.withLock { state in
        state.subscribed = true
        if let result { state.result = result }
        return state.takeDelivery()
      })
  }

  func fulfilled(with result: Result<Output, Failure>) {
    deliver(
      state.withLock { state in
        state.result = result
        return state.takeDelivery()
      })
  }

  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: "Future")
    deliver(
      state.withLock { state in
        state.hasDemand = true
        return state.takeDelivery()
      })
  }

  func cancel() {
    let released = state.withLock { state in
      defer {
        state.downstream = nil
        state.future = nil
      }
      return (state.downstream, state.future)
    }
    released.1?.forget(self)
  }

  private func deliver(_ delivery: (Downstream, Result<Output, Failure>)?) {
    guard let (downstream, result) = delivery else { return }
    switch result {
    case .success(let value):
      _ = downstream.receive(value)
      // A cancel() during the value (it forgets the downstream) suppresses the completion.
      state.withLock { $0.downstream }?.receive(completion: .finished)
    case .failure(let error):
      downstream.receive(completion: .failure(error))
    }
    withExtendedLifetime(state.withLock { $0.ended() }) {}
  }

  var description: String { "Future" }
  /// Combine's children; `parent`, `downstream` and `subject` read nil once it has ended.
  var customMirror: Mirror {
    let (future, downstream, hasDemand) = state.withLock {
      ($0.future, $0.downstream, $0.hasDemand)
    }
    return Mirror(
      self,
      children: [
        ("parent", future as Any), ("downstream", downstream as Any),
        ("hasAnyDemand", hasDemand), ("subject", future as Any),
      ])
  }
  var playgroundDescription: Any { description }
}
