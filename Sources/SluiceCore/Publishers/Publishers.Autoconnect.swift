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

    @usableFromInline struct State {
      @usableFromInline var subscribers = 0
      @usableFromInline var connection: (any Cancellable)?
      @usableFromInline var connecting = false
      @inlinable init() {}
    }

    /// The connectable publisher that this publisher connects to.
    public let upstream: Upstream
    @usableFromInline let state = Lock(State())

    /// Creates an auto-connecting publisher.
    public init(upstream: Upstream) {
      self.upstream = upstream
    }

    @inlinable
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

    @usableFromInline func subscriberLeft() {
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
/// the upstream's subscription. Its state (``SubscriberLifecycle``, the downstream as payload):
/// the first `cancel()` counts it out of the parent's reference count (and may disconnect), and
/// cancel and completion release the downstream, which may keep its subscription — and through
/// it this object — after cancelling it.
@usableFromInline
final class AutoconnectSubscriber<Upstream: ConnectablePublisher, Downstream: Subscriber>:
  Subscriber, Cancellable, CustomStringConvertible, CustomReflectable,
  CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
where Upstream.Output == Downstream.Input, Upstream.Failure == Downstream.Failure {
  // Safety: the upstream subscription and the downstream are in the lifecycle box; the parent is
  // immutable; the downstream is called after unlocking.
  @usableFromInline typealias Input = Downstream.Input
  @usableFromInline typealias Failure = Downstream.Failure

  @usableFromInline let parent: Publishers.Autoconnect<Upstream>
  @usableFromInline let box: LifecycleBox<Downstream>

  @inlinable init(parent: Publishers.Autoconnect<Upstream>, downstream: Downstream) {
    self.parent = parent
    box = LifecycleBox(downstream)
  }

  @inlinable func receive(subscription: any Subscription) {
    if box.receive(subscription: subscription, requesting: .none),
      let downstream = box.payloadForValue()
    {
      downstream.receive(subscription: AutoconnectSubscription(upstream: subscription, owner: self))
    }
  }

  @inlinable func receive(_ input: Input) -> Subscribers.Demand {
    // Before the subscription too: passed through as it comes.
    box.payloadForValue(beforeSubscription: true)?.receive(input) ?? .none
  }

  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    box.payloadForCompletion()?.receive(completion: completion)
  }

  /// Cancels the upstream subscription and counts this subscriber out, once.
  @inlinable func cancel() {
    var first = false
    box.cancel(whenLive: { first = true })
    if first { parent.subscriberLeft() }
  }

  @usableFromInline var description: String { "Autoconnect" }
  @usableFromInline var customMirror: Mirror {
    // The downstream until cancel or completion, then `nil`.
    let downstream: Any = box.payload.map { $0 as Any } ?? (nil as Downstream?) as Any
    return Mirror(self, children: [("parent", parent as Any), ("downstream", downstream)])
  }
  @usableFromInline var playgroundDescription: Any { description }
}

/// The thin subscription an `Autoconnect` subscriber sees: the upstream's own subscription (its
/// `description` and `combineIdentifier`), except that `cancel()` also counts the subscriber out
/// of the autoconnect's reference count.
@usableFromInline
struct AutoconnectSubscription<Owner: AnyObject & Cancellable>: Subscription,
  CustomStringConvertible, CustomPlaygroundDisplayConvertible
{
  @usableFromInline let upstream: any Subscription
  @usableFromInline let owner: Owner

  @inlinable init(upstream: any Subscription, owner: Owner) {
    self.upstream = upstream
    self.owner = owner
  }

  @inlinable var combineIdentifier: CombineIdentifier { upstream.combineIdentifier }
  @inlinable func request(_ demand: Subscribers.Demand) { upstream.request(demand) }
  @inlinable func cancel() { owner.cancel() }

  @usableFromInline var description: String { String(describing: upstream) }
  @usableFromInline var playgroundDescription: Any { description }
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
