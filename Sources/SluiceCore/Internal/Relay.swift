/// The state of a subscription that moves its downstream from one upstream to the next
/// (`retry`, `catch`, `Concatenate`): the current upstream, the demand the downstream still holds, and the
/// trampoline that keeps resubscription iterative.
///
/// States: `idle` (between upstreams) ⇄ `attached(upstream)` → `terminal`.
///
/// | event | idle | attached | terminal |
/// |---|---|---|---|
/// | `attached(s)` | attached; first time: hand self downstream, else request outstanding | cancel `s` | cancel `s` |
/// | `requested(n)` | outstanding +n | outstanding +n, request n | ignore |
/// | `delivering` | before the first upstream: trap; between upstreams: drop, or (retry) as attached | no outstanding demand: trap; else outstanding −1 | drop |
/// | `delivered(more)` | outstanding +more | outstanding +more (the caller may request it) | ignore |
/// | `completed` | ignore, or (retry) as attached | idle (moving on) or terminal | ignore |
/// | `detached` (upstream failed, will resubscribe) | — | idle, `movedOn` | ignore |
/// | `cancelled` / `ended` | terminal | terminal (cancel upstream when cancelled) | nothing |
///
/// `beginSubscribing` / `endSubscribing` bracket each `subscribe` call: a failure inside one
/// (a synchronous upstream) asks the running loop for another round instead of recursing, so
/// 100,000 retries use constant stack.
@usableFromInline
struct RelayState {
  @usableFromInline enum Phase {
    case idle
    case attached(any Subscription)
    case terminal
  }

  @usableFromInline var phase = Phase.idle
  @usableFromInline var outstanding = Subscribers.Demand.none
  @usableFromInline var handedDownstream = false
  @usableFromInline var subscribing = false
  @usableFromInline var resubscribeRequested = false
  /// An upstream failed and the relay moved on from it (catch: the handler's publisher follows).
  @usableFromInline var movedOn = false

  @inlinable init() {}

  @usableFromInline enum AttachAction {
    case handDownstream
    case request(Subscribers.Demand)
    case cancel
  }

  @inlinable mutating func attached(_ subscription: any Subscription) -> AttachAction {
    guard case .idle = phase else { return .cancel }
    phase = .attached(subscription)
    if !handedDownstream {
      handedDownstream = true
      return .handDownstream
    }
    return .request(outstanding)
  }

  @inlinable mutating func requested(_ demand: Subscribers.Demand) -> (any Subscription)? {
    if case .terminal = phase { return nil }
    outstanding += demand
    if case .attached(let upstream) = phase { return upstream }
    return nil
  }

  /// What to do with a value from an upstream.
  @usableFromInline enum Delivery {
    /// Deliver it downstream (the outstanding demand was decremented).
    case deliver
    /// Drop it: terminal, or between upstreams.
    case drop
    /// A contract violation: no demand is outstanding.
    case unrequested
    /// A contract violation: no upstream has subscribed yet.
    case beforeSubscription
  }

  /// A value arrived; `betweenUpstreams` says whether one arriving between two upstreams (the
  /// next upstream sending before its subscription, as `retry` allows) is delivered.
  @inlinable mutating func delivering(betweenUpstreams: Bool) -> Delivery {
    switch phase {
    case .terminal: return .drop
    case .idle:
      if !handedDownstream { return .beforeSubscription }
      if !betweenUpstreams { return .drop }
    case .attached: break
    }
    if outstanding == .none { return .unrequested }
    outstanding -= 1
    return .deliver
  }

  /// The downstream asked for `more` while receiving a value; returns the upstream to request it
  /// from, when attached.
  @inlinable mutating func delivered(more: Subscribers.Demand) -> (any Subscription)? {
    if case .terminal = phase { return nil }
    outstanding += more
    if case .attached(let upstream) = phase { return upstream }
    return nil
  }

  /// Whether an upstream already completed and was left while the relay goes on: a completion
  /// from that upstream now is a contract violation (catch, Concatenate).
  @inlinable var leftUpstream: Bool {
    if case .terminal = phase { return false }
    return movedOn
  }

  @usableFromInline enum CompletionAction {
    /// Subscribe to the next upstream (run the subscribe loop).
    case resubscribe
    /// Pass the completion downstream: it is the last.
    case end
    /// Nothing to do: terminal, or the running loop will resubscribe.
    case none
  }

  /// The attached upstream completed; `moveOn` says whether another upstream follows.
  /// `acceptingIdle`: a completion with no upstream attached (before the first subscription or
  /// between two) counts too (retry).
  @inlinable mutating func completed(moveOn: Bool, acceptingIdle: Bool = false) -> CompletionAction
  {
    switch phase {
    case .attached: break
    case .idle: if !acceptingIdle { return .none }
    case .terminal: return .none
    }
    if moveOn { return detachedForResubscription() ? .resubscribe : .none }
    return ended() ? .end : .none
  }

  /// The upstream failed and another will follow. Returns whether the caller must run the
  /// subscribe loop (`false`: a loop is running and will pick it up, or terminal).
  @inlinable mutating func detachedForResubscription() -> Bool {
    if case .terminal = phase { return false }
    phase = .idle
    movedOn = true
    if subscribing {
      resubscribeRequested = true
      return false
    }
    return true
  }

  /// The upstream completed for good. `false` when already terminal.
  @inlinable mutating func ended() -> Bool {
    if case .terminal = phase { return false }
    phase = .terminal
    return true
  }

  @inlinable mutating func cancelled() -> (any Subscription)? {
    defer { phase = .terminal }
    if case .attached(let upstream) = phase { return upstream }
    return nil
  }

  @inlinable mutating func beginSubscribing() -> Bool {
    if case .terminal = phase { return false }
    subscribing = true
    resubscribeRequested = false
    return true
  }

  /// `true` when another round is due.
  @inlinable mutating func endSubscribing() -> Bool {
    subscribing = false
    if case .terminal = phase { return false }
    return resubscribeRequested
  }
}

extension RelayState.Delivery {
  /// Whether the value is to be delivered; traps (naming the operator) on a contract violation.
  @inlinable func admits(operator name: @autoclosure () -> String) -> Bool {
    switch self {
    case .deliver: return true
    case .drop: return false
    case .unrequested: Violation.unrequestedValue(operator: name())
    case .beforeSubscription: Violation.signalBeforeSubscription("a value", operator: name())
    }
  }
}
