/// A publisher whose values an ``AsyncPublisher`` can read without subscribing: the
/// `AsyncStream` and `AsyncThrowingStream` behind an ``AsyncSequencePublisher``.
///
/// `stream.publisher.values` would otherwise move each value through two tasks (the consumer
/// asks, the publisher's task wakes, pulls and hands the value back): the consumer's task reads
/// the stream itself instead, which is what the publisher's demand of one value per `next()`
/// amounts to. `AsyncPublisher` looks for this through `eraseToAnyPublisher()`.
@usableFromInline
protocol DirectlyIterable<Output, Failure>: Publisher {
  /// An iteration of the values read by the consumer's task, or `nil` to subscribe as usual.
  func makeDirectIteration() -> DirectIteration<Output, Failure>?
}

/// The sequences read directly: `AsyncStream` and `AsyncThrowingStream` made with a
/// continuation (`makeStream()`, `init(_:bufferingPolicy:_:)`), whose `next()` returns `nil`
/// once the reading task is cancelled, as a cancelled subscription's would. A stream made with
/// `init(unfolding:)` waits for its closure even when cancelled, and any other sequence may
/// too: those are pulled by the publisher's task, so that a cancelled consumer never waits.
protocol EndsWithItsReader: AsyncSequence {}
extension AsyncStream: EndsWithItsReader {}
extension AsyncThrowingStream: EndsWithItsReader {}

extension EndsWithItsReader {
  /// Whether this stream was made with a continuation (its buffer, the standard library's
  /// `context.storage`, is present), read by reflection once an iteration: any other layout
  /// reads as `false`, and the stream is then pulled by the publisher's task as before.
  var endsWithItsReader: Bool {
    guard let storage = Mirror(reflecting: self).descendant("context", "storage") else {
      return false
    }
    let optional = Mirror(reflecting: storage)
    return optional.displayStyle == .optional && optional.children.count == 1
  }
}

extension AsyncSequencePublisher: DirectlyIterable {
  @usableFromInline
  func makeDirectIteration() -> DirectIteration<Output, Failure>? {
    guard let stream = base as? any EndsWithItsReader, stream.endsWithItsReader else { return nil }
    return DirectIterationOf(base.makeAsyncIterator())
  }
}

extension Publisher {
  /// A direct iteration of this publisher's values, looking through `AnyPublisher`.
  @usableFromInline
  func directIteration() -> DirectIteration<Output, Failure>? {
    if let iterable = self as? any DirectlyIterable<Output, Failure> {
      return iterable.makeDirectIteration()
    }
    if let erased = self as? AnyPublisher<Output, Failure> { return erased.base.directIteration() }
    return nil
  }
}

/// The values of a sequence read by the consuming task itself: what an ``AsyncPublisher``
/// iterator holds in place of a subscription when its publisher is ``DirectlyIterable``.
///
/// It keeps the subscription's guarantees: **ordering** is the sequence's; several tasks may
/// await `next()` on copies of one iterator (they take turns, oldest first, each value goes to
/// one of them, the end or a failure reaches them all); **cancellation**: `next()` in a
/// cancelled task returns `nil`; when no other copy is reading that ends the iteration (a task
/// cancelled while it reads the stream gets the stream's end, which ends the stream too, as a
/// cancelled subscription's task does). One difference, for copies shared between tasks: a
/// copy's task cancelled while another copy reads gets `nil` alone, and the reading copy goes
/// on (a subscription would end them all, but the read is the stream's own and cannot be
/// stopped from another task). After the end or a failure `next()` returns `nil`; dropping the
/// iterator releases the sequence's iterator.
///
/// Its turns are a ``ReadTurns`` state machine.
@usableFromInline
class DirectIteration<Element, Failure: Error>: CustomReflectable, @unchecked Sendable {
  // Safety: the turns are in `turns`' lock, and continuations are resumed after unlocking. The
  // subclass's iterator is touched only by the one caller the turns let read, or, once they
  // ended, by the one caller that ended them; each takes the lock before touching it (a
  // caller handed the turn takes it again in `begin`), so the lock orders them.
  @usableFromInline let turns = Lock(ReadTurns())

  @usableFromInline init() {}

  /// The next value, `nil` at the end (or in a cancelled task), or the sequence's failure.
  @inlinable
  final func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    let cancelled = Task.isCancelled
    switch turns.withLock({ $0.enter(cancelled: cancelled) }) {
    case .read: break
    case .end: return nil
    case .dropAndEnd:
      dropIterator()
      return nil
    case .wait(let ticket):
      guard await waitForTurn(ticket, isolation: actor) else { return nil }
    }
    let value: Element?
    do {
      value = try await pull(isolation: actor)
    } catch {
      leave(ended: true)
      throw error
    }
    leave(ended: value == nil)
    return value
  }

  /// Waits behind the callers before this one: `true` when it is this caller's turn to read.
  @usableFromInline
  final func waitForTurn(_ ticket: Int, isolation actor: isolated (any Actor)?) async -> Bool {
    let turn = await withTaskCancellationHandler {
      await withUnsafeContinuation(isolation: actor) { (caller: ReadTurns.Caller) in
        if let turn = turns.withLock({ $0.wait(ticket: ticket, caller) }) {
          caller.resume(returning: turn)
        }
      }
    } onCancel: {
      turns.withLock { $0.withdraw(ticket: ticket) }?.resume(returning: false)
    }
    guard turn else { return false }
    // Taken under the lock: orders this caller's reads after the previous reader's.
    let cancelled = Task.isCancelled
    guard let action = turns.withLock({ $0.begin(cancelled: cancelled) }) else { return true }
    perform(action)
    return false
  }

  /// The read returned: hands the turn to the oldest waiting caller, or ends the iteration.
  @usableFromInline
  final func leave(ended: Bool) {
    perform(turns.withLock { $0.leave(ended: ended) })
  }

  @usableFromInline
  final func perform(_ action: ReadTurns.Action) {
    switch action {
    case .handOver(let next): next.resume(returning: true)
    case .end(let queue):
      dropIterator()
      for caller in queue { caller.resume(returning: false) }
    case .none: break
    }
  }

  /// What the iteration holds, for debuggers and tests: whether a caller is reading
  /// (`pulling`), and how many wait for their turn.
  @usableFromInline var customMirror: Mirror {
    let (pulling, queued) = turns.withLock { ($0.isReading, $0.queue.count) }
    return Mirror(self, children: ["pulling": pulling, "queued": queued])
  }

  /// Pulls the sequence's next value (only by the caller whose turn it is).
  @usableFromInline
  func pull(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    fatalError("DirectIteration.pull is overridden")
  }

  /// Drops the sequence's iterator (only by the caller that ended the iteration).
  @usableFromInline
  func dropIterator() {}
}

/// A ``DirectIteration`` of one sequence's iterator.
@usableFromInline
final class DirectIterationOf<Iterator: AsyncIteratorProtocol>:
  DirectIteration<Iterator.Element, Iterator.Failure>, @unchecked Sendable
{
  // Safety: see the base class: `iterator` is touched only by the caller `turns` elects.
  @usableFromInline var iterator: Iterator?

  @usableFromInline init(_ iterator: Iterator) {
    self.iterator = iterator
  }

  @inlinable
  override func pull(isolation actor: isolated (any Actor)?) async throws(Iterator.Failure)
    -> Iterator.Element?
  {
    try await iterator?.next(isolation: actor)
  }

  @usableFromInline
  override func dropIterator() { iterator = nil }
}
