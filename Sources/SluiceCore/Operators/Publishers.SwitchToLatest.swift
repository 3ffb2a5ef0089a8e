extension Publishers {
  /// Republishes the values of the most recent publisher its upstream produced, cancelling the
  /// previous one, as Combine's `switchToLatest()`.
  ///
  /// ![Marble diagram: outer.map { inner($0) }.switchToLatest()](switchToLatest)
  ///
  /// **Demand**: asks the upstream for `.unlimited` publishers; the downstream's demand goes to
  /// the current inner publisher, and what is still outstanding is requested from each new one
  /// when it subscribes. **Ordering**: only the current inner publisher's values pass, in its
  /// order; it finishes once the upstream and the current inner publisher have finished; a
  /// failure of either fails at once and cancels the other. Signals from different threads
  /// reach the downstream one at a time. **Cancellation**: cancels the upstream and the current
  /// inner publisher and releases the downstream. A value beyond the downstream's demand traps
  /// (`API Violation`), as in Combine.
  public struct SwitchToLatest<P: Publisher, Upstream: Publisher>: Publisher
  where P == Upstream.Output, P.Failure == Upstream.Failure {
    public typealias Output = P.Output
    public typealias Failure = P.Failure

    /// The publisher from which this publisher receives elements.
    public let upstream: Upstream

    /// Creates a publisher that republishes the latest publisher `upstream` produced.
    public init(upstream: Upstream) { self.upstream = upstream }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let outer = SwitchToLatestSubscription<P, Upstream, S>(downstream: subscriber)
      subscriber.receive(subscription: outer)
      upstream.receive(subscriber: outer)
    }
  }
}

/// The subscription of `switchToLatest()`: the upstream's subscriber, and through
/// ``SwitchToLatestInner`` the current inner publisher's.
///
/// States: `live` (the upstream `subscribed` or `finished`; an inner publisher `awaiting` its
/// subscription, `subscribed`, or none) → `terminal`.
/// | event | live | terminal |
/// |---|---|---|
/// | upstream subscription | keep it, request `.unlimited` (a second one: cancel it) | cancel it |
/// | upstream value `p` | cancel the current inner; index +1; subscribe to `p` | drop |
/// | inner subscription (current index) | keep it; request the outstanding demand | cancel it |
/// | inner value (current index) | demand −1 (none: trap); deliver | drop |
/// | inner completion before its subscription | trap (as Combine) | drop |
/// | inner finished | no inner; upstream finished too: finish, terminal | drop |
/// | upstream finished | finished; no inner: finish, terminal | drop |
/// | any failure | cancel the other side; fail; terminal | drop |
/// | `request(n)` | demand +n; request `n` from the current inner | ignore |
/// | `cancel()` | cancel both sides (the inner first), terminal | nothing |
@usableFromInline
final class SwitchToLatestSubscription<P: Publisher, Upstream: Publisher, Downstream: Subscriber>:
  Subscriber, Subscription, CustomStringConvertible, CustomReflectable,
  CustomPlaygroundDisplayConvertible, @unchecked Sendable
where
  P == Upstream.Output, P.Failure == Upstream.Failure, Downstream.Input == P.Output,
  Downstream.Failure == P.Failure
{
  // Safety: all mutable state is in `state`'s lock; upstreams are called after unlocking and the
  // downstream only through `delivery`, which keeps its signals serial.
  @usableFromInline
  typealias Input = P
  @usableFromInline
  typealias Failure = Upstream.Failure

  @usableFromInline
  struct State {
    @usableFromInline
    var upstream: (any Subscription)?
    @usableFromInline
    var upstreamFinished = false
    @usableFromInline
    var terminal = false
    @usableFromInline
    var index: UInt64 = 0
    @usableFromInline
    var inner: (any Subscription)?
    @usableFromInline
    var awaitingInner = false
    @usableFromInline
    var demand = Subscribers.Demand.none

    /// Ends the subscription; returns both sides to cancel, the inner first (as Combine).
    @inlinable
    mutating func end() -> [any Subscription] {
      terminal = true
      defer {
        upstream = nil
        inner = nil
      }
      return [inner, upstream].compactMap { $0 }
    }
  }

  @usableFromInline
  let state = Lock(State())
  @usableFromInline
  var delivery: SerialDelivery<Downstream>!

  @inlinable
  init(downstream: Downstream) {
    delivery = SerialDelivery(downstream) { [unowned self] more in
      state.withLock { $0.demand += more }
    }
  }

  // MARK: The upstream of publishers

  @inlinable
  func receive(subscription: any Subscription) {
    let accepted = state.withLock { state -> Bool in
      guard state.upstream == nil, !state.terminal, !state.upstreamFinished else { return false }
      state.upstream = subscription
      return true
    }
    guard accepted else {
      subscription.cancel()
      return
    }
    subscription.request(.unlimited)
  }

  @inlinable
  func receive(_ input: P) -> Subscribers.Demand {
    let switched = state.withLock { state -> (index: UInt64, previous: (any Subscription)?)? in
      guard !state.terminal, !state.upstreamFinished else { return nil }
      state.index += 1
      state.awaitingInner = true
      defer { state.inner = nil }
      return (state.index, state.inner)
    }
    guard let switched else { return .none }
    switched.previous?.cancel()
    input.receive(subscriber: SwitchToLatestInner(parent: self, index: switched.index))
    return .none
  }

  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    let (ends, cancelling) = state.withLock { state -> (Bool, [any Subscription]) in
      guard !state.terminal, !state.upstreamFinished else { return (false, []) }
      state.upstream = nil
      state.upstreamFinished = true
      if case .failure = completion { return (true, state.end()) }
      guard state.inner == nil, !state.awaitingInner else { return (false, []) }
      return (true, state.end())
    }
    for subscription in cancelling { subscription.cancel() }
    if ends { delivery.send(.completion(completion)) }
  }

  // MARK: The current inner publisher

  @inlinable
  func receiveInner(subscription: any Subscription, index: UInt64) {
    let demand = state.withLock { state -> Subscribers.Demand? in
      guard index == state.index, !state.terminal, state.inner == nil else { return nil }
      state.inner = subscription
      state.awaitingInner = false
      return state.demand
    }
    guard let demand else {
      subscription.cancel()
      return
    }
    if demand > 0 { subscription.request(demand) }
  }

  @inlinable
  func receiveInner(_ input: P.Output, index: UInt64) -> Subscribers.Demand {
    let current = state.withLock { state -> Bool? in
      guard index == state.index, !state.terminal else { return false }
      guard state.demand > 0 else { return nil }
      state.demand -= 1
      return true
    }
    guard let current else { Violation.unrequestedValue(operator: description) }
    guard current else { return .none }
    let more = delivery.send(.value(input))
    if more > 0 { state.withLock { $0.demand += more } }
    return more
  }

  @inlinable
  func receiveInner(completion: Subscribers.Completion<Failure>, index: UInt64) {
    let step = state.withLock { state -> (Bool, [any Subscription])? in
      guard index == state.index, !state.terminal else { return (false, []) }
      if state.inner == nil && state.awaitingInner { return nil }  // before its subscription
      state.inner = nil
      state.awaitingInner = false
      if case .failure = completion { return (true, state.end()) }
      guard state.upstreamFinished else { return (false, []) }
      return (true, state.end())
    }
    guard let (ends, cancelling) = step else {
      Violation.signalBeforeSubscription("a completion", operator: description)
    }
    for subscription in cancelling { subscription.cancel() }
    if ends { delivery.send(.completion(completion)) }
  }

  // MARK: The downstream's calls

  @inlinable
  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    let inner = state.withLock { state -> (any Subscription)? in
      guard !state.terminal else { return nil }
      state.demand += demand
      return state.inner
    }
    inner?.request(demand)
  }

  @inlinable
  func cancel() {
    let cancelling = state.withLock { state in state.terminal ? [] : state.end() }
    for subscription in cancelling { subscription.cancel() }
    delivery.end()
  }

  @inlinable
  var description: String { "SwitchToLatest" }
  @inlinable
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @inlinable
  var playgroundDescription: Any { description }
}

/// Subscribes a ``SwitchToLatestSubscription`` to one inner publisher, tagged with its index.
@usableFromInline
struct SwitchToLatestInner<P: Publisher, Upstream: Publisher, Downstream: Subscriber>: Subscriber,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible
where
  P == Upstream.Output, P.Failure == Upstream.Failure, Downstream.Input == P.Output,
  Downstream.Failure == P.Failure
{
  @usableFromInline
  typealias Input = P.Output
  @usableFromInline
  typealias Failure = P.Failure

  @usableFromInline
  let parent: SwitchToLatestSubscription<P, Upstream, Downstream>
  @usableFromInline
  let index: UInt64

  @inlinable
  init(parent: SwitchToLatestSubscription<P, Upstream, Downstream>, index: UInt64) {
    self.parent = parent
    self.index = index
  }
  @usableFromInline
  let combineIdentifier = CombineIdentifier()

  @inlinable
  func receive(subscription: any Subscription) {
    parent.receiveInner(subscription: subscription, index: index)
  }
  @inlinable
  func receive(_ input: Input) -> Subscribers.Demand { parent.receiveInner(input, index: index) }
  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    parent.receiveInner(completion: completion, index: index)
  }

  @inlinable
  var description: String { "SwitchToLatest" }
  @inlinable
  var customMirror: Mirror {
    Mirror(self, children: [("parentSubscription", parent.combineIdentifier)])
  }
  @inlinable
  var playgroundDescription: Any { description }
}

extension Publisher where Output: Publisher, Output.Failure == Failure {
  /// Republishes the values of the most recent publisher this publisher produced, cancelling the
  /// previous one.
  ///
  /// ![Marble diagram: outer.map { inner($0) }.switchToLatest()](switchToLatest)
  ///
  /// ```swift
  /// $query.map { query in search(query) }.switchToLatest()
  /// ```
  public func switchToLatest() -> Publishers.SwitchToLatest<Output, Self> {
    Publishers.SwitchToLatest(upstream: self)
  }
}

extension Publisher where Output: Publisher, Failure == Never {
  /// `switchToLatest()` for a publisher that cannot fail, of publishers that can.
  ///
  /// ![Marble diagram: outer.map { inner($0) }.switchToLatest()](switchToLatest)
  public func switchToLatest()
    -> Publishers.SwitchToLatest<Output, Publishers.SetFailureType<Self, Output.Failure>>
  {
    setFailureType(to: Output.Failure.self).switchToLatest()
  }
}

extension Publisher where Output: Publisher, Failure == Never, Output.Failure == Never {
  /// `switchToLatest()` when neither this publisher nor its publishers can fail.
  ///
  /// ![Marble diagram: outer.map { inner($0) }.switchToLatest()](switchToLatest)
  public func switchToLatest() -> Publishers.SwitchToLatest<Output, Self> {
    Publishers.SwitchToLatest(upstream: self)
  }
}

extension Publisher where Output: Publisher, Output.Failure == Never {
  /// `switchToLatest()` for a publisher that can fail, of publishers that cannot.
  ///
  /// ![Marble diagram: outer.map { inner($0) }.switchToLatest()](switchToLatest)
  public func switchToLatest()
    -> Publishers.SwitchToLatest<
      Publishers.SetFailureType<Output, Failure>,
      Publishers.Map<Self, Publishers.SetFailureType<Output, Failure>>
    >
  {
    map { $0.setFailureType(to: Failure.self) }.switchToLatest()
  }
}
