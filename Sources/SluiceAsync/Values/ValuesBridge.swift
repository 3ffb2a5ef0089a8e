/// The subscriber behind ``AsyncPublisher``: turns the consumer's pace into demand and hands
/// values to the waiting tasks, oldest first (one iterator may be shared by several tasks).
///
/// **Demand**: by its ``AsyncBufferingPolicy``. **Ordering**: values reach the consumer in the
/// order the publisher sent them. **Cancellation**: `cancel()` (the consuming task was cancelled,
/// or the iterator was dropped) cancels the upstream subscription at once, releases it and the
/// buffer, and ends a waiting `next()` with `nil`. A consumer never waits on a lock: the lock
/// only guards the state machine, and continuations are resumed after unlocking.
@usableFromInline
final class ValuesBridge<Output, Failure: Error>: Subscriber, Cancellable, CustomReflectable,
  @unchecked Sendable
{
  // Safety: all mutable state is in `state`'s lock; the subscription is called and
  // continuations are resumed after unlocking. A value moves from the publisher's thread to
  // exactly one consumer and the bridge keeps no reference to it: an ownership transfer, which
  // is what `UncheckedSendable` carries across the continuation.
  @usableFromInline typealias Input = Output
  @usableFromInline typealias State = ValuesState<Output, Failure>

  @usableFromInline let state: Lock<State>

  @inlinable init(policy: AsyncBufferingPolicy) {
    state = Lock(State(policy: policy))
  }

  // MARK: Subscriber

  @inlinable func receive(subscription: any Subscription) {
    switch state.withLock({ $0.receivedSubscription(subscription) }) {
    case .request(let subscription, let demand): subscription.request(demand)
    case .cancel(let subscription): subscription.cancel()
    case .none: break
    }
  }

  @inlinable func receive(_ input: Output) -> Subscribers.Demand {
    switch state.withLock({ $0.receivedValue(input) }) {
    case .resume(let waiter, let value, let demand):
      waiter.resume(returning: UncheckedSendable(.value(value)))
      return demand
    case .evicted(let value):
      withExtendedLifetime(value) {}
      return .none
    case .none:
      return .none
    }
  }

  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    if let ended = state.withLock({ $0.receivedCompletion(completion) }) {
      ended.first.resume(returning: UncheckedSendable(ended.next))
      Self.end(ended.others)
    }
  }

  // MARK: Consumer

  /// The next value, `nil` at the end, or the publisher's failure.
  @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Output? {
    switch state.withLock({ $0.consumed() }) {
    case .value(let value, let topUp):
      if let (subscription, demand) = topUp { subscription.request(demand) }
      return value
    case .end(let completion):
      return try Self.unwrap(State.next(for: completion))
    case .mustWait:
      return try await wait(isolation: actor)
    }
  }

  @inlinable func wait(isolation actor: isolated (any Actor)?) async throws(Failure) -> Output? {
    let next = await withTaskCancellationHandler {
      await withUnsafeContinuation(isolation: actor) { (waiter: State.Waiter) in
        switch state.withLock({ $0.waiting(waiter) }) {
        case .resume(let waiter, let next, let topUp):
          waiter.resume(returning: UncheckedSendable(next))
          if let (subscription, demand) = topUp { subscription.request(demand) }
        case .request(let subscription, let demand):
          subscription.request(demand)
        case .parked:
          break
        }
      }
    } onCancel: {
      self.cancel()
    }
    return try Self.unwrap(next.value)
  }

  @inlinable static func unwrap(_ next: State.Next) throws(Failure) -> Output? {
    switch next {
    case .value(let value): return value
    case .end: return nil
    case .failure(let error): throw error
    }
  }

  /// Cancels the upstream and ends every waiting consumer. Idempotent and thread-safe.
  @inlinable func cancel() {
    let (upstream, waiters, buffer, phase) = state.withLock { $0.cancelled() }
    upstream?.cancel()
    Self.end(waiters)
    withExtendedLifetime((buffer, phase)) {}
  }

  /// Resumes every waiter in `waiters` with the end (`nil`), oldest first.
  @inlinable static func end(_ waiters: RingBuffer<State.Waiter>) {
    var waiters = waiters
    while let waiter = waiters.popFirst() { waiter.resume(returning: UncheckedSendable(.end)) }
  }

  /// What the bridge holds, for debuggers and tests: consumers waiting, values buffered, and
  /// (`demandOne`, before the subscription) the demand waiting to be requested.
  @usableFromInline var customMirror: Mirror {
    let (waiting, buffered, pending) = state.withLock {
      ($0.waiters.count, $0.buffer.count, $0.pendingDemand)
    }
    let children: [Mirror.Child] = [
      ("waiting", waiting), ("buffered", buffered), ("pendingDemand", pending),
    ]
    return Mirror(self, children: children)
  }
}
