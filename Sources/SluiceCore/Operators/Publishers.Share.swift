extension Publishers {
  /// A publisher shared by all its subscribers: the first subscriber connects one subscription
  /// to the upstream, every later one joins it, and the last to cancel disconnects it — Combine's
  /// `Share`, a class (compare instances by identity).
  ///
  /// ![Marble diagram: input.share()](share)
  ///
  /// It is `multicast(subject: PassthroughSubject())` with `autoconnect()`, so it has their
  /// guarantees. **Demand**: the upstream is asked for `.unlimited` once a subscriber has made a
  /// request; each subscriber then gets what it asks for, and values that find a subscriber
  /// without demand are not delivered to it (a `PassthroughSubject` does not buffer).
  /// **Ordering**: every subscriber sees the values in the upstream's order. A subscriber that
  /// arrives late misses what was sent before it; after the upstream completes, a new
  /// subscriber receives the completion at once. **Cancellation**: the last subscriber to cancel
  /// cancels the upstream subscription; a later subscriber subscribes to the upstream again.
  public final class Share<Upstream: Publisher>: Publisher, Equatable, @unchecked Sendable {
    // Safety: immutable; `inner` is thread-safe.
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher being shared.
    public let upstream: Upstream
    private let inner: Autoconnect<Multicast<Upstream, PassthroughSubject<Output, Failure>>>

    /// Creates a publisher that shares one subscription to `upstream`.
    public init(upstream: Upstream) {
      self.upstream = upstream
      inner = upstream.multicast(subject: PassthroughSubject()).autoconnect()
    }

    public func receive<S: Subscriber>(subscriber: S)
    where S.Input == Output, S.Failure == Failure {
      inner.receive(subscriber: subscriber)
    }

    /// Whether `lhs` and `rhs` are the same instance.
    public static func == (lhs: Share, rhs: Share) -> Bool { lhs === rhs }
  }
}

extension Publisher {
  /// Shares one subscription to this publisher among all subscribers; see
  /// ``Publishers/Share``.
  ///
  /// ![Marble diagram: input.share()](share)
  public func share() -> Publishers.Share<Self> { Publishers.Share(upstream: self) }
}
