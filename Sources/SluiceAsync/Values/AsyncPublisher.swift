/// The values of a publisher as an `AsyncSequence`, with the consumer's pace turned into demand.
///
/// ![Marble diagram of values, drawn from a run](values)
///
/// Iterating subscribes (each iterator has its own subscription, made in
/// `makeAsyncIterator()`); each `next()` takes a buffered value or waits for one. For a
/// publisher that cannot fail, `for await` needs no `try`; otherwise the sequence throws the
/// publisher's own `Failure`.
///
/// **Demand**: set by the ``AsyncBufferingPolicy`` (``SluiceCore/Publisher/values`` uses
/// ``AsyncBufferingPolicy/demandOne``: one `request(.max(1))` per `next()`, as in Combine).
/// **Ordering**: the publisher's. **Cancellation**: cancelling the consuming task, or dropping
/// the iterator, cancels and releases the subscription at once; `next()` then returns `nil`, as
/// it does after the end. A value the publisher sends without demand never crashes the bridge.
///
/// ```swift
/// for await value in [1, 2, 3].publisher.values {
///   print(value)   // 1, 2, 3
/// }
/// ```
public struct AsyncPublisher<Upstream: Publisher>: AsyncSequence {
  public typealias Element = Upstream.Output
  public typealias Failure = Upstream.Failure

  /// The publisher whose values this sequence delivers.
  public let upstream: Upstream
  /// How values are buffered and demanded.
  public let bufferingPolicy: AsyncBufferingPolicy

  /// Creates the async sequence of `upstream`'s values.
  public init(_ upstream: Upstream, bufferingPolicy: AsyncBufferingPolicy = .demandOne) {
    self.upstream = upstream
    self.bufferingPolicy = bufferingPolicy
  }

  @inlinable
  public func makeAsyncIterator() -> Iterator {
    if bufferingPolicy == .demandOne, let direct = upstream.directIteration() {
      return Iterator(direct: direct)
    }
    return Iterator(owner: subscribe())
  }

  /// Subscribes a bridge to the publisher (never reading it directly).
  @inlinable
  func subscribe() -> IteratorOwner<Element, Failure> {
    let bridge = ValuesBridge<Element, Failure>(policy: bufferingPolicy)
    upstream.receive(subscriber: bridge)
    return IteratorOwner(bridge)
  }

  /// The iterator of an ``AsyncPublisher``. Copies share one subscription, so several tasks may
  /// await `next()` at once (as Combine allows): they are served oldest first, each value goes to
  /// exactly one of them, and the end reaches them all. The subscription is cancelled when the
  /// last copy goes away.
  ///
  /// An `AsyncStream` or `AsyncThrowingStream` made with a continuation, behind
  /// ``AsyncSequencePublisher`` (erased or not), is read by the consuming task itself when the
  /// policy is ``AsyncBufferingPolicy/demandOne``, with the same guarantees but one: a copy whose
  /// task is cancelled while another copy reads gets `nil` alone, and the reading copy goes on.
  public struct Iterator: AsyncIteratorProtocol {
    @usableFromInline let owner: IteratorOwner<Element, Failure>?
    @usableFromInline let direct: DirectIteration<Element, Failure>?

    @inlinable init(owner: IteratorOwner<Element, Failure>) {
      self.owner = owner
      direct = nil
    }

    @inlinable init(direct: DirectIteration<Element, Failure>) {
      owner = nil
      self.direct = direct
    }

    @inlinable
    public mutating func next(isolation actor: isolated (any Actor)? = #isolation)
      async throws(Failure) -> Element?
    {
      if let owner { return try await owner.bridge.next(isolation: actor) }
      return try await direct.unsafelyUnwrapped.next(isolation: actor)
    }

    @inlinable
    public mutating func next() async throws(Failure) -> Element? {
      try await next(isolation: nil)
    }

    /// The bridge (or the direct iteration), for tests that check it is released.
    package var bridgeForTesting: AnyObject { owner?.bridge ?? direct.unsafelyUnwrapped }
  }
}

extension AsyncPublisher: Sendable where Upstream: Sendable {}

@available(*, unavailable)
extension AsyncPublisher.Iterator: Sendable {}

/// Owned only by an iterator (and its copies): when the last is dropped, the subscription is
/// cancelled, which breaks the bridge ↔ subscription reference cycle.
@usableFromInline
final class IteratorOwner<Output, Failure: Error>: Sendable {
  @usableFromInline let bridge: ValuesBridge<Output, Failure>
  @inlinable init(_ bridge: ValuesBridge<Output, Failure>) { self.bridge = bridge }
  deinit { bridge.cancel() }
}

/// Combine's name for the async sequence of a publisher that can fail; in Sluice one type
/// serves both, throwing the publisher's own `Failure`.
///
/// ![Marble diagram: for await value in input.values { … }](values)
public typealias AsyncThrowingPublisher<Upstream: Publisher> = AsyncPublisher<Upstream>

extension Publisher {
  /// The publisher's values as an async sequence.
  ///
  /// ![Marble diagram of values, drawn from a run](values)
  ///
  /// One `request(.max(1))` per `next()`, as in Combine, except for hot publishers
  /// (`HotPublisher`: subjects, `@Published`, `map`/`filter`/`debounce`/… chains over them): a
  /// hot publisher cannot be slowed down (it drops what a subscriber has not demanded), so for
  /// one this requests `.unlimited` and keeps every value sent after iteration starts until the
  /// consumer takes it (``AsyncBufferingPolicy/unbounded``). Use
  /// ``values(bufferingPolicy:)`` to choose, e.g. `.bufferingNewest(n)` to bound memory.
  public var values: AsyncPublisher<Self> {
    AsyncPublisher(self, bufferingPolicy: defaultBufferingPolicy)
  }

  /// The publisher's values as an async sequence, buffered and demanded by `bufferingPolicy`.
  ///
  /// ![Marble diagram of values-prefetch, drawn from a run](values-prefetch)
  public func values(bufferingPolicy: AsyncBufferingPolicy) -> AsyncPublisher<Self> {
    AsyncPublisher(self, bufferingPolicy: bufferingPolicy)
  }

  /// `.unbounded` for subjects (lossless), `.demandOne` for everything else (as in Combine).
  var defaultBufferingPolicy: AsyncBufferingPolicy { bufferingPolicy(otherwise: .demandOne) }

  /// `.unbounded` for a hot publisher (`HotPublisher`: a subject, `@Published`, an operator
  /// chain over them), which cannot be slowed down and drops what was not demanded, so anything
  /// less would lose values; `policy` for every other publisher.
  func bufferingPolicy(otherwise policy: AsyncBufferingPolicy) -> AsyncBufferingPolicy {
    isHotPublisher ? .unbounded : policy
  }
}
