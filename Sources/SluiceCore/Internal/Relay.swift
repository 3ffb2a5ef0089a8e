/// The state of a subscription that moves its downstream from one upstream to the next
/// (`retry`, `catch`): the current upstream, the demand the downstream still holds, and the
/// trampoline that keeps resubscription iterative.
///
/// States: `idle` (between upstreams) ⇄ `attached(upstream)` → `terminal`.
///
/// | event | idle | attached | terminal |
/// |---|---|---|---|
/// | `attached(s)` | attached; first time: hand self downstream, else request outstanding | cancel `s` | cancel `s` |
/// | `requested(n)` | outstanding +n | outstanding +n, request n | ignore |
/// | `delivering` / `delivered(more)` | — | outstanding −1 / +more | ignore |
/// | `detached` (upstream failed, will resubscribe) | — | idle | ignore |
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

  /// `false` when the value must be dropped (not attached).
  @inlinable mutating func delivering() -> Bool {
    guard case .attached = phase else { return false }
    outstanding -= 1
    return true
  }

  @inlinable mutating func delivered(more: Subscribers.Demand) {
    if case .attached = phase { outstanding += more }
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
  @inlinable mutating func completed(moveOn: Bool) -> CompletionAction {
    guard case .attached = phase else { return .none }
    if moveOn { return detachedForResubscription() ? .resubscribe : .none }
    return ended() ? .end : .none
  }

  /// The upstream failed and another will follow. Returns whether the caller must run the
  /// subscribe loop (`false`: a loop is running and will pick it up, or terminal).
  @inlinable mutating func detachedForResubscription() -> Bool {
    guard case .attached = phase else { return false }
    phase = .idle
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
