extension Publishers {
  /// A publisher that connects to its connectable upstream when the first subscriber attaches
  /// and disconnects when the last one cancels, as in Combine.
  ///
  /// ![Marble diagram: input.makeConnectable().autoconnect()](autoconnect)
  ///
  /// **Demand**: passed through: each subscriber sees the upstream's own subscription (its
  /// `description` and `combineIdentifier`), wrapped only to count cancellations.
  /// **Ordering**: a subscriber is attached before the connection is made, so the first
  /// subscriber does not miss values the upstream sends as soon as it is connected.
  /// **Cancellation**: when the last subscriber cancels, the connection is cancelled; a later
  /// subscriber connects again. A subscriber that subscribes re-entrantly while `connect()` runs
  /// does not connect a second time.
  public final class Autoconnect<Upstream: ConnectablePublisher>: Publisher, @unchecked Sendable {
    // Safety: the subscriber count and the connection are in a lock; the upstream is connected
    // and disconnected after unlocking.
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    private struct State {
      var subscribers = 0
      var connection: (any Cancellable)?
      var connecting = false
    }

    /// The connectable publisher that this publisher connects to.
    public let upstream: Upstream
    private let state = Lock(State())

    /// Creates an auto-connecting publisher.
    public init(upstream: Upstream) {
      self.upstream = upstream
    }

    public func receive<S: Subscriber>(subscriber: S)
    where S.Input == Output, S.Failure == Failure {
      upstream.receive(subscriber: AutoconnectSubscriber(parent: self, downstream: subscriber))
      let mustConnect = state.withLock { state in
        state.subscribers += 1
        guard state.connection == nil, !state.connecting else { return false }
        state.connecting = true
        return true
      }
      guard mustConnect else { return }
      let connection = upstream.connect()
      let stale = state.withLock { state -> (any Cancellable)? in
        state.connecting = false
        if state.subscribers == 0 { return connection }  // everyone left while connecting
        state.connection = connection
        return nil
      }
      stale?.cancel()
    }

    fileprivate func subscriberLeft() {
      let connection = state.withLock { state -> (any Cancellable)? in
        state.subscribers -= 1
        guard state.subscribers == 0 else { return nil }
        defer { state.connection = nil }
        return state.connection
      }
      connection?.cancel()
    }
  }
}

/// What an `Autoconnect` subscribes to its upstream for one downstream subscriber
/// (`"Autoconnect"`, mirror `parent`, `downstream`).
///
/// It passes every signal through, handing the downstream an ``AutoconnectSubscription`` around
/// the upstream's subscription. Its one state: whether it has been counted out (the first
/// `cancel()` counts it out of the parent's reference count, and may disconnect).
private final class AutoconnectSubscriber<Upstream: ConnectablePublisher, Downstream: Subscriber>:
  Subscriber, Cancellable, CustomStringConvertible, CustomReflectable,
  CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
where Upstream.Output == Downstream.Input, Upstream.Failure == Downstream.Failure {
  // Safety: the upstream subscription is in the lifecycle box; the downstream and parent are
  // immutable; the downstream is called after unlocking.
  typealias Input = Downstream.Input
  typealias Failure = Downstream.Failure

  private let parent: Publishers.Autoconnect<Upstream>
  private let downstream: Downstream
  private let box = LifecycleBox<Void>(())

  init(parent: Publishers.Autoconnect<Upstream>, downstream: Downstream) {
    self.parent = parent
    self.downstream = downstream
  }

  func receive(subscription: any Subscription) {
    if box.receive(subscription: subscription, requesting: .none) {
      downstream.receive(subscription: AutoconnectSubscription(upstream: subscription, owner: self))
    }
  }

  func receive(_ input: Input) -> Subscribers.Demand { downstream.receive(input) }

  func receive(completion: Subscribers.Completion<Failure>) {
    downstream.receive(completion: completion)
  }

  /// Cancels the upstream subscription and counts this subscriber out, once.
  func cancel() {
    var first = false
    box.cancel(whenLive: { first = true })
    if first { parent.subscriberLeft() }
  }

  var description: String { "Autoconnect" }
  var customMirror: Mirror {
    Mirror(self, children: [("parent", parent as Any), ("downstream", downstream as Any)])
  }
  var playgroundDescription: Any { description }
}

/// The thin subscription an `Autoconnect` subscriber sees: the upstream's own subscription (its
/// `description` and `combineIdentifier`), except that `cancel()` also counts the subscriber out
/// of the autoconnect's reference count.
private struct AutoconnectSubscription<Owner: AnyObject & Cancellable>: Subscription,
  CustomStringConvertible, CustomPlaygroundDisplayConvertible
{
  let upstream: any Subscription
  let owner: Owner

  init(upstream: any Subscription, owner: Owner) {
    self.upstream = upstream
    self.owner = owner
  }

  var combineIdentifier: CombineIdentifier { upstream.combineIdentifier }
  func request(_ demand: Subscribers.Demand) { upstream.request(demand) }
  func cancel() { owner.cancel() }

  var description: String { String(describing: upstream) }
  var playgroundDescription: Any { description }
}

extension ConnectablePublisher {
  /// Connects to the upstream when the first subscriber attaches and disconnects when the
  /// last one cancels.
  ///
  /// ![Marble diagram: input.makeConnectable().autoconnect()](autoconnect)
  public func autoconnect() -> Publishers.Autoconnect<Self> {
    Publishers.Autoconnect(upstream: self)
  }
}
