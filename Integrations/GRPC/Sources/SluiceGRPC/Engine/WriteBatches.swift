import Sluice

/// The subscriber between a publisher and an RPC's write loop: it asks the publisher for
/// `prefetch` values, and hands the loop everything that arrived since its last batch (see
/// ``WriteBatchState`` for why batches, and the table of events).
///
/// **Demand**: `prefetch` at the subscription, then, for each batch the writer accepted, as
/// many as it held: requested + buffered + being written ≤ `prefetch`; a value beyond that
/// cancels the publisher and ends the RPC with `.internalError` (``WriteBatchState``). **Ordering**: the
/// publisher's; a batch is what arrived in order since the last one. **Cancellation**:
/// ``cancel()`` (the loop ended for any reason: it was cancelled, the writer failed, the RPC
/// was cancelled) cancels the publisher, releases the buffer and ends a parked writer; it is
/// idempotent and thread-safe. The writer never waits on the lock: it only guards the state
/// machine; continuations are resumed and the subscription is called after unlocking.
@usableFromInline
final class WriteBatches<Output: Sendable, Failure: Error>: Subscriber, Cancellable,
  @unchecked Sendable
{
  // Safety: all mutable state is in `state`'s lock; the subscription is called and the
  // writer's continuation resumed after unlocking. Values are `Sendable`.
  @usableFromInline typealias Input = Output
  @usableFromInline typealias State = WriteBatchState<Output, Failure>

  @usableFromInline let state: StateLock<State>

  @inlinable init(prefetch: Int) {
    if prefetch < 1 { GRPCViolation.prefetch(prefetch) }
    state = StateLock(State(prefetch: prefetch))
  }

  // MARK: Subscriber

  @inlinable func receive(subscription: any Subscription) {
    switch state.withLock({ $0.receivedSubscription(subscription) }) {
    case .request(let subscription, let demand): subscription.request(demand)
    case .cancel(let subscription): subscription.cancel()
    }
  }

  @inlinable func receive(_ input: Output) -> Subscribers.Demand {
    switch state.withLock({ $0.receivedValue(input) }) {
    case .none:
      break
    case .resume(let writer):
      writer.resume(returning: UncheckedBox(.values([input])))
    case .violated(let upstream, let writer):
      upstream?.cancel()
      writer?.resume(returning: UncheckedBox(.overDemand))
    }
    return .none
  }

  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    state.withLock { $0.receivedCompletion(completion) }?.resume(
      returning: UncheckedBox(.end(completion)))
  }

  // MARK: Writer

  /// The values that arrived since the last batch (waiting for one if none did), or the end:
  /// the publisher's completion, or `nil` when cancelled. The calling task's cancellation
  /// cancels the subscription.
  @inlinable func nextBatch() async -> State.Next {
    if case .take(let next) = state.withLock({ $0.nextBatch(nil) }) { return next }
    return await withTaskCancellationHandler {
      await withUnsafeContinuation { (writer: State.Writer) in
        if case .take(let next) = state.withLock({ $0.nextBatch(writer) }) {
          writer.resume(returning: UncheckedBox(next))
        }
      }.value
    } onCancel: {
      self.cancel()
    }
  }

  /// The writer accepted `count` values: asks for as many more.
  @inlinable func written(_ count: Int) {
    if let (subscription, demand) = state.withLock({ $0.written(count) }) {
      subscription.request(demand)
    }
  }

  /// Cancels the publisher and ends a parked writer. Idempotent and thread-safe.
  @inlinable func cancel() {
    let (upstream, writer, buffer) = state.withLock { $0.cancelled() }
    upstream?.cancel()
    writer?.resume(returning: UncheckedBox(.end(nil)))
    withExtendedLifetime(buffer) {}
  }
}
