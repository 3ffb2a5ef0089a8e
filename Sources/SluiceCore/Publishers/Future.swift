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
/// **Cost.** Subscribing is specialised where it is called (no runtime generic metadata lookups
/// on the way), and a `sink` subscribing to a future already fulfilled gets the result without a
/// subscription object, as from `Just` (see `Subscribers.Sink`): the same signals.
///
/// ```swift
/// let answer = Future<Int, Never> { promise in promise(.success(42)) }
/// _ = answer.sink { print($0) }   // prints "42"
/// ```
public final class Future<Output, Failure: Error>: Publisher, @unchecked Sendable {
  // Safety: all mutable state is in `state`'s lock; subscribers are called after unlocking.

  /// The closure type a future passes to its producer. It may be called from any thread.
  public typealias Promise = @Sendable (Result<Output, Failure>) -> Void

  @usableFromInline struct State {
    @usableFromInline var result: Result<Output, Failure>?
    /// The subscriptions made before the result, to deliver it to.
    @usableFromInline var waiting: [FutureWaiter<Output, Failure>] = []

    @inlinable init() {}
  }

  @usableFromInline let state = Lock(State())

  /// Creates a future that calls `attemptToFulfill` at once with its promise.
  @inlinable
  public init(_ attemptToFulfill: @escaping (@escaping Promise) -> Void) {
    attemptToFulfill { [weak self] result in self?.fulfil(result) }
  }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S)
  where Output == S.Input, Failure == S.Failure {
    if let sink = Subscribers.Sink<Output, Failure>.sink(of: subscriber),
      let result = state.withLock({ $0.result })
    {
      sink.receiveImmediately(result)
      return
    }
    let subscription = FutureSubscription(future: self, downstream: subscriber)
    let result = state.withLock { state -> Result<Output, Failure>? in
      if state.result == nil { state.waiting.append(subscription) }
      return state.result
    }
    subscriber.receive(subscription: subscription)
    subscription.subscribed(result)
  }

  @inlinable
  func fulfil(_ result: Result<Output, Failure>) {
    let waiting = state.withLock { state -> [FutureWaiter<Output, Failure>] in
      guard state.result == nil else { return [] }
      state.result = result
      defer { state.waiting = [] }
      return state.waiting
    }
    for waiter in waiting { waiter.fulfilled(waiter, result) }
  }

  @usableFromInline
  func forget(_ waiter: AnyObject) {
    let removed = state.withLock { state -> FutureWaiter<Output, Failure>? in
      guard let index = state.waiting.firstIndex(where: { $0 === waiter }) else { return nil }
      return state.waiting.remove(at: index)
    }
    withExtendedLifetime(removed) {}
  }
}

/// A subscription waiting for its future's result, whatever its subscriber's type: the function
/// that takes the result is made where the subscription was, in code specialised for its type
/// (the pattern of ``AnyConduit``). ``FutureSubscription`` is the only subclass.
@usableFromInline
class FutureWaiter<Output, Failure: Error>: @unchecked Sendable {
  // Safety: immutable.
  /// ``FutureSubscription/fulfilled(with:)`` for this subscription (passed in).
  @usableFromInline let fulfilled: (FutureWaiter, Result<Output, Failure>) -> Void

  @inlinable
  init(fulfilled: @escaping (FutureWaiter, Result<Output, Failure>) -> Void) {
    self.fulfilled = fulfilled
  }
}

/// States: `subscribing` (until the subscriber's `receive(subscription:)` returns: a promise
/// fulfilled on another thread meanwhile waits) → `waiting(demand?, result?)` → `delivering` once
/// both a result and (for a success) demand are there → `terminal` after the completion, or on
/// cancel. Exactly one thread performs the delivery, never during `receive(subscription:)`; a
/// `cancel()` while it delivers the value suppresses the completion.
///
/// `request` and `cancel` reach code specialised where the subscription was made through stored
/// functions (a subscriber calls them through `any Subscription`, whose generic witnesses only
/// forward), as ``SingleValueSubscription`` does.
@usableFromInline
final class FutureSubscription<Downstream: Subscriber>:
  FutureWaiter<Downstream.Input, Downstream.Failure>, Subscription, CustomStringConvertible,
  CustomReflectable, CustomPlaygroundDisplayConvertible, @unchecked Sendable
{
  // Safety: all mutable state is in `state`'s lock; the subscriber is called after unlocking.
  @usableFromInline typealias Output = Downstream.Input
  @usableFromInline typealias Failure = Downstream.Failure

  @usableFromInline struct State {
    /// `nil` once terminal (completed or cancelled).
    @usableFromInline var downstream: Downstream?
    @usableFromInline var future: Future<Output, Failure>?
    @usableFromInline var hasDemand = false
    @usableFromInline var result: Result<Output, Failure>?
    /// The subscriber's `receive(subscription:)` has returned: deliveries may start.
    @usableFromInline var subscribed = false
    /// A thread is delivering the value; the completion follows unless cancelled meanwhile.
    @usableFromInline var delivering = false

    @inlinable init(downstream: Downstream, future: Future<Output, Failure>) {
      self.downstream = downstream
      self.future = future
    }

    /// The delivery to perform once a result and (for a success) demand are both present.
    /// The future and the downstream stay until the delivery is over (the mirror shows them).
    @inlinable
    mutating func takeDelivery() -> (Downstream, Result<Output, Failure>)? {
      guard subscribed, !delivering, let downstream, let result else { return nil }
      if case .success = result, !hasDemand { return nil }
      delivering = true
      return (downstream, result)
    }

    /// The delivery is over, or the subscription cancelled: what to release.
    @inlinable
    mutating func ended() -> (Downstream?, Future<Output, Failure>?) {
      defer {
        downstream = nil
        future = nil
      }
      return (downstream, future)
    }
  }

  @usableFromInline let state: Lock<State>
  /// ``requestSpecialized(_:)`` and ``cancelSpecialized()`` as compiled where this
  /// subscription was made.
  @usableFromInline let specializedRequest: (FutureSubscription, Subscribers.Demand) -> Void
  @usableFromInline let specializedCancel: (FutureSubscription) -> Void

  @inlinable
  init(future: Future<Output, Failure>, downstream: Downstream) {
    state = Lock(State(downstream: downstream, future: future))
    // Non-capturing, so made without a context here, where the types are known.
    specializedRequest = { $0.requestSpecialized($1) }
    specializedCancel = { $0.cancelSpecialized() }
    super.init(fulfilled: {
      unsafeDowncast($0, to: FutureSubscription.self).fulfilled(with: $1)
    })
  }

  /// The subscriber's `receive(subscription:)` returned; `result`: the future's, if it was
  /// fulfilled before this subscription was made.
  @inlinable
  func subscribed(_ result: Result<Output, Failure>?) {
    deliver(
      state.withLock { state in
        state.subscribed = true
        if let result { state.result = result }
        return state.takeDelivery()
      })
  }

  @inlinable
  func fulfilled(with result: Result<Output, Failure>) {
    deliver(
      state.withLock { state in
        state.result = result
        return state.takeDelivery()
      })
  }

  @inlinable
  func request(_ demand: Subscribers.Demand) { specializedRequest(self, demand) }

  @inlinable
  func requestSpecialized(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: "Future")
    deliver(
      state.withLock { state in
        state.hasDemand = true
        return state.takeDelivery()
      })
  }

  @inlinable
  func cancel() { specializedCancel(self) }

  @inlinable
  func cancelSpecialized() {
    let released = state.withLock { $0.ended() }
    released.1?.forget(self)
  }

  @inlinable
  func deliver(_ delivery: (Downstream, Result<Output, Failure>)?) {
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

  @usableFromInline var description: String { "Future" }
  /// Combine's children; `parent`, `downstream` and `subject` read nil once it has ended.
  @usableFromInline var customMirror: Mirror {
    let (future, downstream, hasDemand) = state.withLock {
      ($0.future, $0.downstream, $0.hasDemand)
    }
    // (The base class's stored function is internal: no ancestor in the mirror, as before.)
    return Mirror(
      self,
      children: [
        ("parent", future as Any), ("downstream", downstream as Any),
        ("hasAnyDemand", hasDemand), ("subject", future as Any),
      ], ancestorRepresentation: .suppressed)
  }
  @usableFromInline var playgroundDescription: Any { description }
}
