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
/// States: `awaitingSubscription` → `subscribed(s)` → `finished(c)` (the publisher completed;
/// buffered values are still taken, then `c`) → `terminal` (the writer took the end, or
/// cancelled).
///
/// Transitions (event → change, action performed after unlocking):
/// | event | awaiting / subscribed | finished | terminal |
/// |---|---|---|---|
/// | `receivedSubscription(s)` | subscribed; request `prefetch` | cancel `s` | cancel `s` |
/// | `receivedValue(v)` | a parked writer: resume it with `[v]`; else buffer `v` | ignore | ignore |
/// | `receivedCompletion(c)` | a parked writer: resume it with `c`, terminal; else finished | ignore | ignore |
/// | `nextBatch(k)` (writer) | the buffer if not empty, else park `k` | the buffer, else `c` and terminal | the end |
/// | `written(n)` (writer) | request what brings the total back to `prefetch` | nothing | nothing |
/// | `cancelled` | terminal; cancel upstream; resume a parked writer with the end | terminal | nothing |
@usableFromInline
struct WriteBatchState<Output, Failure: Error> {
  /// What the writer gets: values to write, or the end (the completion, `nil` if cancelled).
  @usableFromInline enum Next {
    case values([Output])
    case end(Subscribers.Completion<Failure>?)
  }

  @usableFromInline typealias Writer = UnsafeContinuation<UncheckedBox<Next>, Never>

  @usableFromInline enum Phase {
    case awaitingSubscription
    case subscribed(any Subscription)
    case finished(Subscribers.Completion<Failure>)
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

  /// The parked writer to resume with `[value]`, if any (the value is then not buffered).
  @inlinable mutating func receivedValue(_ value: Output) -> Writer? {
    switch phase {
    case .awaitingSubscription, .subscribed: break
    case .finished, .terminal: return nil
    }
    if outstanding > 0 { outstanding -= 1 }
    if let writer = parked {
      parked = nil
      writing += 1
      return writer
    }
    buffer.append(value)
    return nil
  }

  /// The parked writer to resume with the end, if any.
  @inlinable mutating func receivedCompletion(_ completion: Subscribers.Completion<Failure>)
    -> Writer?
  {
    switch phase {
    case .awaitingSubscription, .subscribed: break
    case .finished, .terminal: return nil
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
