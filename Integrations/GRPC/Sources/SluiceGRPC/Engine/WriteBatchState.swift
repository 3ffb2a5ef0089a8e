import Sluice

/// The state of a subscriber whose values an RPC's write loop takes in batches, as a pure state
/// machine (performed by ``WriteBatches``).
///
/// Why batches: grpc-swift's writer hands every `write` call to the HTTP/2 stream's event loop
/// as a task of its own and returns before the event loop has run it; an event loop runs every
/// queued task before it reads its socket again. A loop that writes one message per call can
/// queue tasks faster than the event loop runs them (each costs the event loop a flush and a
/// system call), and the event loop then neither reads (a client's reset, `WINDOW_UPDATE`s)
/// nor turns the stream unwritable until it has caught up: the writes queued meanwhile are not
/// bounded by the HTTP/2 window. One `write(contentsOf:)` per batch of what the publisher
/// delivered meanwhile is one task and one flush for the batch, which the event loop runs
/// faster than the publisher and the serializer fill the next one.
///
/// **Demand**: `prefetch` at the subscription; afterwards, demand is given back for the values
/// a batch held once the writer accepted the batch. So requested + buffered + being written
/// never exceed `prefetch`: the writer's suspension (the stream is not writable) stops the
/// demand.
///
/// **A publisher that sends more than it was asked** (it breaks the subscriber rules) is not
/// buffered without bound: at the first value beyond the demand the subscription is
/// cancelled, the values received within the demand are still written, and then the writer
/// ends the RPC with `.internalError` (``Next/overDemand``) — never a crash, never unbounded
/// memory.
///
/// States: `awaitingSubscription` → `subscribed(s)` → `finished(c)` (the publisher completed;
/// buffered values are still taken, then `c`) or `violated` (a value beyond the demand; the
/// buffered values are still taken, then the over-demand end) → `terminal` (the writer took
/// the end, or cancelled).
///
/// Transitions (event → change, action performed after unlocking):
/// | event | awaiting / subscribed | finished | terminal |
/// |---|---|---|---|
/// | `receivedSubscription(s)` | subscribed; request `prefetch` | cancel `s` | cancel `s` |
/// | `receivedValue(v)`, within the demand | a parked writer: resume it with `[v]`; else buffer `v` | ignore | ignore |
/// | `receivedValue(v)`, beyond the demand | violated; cancel upstream; a parked writer: resume it with the over-demand end, terminal | ignore | ignore |
/// | `receivedCompletion(c)` | a parked writer: resume it with `c`, terminal; else finished | ignore | ignore |
/// | `nextBatch(k)` (writer) | the buffer if not empty, else park `k` | the buffer, else `c` (violated: the over-demand end) and terminal | the end |
/// | `written(n)` (writer) | request what brings the total back to `prefetch` | nothing | nothing |
/// | `cancelled` | terminal; cancel upstream; resume a parked writer with the end | terminal | nothing |
@usableFromInline
struct WriteBatchState<Output, Failure: Error> {
  /// What the writer gets: values to write, or the end (the completion, `nil` if cancelled).
  @usableFromInline enum Next {
    case values([Output])
    case end(Subscribers.Completion<Failure>?)
    /// The publisher sent more values than it was asked for: it was cancelled, and the RPC
    /// ends with `.internalError`.
    case overDemand
  }

  @usableFromInline typealias Writer = UnsafeContinuation<UncheckedBox<Next>, Never>

  @usableFromInline enum Phase {
    case awaitingSubscription
    case subscribed(any Subscription)
    case finished(Subscribers.Completion<Failure>)
    /// A value beyond the demand arrived; the subscription was cancelled.
    case violated
    case terminal
  }

  @usableFromInline let prefetch: Int
  @usableFromInline var phase = Phase.awaitingSubscription
  @usableFromInline var buffer: [Output] = []
  /// Requested and not yet received.
  @usableFromInline var outstanding = 0
  /// Taken by the writer and not yet written.
  @usableFromInline var writing = 0
  /// The writer, parked until a value or the end arrives.
  @usableFromInline var parked: Writer?

  @inlinable init(prefetch: Int) {
    self.prefetch = prefetch
  }

  @inlinable var subscription: (any Subscription)? {
    if case .subscribed(let subscription) = phase { return subscription }
    return nil
  }

  @usableFromInline enum SubscriptionAction {
    case request(any Subscription, Subscribers.Demand)
    case cancel(any Subscription)
  }

  @inlinable mutating func receivedSubscription(_ subscription: any Subscription)
    -> SubscriptionAction
  {
    guard case .awaitingSubscription = phase else { return .cancel(subscription) }
    phase = .subscribed(subscription)
    outstanding = prefetch
    return .request(subscription, .max(prefetch))
  }

  /// What ``receivedValue(_:)`` leaves to do after unlocking.
  @usableFromInline enum ValueAction {
    /// Buffered, or ignored (after the end).
    case none
    /// Resume this parked writer with `[value]` (the value is not buffered).
    case resume(Writer)
    /// The value was beyond the demand: cancel the upstream (if any) and resume the parked
    /// writer (if any) with ``Next/overDemand``.
    case violated(upstream: (any Subscription)?, writer: Writer?)
  }

  @inlinable mutating func receivedValue(_ value: Output) -> ValueAction {
    switch phase {
    case .awaitingSubscription, .subscribed: break
    case .finished, .violated, .terminal: return .none
    }
    guard outstanding > 0 else {
      let upstream = subscription
      let writer = parked
      parked = nil
      phase = writer == nil ? .violated : .terminal
      return .violated(upstream: upstream, writer: writer)
    }
    outstanding -= 1
    if let writer = parked {
      parked = nil
      writing += 1
      return .resume(writer)
    }
    buffer.append(value)
    return .none
  }

  /// The parked writer to resume with the end, if any.
  @inlinable mutating func receivedCompletion(_ completion: Subscribers.Completion<Failure>)
    -> Writer?
  {
    switch phase {
    case .awaitingSubscription, .subscribed: break
    case .finished, .violated, .terminal: return nil
    }
    guard let writer = parked else {
      phase = .finished(completion)
      return nil
    }
    parked = nil
    phase = .terminal
    return writer
  }

  @usableFromInline enum BatchAction {
    case take(Next)
    case parked
  }

  /// The writer asks for the next batch: at once if there is one (or the end), else parked.
  @inlinable mutating func nextBatch(_ writer: Writer?) -> BatchAction {
    if !buffer.isEmpty {
      let batch = buffer
      buffer = []
      writing += batch.count
      return .take(.values(batch))
    }
    switch phase {
    case .finished(let completion):
      phase = .terminal
      return .take(.end(completion))
    case .violated:
      phase = .terminal
      return .take(.overDemand)
    case .terminal:
      return .take(.end(nil))
    case .awaitingSubscription, .subscribed:
      guard let writer else { return .parked }
      parked = writer
      return .parked
    }
  }

  /// The writer wrote `count` values: the demand that brings requested + buffered + being
  /// written back to `prefetch`, and the subscription to ask; `nil` when none is due.
  @inlinable mutating func written(_ count: Int) -> (any Subscription, Subscribers.Demand)? {
    writing -= count
    guard let subscription else { return nil }
    let more = prefetch - outstanding - buffer.count - writing
    guard more > 0 else { return nil }
    outstanding += more
    return (subscription, .max(more))
  }

  /// Terminal. What to release after unlocking. Idempotent.
  @inlinable mutating func cancelled() -> (
    upstream: (any Subscription)?, writer: Writer?, buffer: [Output]
  ) {
    let released = (subscription, parked, buffer)
    phase = .terminal
    parked = nil
    buffer = []
    return released
  }
}
