/// How a relay goes on when its current upstream completes.
@usableFromInline
enum RelayNext<NewPublisher, Failure: Error> {
  /// Subscribe the downstream to this publisher, with the demand it still holds.
  case subscribe(NewPublisher)
  /// Pass this completion downstream: the relay is over.
  case end(Subscribers.Completion<Failure>)
}

/// The subscription of `catch`, `tryCatch` and `append`/`prepend` (`Concatenate`): delivers
/// one upstream, then — when it completes the way that moves on (`catch`: fails,
/// `Concatenate`: finishes) — subscribes the downstream to the publisher `next` gives, asking it
/// for the demand still outstanding (see ``RelayState``). A value from the upstream it moved on
/// from is dropped. A value beyond the outstanding demand, or a second completion from the
/// upstream it moved on from, traps naming the operator (`catch`) or is ignored (`Concatenate`,
/// `lenient`, as Combine's). `next` (and the publisher it holds) is released once used, and on
/// `cancel()`.
///
/// As in Combine, the downstream's subscription, the subscriber of the first upstream
/// (``RelayHead``) and that of the next publisher (``RelayTail``) are three objects of different
/// types with one `combineIdentifier`, described and reflected alike. The next publisher's
/// failure reaches the downstream through `mapTailFailure` (`tryCatch`: as `any Error`).
@usableFromInline
final class RelaySubscription<Upstream: Publisher, NewPublisher: Publisher, Downstream: Subscriber>:
  Subscriber, Subscription, CustomStringConvertible, CustomReflectable,
  CustomPlaygroundDisplayConvertible, @unchecked Sendable
where Upstream.Output == Downstream.Input, NewPublisher.Output == Downstream.Input {
  // Safety: mutable state is in `state`'s lock, and `held` and `next` are touched only inside
  // `state.withLock`; the downstream, `next` and upstreams are called after unlocking.
  @usableFromInline typealias Input = Upstream.Output
  @usableFromInline typealias Failure = Upstream.Failure

  @usableFromInline let name: StaticString
  /// The downstream until the subscription ends (guarded by `state`'s lock).
  @usableFromInline @exclusivity(unchecked) var held: Downstream?
  /// Whether a failure (catch) or a finish (Concatenate) moves on to the next publisher.
  @usableFromInline let movesOnFailure: Bool
  /// Values beyond demand and second completions are ignored instead of trapping.
  @usableFromInline let lenient: Bool
  /// Gives the next publisher; until used or cancelled (guarded by `state`'s lock).
  @usableFromInline @exclusivity(unchecked) var next:
    ((Subscribers.Completion<Upstream.Failure>) -> RelayNext<NewPublisher, Downstream.Failure>)?
  @usableFromInline let state = Lock(RelayState())
  /// The next publisher's failure, as the downstream's.
  @usableFromInline let mapTailFailure: (NewPublisher.Failure) -> Downstream.Failure

  @inlinable init(
    _ name: StaticString, downstream: Downstream, movesOnFailure: Bool, lenient: Bool = false,
    mapTailFailure: @escaping (NewPublisher.Failure) -> Downstream.Failure,
    next:
      @escaping (Subscribers.Completion<Upstream.Failure>) -> RelayNext<
        NewPublisher, Downstream.Failure
      >
  ) {
    self.name = name
    held = downstream
    self.movesOnFailure = movesOnFailure
    self.lenient = lenient
    self.mapTailFailure = mapTailFailure
    self.next = next
  }

  /// Subscribes the relay to `upstream`, the first publisher, through its ``RelayHead``.
  @inlinable func subscribe(to upstream: Upstream) {
    upstream.receive(subscriber: RelayHead(parent: self))
  }

  @inlinable func receive(subscription: any Subscription) {
    switch state.withLock({ $0.attached(subscription) }) {
    case .handDownstream: state.withLock { _ in held }?.receive(subscription: self)
    case .request(let demand): if demand > 0 { subscription.request(demand) }
    case .cancel: subscription.cancel()
    }
  }

  /// A value from the first upstream.
  @inlinable func receive(_ input: Input) -> Subscribers.Demand {
    receive(input, fromFirst: true)
  }

  /// A value from the first upstream or (`fromFirst` false) the one it moved on to.
  @inlinable func receive(_ input: Input, fromFirst: Bool) -> Subscribers.Demand {
    let lenient = self.lenient
    let (delivery, downstream) = state.withLock { state -> (RelayState.Delivery, Downstream?) in
      // The first upstream, once left, is no longer listened to.
      if fromFirst && state.movedOn { return (.drop, nil) }
      var delivery = state.delivering(betweenUpstreams: false)
      if lenient, delivery == .unrequested { delivery = .drop }
      return (delivery, delivery == .deliver ? held : nil)
    }
    guard delivery.admits(operator: description), let downstream else { return .none }
    let more = downstream.receive(input)
    if more > 0 { _ = state.withLock { $0.delivered(more: more) } }
    return more
  }

  @inlinable func receive(completion: Subscribers.Completion<Upstream.Failure>) {
    let failed: Bool
    if case .failure = completion { failed = true } else { failed = false }
    let action = state.withLock { state -> RelayState.CompletionAction? in
      // The upstream it moved on from completing again (also re-entrantly, from `next`) is a
      // violation.
      if state.leftUpstream { return nil }
      return state.completed(moveOn: failed == movesOnFailure)
    }
    switch action {
    case nil:
      if lenient { return }
      Violation.completionAfterCompletion(operator: description, failed: movesOnFailure)
    case .none?: break
    case .end?, .resubscribe?:
      guard let next = state.withLock({ _ in next.take() }) else { return }
      switch next(completion) {
      case .subscribe(let publisher):
        publisher.receive(subscriber: RelayTail(parent: self))
      case .end(let completion):
        if action == .resubscribe, !state.withLock({ $0.ended() }) { return }
        takeDownstream()?.receive(completion: completion)
      }
    }
  }

  @inlinable func receiveTail(completion: Subscribers.Completion<NewPublisher.Failure>) {
    if case .end = state.withLock({ $0.completed(moveOn: false) }) {
      takeDownstream()?.receive(completion: completion.mapError(mapTailFailure))
    }
  }

  @inlinable func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    state.withLock { $0.requested(demand) }?.request(demand)
  }

  @inlinable func cancel() {
    let (upstream, released) = state.withLock { state in
      defer {
        held = nil
        next = nil
      }
      return (state.cancelled(), (held, next))
    }
    upstream.cancelIfPresent()
    withExtendedLifetime(released) {}
  }

  /// The downstream, forgotten: for the completion.
  @inlinable func takeDownstream() -> Downstream? {
    state.withLock { _ in
      defer { held = nil }
      return held
    }
  }

  @usableFromInline var description: String { "\(name)" }
  /// Combine's children: catch's, the downstream and the demand it still holds; Concatenate's,
  /// none.
  @usableFromInline var customMirror: Mirror {
    guard movesOnFailure else { return Mirror(self, children: EmptyCollection()) }
    let (downstream, demand) = state.withLock { state in (held, state.outstanding) }
    return Mirror(
      self, children: [("downstream", downstream as Any), ("demand", demand as Any)])
  }
  @usableFromInline var playgroundDescription: Any { description }
}

/// Subscribes a ``RelaySubscription`` to its first upstream; described and reflected as the
/// subscription itself, with its `combineIdentifier`.
@usableFromInline
struct RelayHead<Upstream: Publisher, NewPublisher: Publisher, Downstream: Subscriber>: Subscriber,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible
where Upstream.Output == Downstream.Input, NewPublisher.Output == Downstream.Input {
  @usableFromInline typealias Input = Upstream.Output
  @usableFromInline typealias Failure = Upstream.Failure

  @usableFromInline let parent: RelaySubscription<Upstream, NewPublisher, Downstream>
  @usableFromInline var combineIdentifier: CombineIdentifier { CombineIdentifier(parent) }

  @inlinable init(parent: RelaySubscription<Upstream, NewPublisher, Downstream>) {
    self.parent = parent
  }

  @inlinable func receive(subscription: any Subscription) {
    parent.receive(subscription: subscription)
  }
  @inlinable func receive(_ input: Input) -> Subscribers.Demand {
    parent.receive(input, fromFirst: true)
  }
  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    parent.receive(completion: completion)
  }

  @usableFromInline var description: String { parent.description }
  @usableFromInline var customMirror: Mirror { parent.customMirror }
  @usableFromInline var playgroundDescription: Any { parent.playgroundDescription }
}

/// Subscribes a ``RelaySubscription`` to its replacement publisher; described and reflected as
/// the subscription itself, with its `combineIdentifier`.
@usableFromInline
struct RelayTail<Upstream: Publisher, NewPublisher: Publisher, Downstream: Subscriber>: Subscriber,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible
where Upstream.Output == Downstream.Input, NewPublisher.Output == Downstream.Input {
  @usableFromInline typealias Input = NewPublisher.Output
  @usableFromInline typealias Failure = NewPublisher.Failure

  @usableFromInline let parent: RelaySubscription<Upstream, NewPublisher, Downstream>
  @usableFromInline var combineIdentifier: CombineIdentifier { CombineIdentifier(parent) }

  @inlinable init(parent: RelaySubscription<Upstream, NewPublisher, Downstream>) {
    self.parent = parent
  }

  @inlinable func receive(subscription: any Subscription) {
    parent.receive(subscription: subscription)
  }
  @inlinable func receive(_ input: Input) -> Subscribers.Demand {
    parent.receive(input, fromFirst: false)
  }
  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    parent.receiveTail(completion: completion)
  }

  @usableFromInline var description: String { parent.description }
  @usableFromInline var customMirror: Mirror { parent.customMirror }
  @usableFromInline var playgroundDescription: Any { parent.playgroundDescription }
}
