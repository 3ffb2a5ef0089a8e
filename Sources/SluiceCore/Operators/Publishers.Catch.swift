extension Publishers {
  /// Replaces a failing upstream with another publisher, as Combine's `catch`.
  ///
  /// **Demand**: what the downstream requested and has not received carries over to the new
  /// publisher. **Ordering**: the upstream's values, then the new publisher's.
  /// **Cancellation**: cancels whichever publisher is current. **Violations** (trap, as in
  /// Combine): a value before the upstream subscription or beyond the outstanding demand, and a
  /// completion from the failed upstream after it failed (also re-entrantly, from the handler).
  public struct Catch<Upstream: Publisher, NewPublisher: Publisher>: Publisher
  where Upstream.Output == NewPublisher.Output {
    public typealias Output = Upstream.Output
    public typealias Failure = NewPublisher.Failure

    public let upstream: Upstream
    public let handler: (Upstream.Failure) -> NewPublisher

    @inlinable
    public init(upstream: Upstream, handler: @escaping (Upstream.Failure) -> NewPublisher) {
      self.upstream = upstream
      self.handler = handler
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let handler = self.handler
      upstream.receive(
        subscriber: CatchSubscription<Upstream, NewPublisher, S>(
          "Catch", downstream: subscriber, handler: { .success(handler($0)) }))
    }
  }

  /// `catch` with a handler that can throw, as Combine's `tryCatch`: its error fails the
  /// downstream.
  ///
  /// **Demand**: carries over to the new publisher. **Ordering**: the upstream's values, then
  /// the new publisher's. **Cancellation**: cancels whichever publisher is current.
  public struct TryCatch<Upstream: Publisher, NewPublisher: Publisher>: Publisher
  where Upstream.Output == NewPublisher.Output {
    public typealias Output = Upstream.Output
    public typealias Failure = any Error

    public let upstream: Upstream
    public let handler: (Upstream.Failure) throws -> NewPublisher

    @inlinable
    public init(upstream: Upstream, handler: @escaping (Upstream.Failure) throws -> NewPublisher) {
      self.upstream = upstream
      self.handler = handler
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let handler = self.handler
      upstream.receive(
        subscriber: CatchSubscription<Upstream, Publishers.MapError<NewPublisher, any Error>, S>(
          "TryCatch", downstream: subscriber,
          handler: { error in attempt { try handler(error).mapError(anyError) } }))
    }
  }
}

/// The subscription of `catch` and `tryCatch` (see ``RelayState``).
// Safety (`@unchecked Sendable`): mutable state is in `state`'s lock, and `held` is touched only
// inside `state.withLock`; the downstream, the handler and upstreams are called after unlocking.
@usableFromInline
final class CatchSubscription<Upstream: Publisher, NewPublisher: Publisher, Downstream: Subscriber>:
  Subscriber, Subscription, CustomStringConvertible, CustomReflectable,
  CustomPlaygroundDisplayConvertible, @unchecked Sendable
where
  Upstream.Output == Downstream.Input, NewPublisher.Output == Downstream.Input,
  NewPublisher.Failure == Downstream.Failure
{
  @usableFromInline typealias Input = Upstream.Output
  @usableFromInline typealias Failure = Upstream.Failure

  @usableFromInline let name: StaticString
  /// The downstream until the subscription ends (guarded by `state`'s lock).
  @usableFromInline @exclusivity(unchecked) var held: Downstream?
  @usableFromInline let handler: (Upstream.Failure) -> Result<NewPublisher, Downstream.Failure>
  @usableFromInline let state = Lock(RelayState())

  @inlinable init(
    _ name: StaticString, downstream: Downstream,
    handler: @escaping (Upstream.Failure) -> Result<NewPublisher, Downstream.Failure>
  ) {
    self.name = name
    held = downstream
    self.handler = handler
  }

  @inlinable func receive(subscription: any Subscription) {
    switch state.withLock({ $0.attached(subscription) }) {
    case .handDownstream: state.withLock { _ in held }?.receive(subscription: self)
    case .request(let demand): if demand > 0 { subscription.request(demand) }
    case .cancel: subscription.cancel()
    }
  }

  @inlinable func receive(_ input: Input) -> Subscribers.Demand {
    let (delivery, downstream) = state.withLock { state in
      let delivery = state.delivering(betweenUpstreams: false)
      return (delivery, delivery == .deliver ? held : nil)
    }
    guard delivery.admits(operator: description), let downstream else { return .none }
    let more = downstream.receive(input)
    if more > 0 { _ = state.withLock { $0.delivered(more: more) } }
    return more
  }

  @inlinable func receive(completion: Subscribers.Completion<Upstream.Failure>) {
    let action = state.withLock { state -> RelayState.CompletionAction? in
      // The failed upstream completing again (or re-entrantly, from the handler) is a violation.
      if state.leftFailedUpstream { return nil }
      if case .finished = completion { return state.completed(moveOn: false) }
      return state.completed(moveOn: true)
    }
    switch action {
    case nil: Violation.completionAfterFailure(operator: description)
    case .end?: takeDownstream()?.receive(completion: .finished)
    case .none?: break
    case .resubscribe?:
      guard case .failure(let error) = completion else { return }
      switch handler(error) {
      case .success(let publisher):
        publisher.receive(subscriber: CatchTail(parent: self))
      case .failure(let error):
        if state.withLock({ $0.ended() }) {
          takeDownstream()?.receive(completion: .failure(error))
        }
      }
    }
  }

  /// The new publisher's completion is the last.
  @inlinable func receiveTail(completion: Subscribers.Completion<NewPublisher.Failure>) {
    if case .end = state.withLock({ $0.completed(moveOn: false) }) {
      takeDownstream()?.receive(completion: completion)
    }
  }

  @inlinable func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    state.withLock { $0.requested(demand) }?.request(demand)
  }

  @inlinable func cancel() {
    let (upstream, downstream) = state.withLock { state in
      defer { held = nil }
      return (state.cancelled(), held)
    }
    upstream?.cancel()
    withExtendedLifetime(downstream) {}
  }

  /// The downstream, forgotten: for the completion.
  @inlinable func takeDownstream() -> Downstream? {
    state.withLock { _ in
      defer { held = nil }
      return held
    }
  }

  @usableFromInline var description: String { "\(name)" }
  /// Combine's children: the downstream and the demand it still holds.
  @usableFromInline var customMirror: Mirror {
    let (downstream, demand) = state.withLock { state in (held, state.outstanding) }
    return Mirror(
      self, children: [("downstream", downstream as Any), ("demand", demand as Any)])
  }
  @usableFromInline var playgroundDescription: Any { description }
}

/// Subscribes a ``CatchSubscription`` to its replacement publisher; described and reflected as
/// the subscription itself.
@usableFromInline
struct CatchTail<Upstream: Publisher, NewPublisher: Publisher, Downstream: Subscriber>: Subscriber,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible
where
  Upstream.Output == Downstream.Input, NewPublisher.Output == Downstream.Input,
  NewPublisher.Failure == Downstream.Failure
{
  @usableFromInline typealias Input = NewPublisher.Output
  @usableFromInline typealias Failure = NewPublisher.Failure

  @usableFromInline let parent: CatchSubscription<Upstream, NewPublisher, Downstream>
  @usableFromInline var combineIdentifier: CombineIdentifier { CombineIdentifier(parent) }

  @inlinable init(parent: CatchSubscription<Upstream, NewPublisher, Downstream>) {
    self.parent = parent
  }

  @inlinable func receive(subscription: any Subscription) {
    parent.receive(subscription: subscription)
  }
  @inlinable func receive(_ input: Input) -> Subscribers.Demand { parent.receive(input) }
  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    parent.receiveTail(completion: completion)
  }

  @usableFromInline var description: String { parent.description }
  @usableFromInline var customMirror: Mirror { parent.customMirror }
  @usableFromInline var playgroundDescription: Any { parent.playgroundDescription }
}

extension Publisher {
  /// Replaces this publisher with `handler(error)` when it fails.
  ///
  /// ```swift
  /// request.catch { _ in Just(fallback) }
  /// ```
  @inlinable
  public func `catch`<P: Publisher>(
    _ handler: @escaping (Failure) -> P
  ) -> Publishers.Catch<Self, P> where Output == P.Output {
    Publishers.Catch(upstream: self, handler: handler)
  }

  /// `catch` with a handler that can throw; its error fails the downstream.
  @inlinable
  public func tryCatch<P: Publisher>(
    _ handler: @escaping (Failure) throws -> P
  ) -> Publishers.TryCatch<Self, P> where Output == P.Output {
    Publishers.TryCatch(upstream: self, handler: handler)
  }
}
