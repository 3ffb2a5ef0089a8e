extension Publishers {
  /// A publisher that uses a subject to deliver elements to multiple subscribers, as in
  /// Combine.
  ///
  /// The subject is created once, on the first subscription or `connect()`. Subscribers attach
  /// to the subject; nothing flows from upstream until `connect()`, which subscribes the subject
  /// to the upstream. **Demand**: the subject asks the upstream for `.unlimited` and serves each
  /// subscriber against its own demand (values a subscriber has not demanded are dropped for it,
  /// as with any subject). **Cancellation**: cancelling what `connect()` returned disconnects
  /// from the upstream; cancelling a subscriber detaches only that subscriber.
  public final class Multicast<Upstream: Publisher, SubjectType: Subject>: ConnectablePublisher,
    @unchecked Sendable
  where SubjectType.Output == Upstream.Output, SubjectType.Failure == Upstream.Failure {
    // Safety: the lazily created subject is in a lock; it is used after unlocking.
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher that this publisher receives elements from.
    public let upstream: Upstream

    /// A closure to create a new subject; called at most once.
    public let createSubject: () -> SubjectType

    private let subject = Lock<SubjectType?>(nil)

    /// Creates a multicast publisher.
    public init(upstream: Upstream, createSubject: @escaping () -> SubjectType) {
      self.upstream = upstream
      self.createSubject = createSubject
    }

    private var lazySubject: SubjectType {
      if let existing = subject.withLock({ $0 }) { return existing }
      let made = createSubject()
      return subject.withLock { current in
        if let current { return current }
        current = made
        return made
      }
    }

    public func receive<S: Subscriber>(subscriber: S)
    where S.Input == Output, S.Failure == Failure {
      lazySubject.receive(subscriber: subscriber)
    }

    /// Subscribes the subject to the upstream.
    public func connect() -> any Cancellable {
      upstream.subscribe(lazySubject)
    }
  }

  /// A connectable publisher that shares one upstream subscription through a
  /// `PassthroughSubject`, as in Combine.
  public struct MakeConnectable<Upstream: Publisher>: ConnectablePublisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    private let inner: Multicast<Upstream, PassthroughSubject<Output, Failure>>

    /// Creates a connectable publisher that shares `upstream`.
    public init(upstream: Upstream) {
      inner = Multicast(upstream: upstream) { PassthroughSubject() }
    }

    public func receive<S: Subscriber>(subscriber: S)
    where S.Input == Output, S.Failure == Failure {
      inner.receive(subscriber: subscriber)
    }

    public func connect() -> any Cancellable { inner.connect() }
  }

  /// A publisher that connects to its connectable upstream when the first subscriber attaches
  /// and disconnects when the last one cancels, as in Combine.
  ///
  /// **Ordering**: a subscriber is attached before the connection is made, so the first
  /// subscriber does not miss values the upstream sends as soon as it is connected.
  /// **Cancellation**: when the last subscriber cancels, the connection is cancelled; a later
  /// subscriber connects again.
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

/// Counts a subscriber of an `Autoconnect` out when it cancels.
private final class AutoconnectSubscriber<Upstream: ConnectablePublisher, Downstream: Subscriber>:
  Subscriber, Subscription, CustomStringConvertible, @unchecked Sendable
where Upstream.Output == Downstream.Input, Upstream.Failure == Downstream.Failure {
  // Safety: the upstream subscription is in the lifecycle box; `left` is in a lock.
  typealias Input = Downstream.Input
  typealias Failure = Downstream.Failure

  private let parent: Publishers.Autoconnect<Upstream>
  private let downstream: Downstream
  private let box = LifecycleBox<Void>(())
  private let left = Lock(false)

  init(parent: Publishers.Autoconnect<Upstream>, downstream: Downstream) {
    self.parent = parent
    self.downstream = downstream
  }

  func receive(subscription: any Subscription) {
    if box.receive(subscription: subscription, requesting: .none) {
      downstream.receive(subscription: self)
    }
  }

  func receive(_ input: Input) -> Subscribers.Demand { downstream.receive(input) }

  func receive(completion: Subscribers.Completion<Failure>) {
    downstream.receive(completion: completion)
  }

  func request(_ demand: Subscribers.Demand) { box.subscription?.request(demand) }

  func cancel() {
    box.cancel()
    let first = left.withLock { left in
      defer { left = true }
      return !left
    }
    if first { parent.subscriberLeft() }
  }

  var description: String { "Autoconnect" }
}

extension Publisher {
  /// Shares this publisher through a subject made by `createSubject` (once), connecting when
  /// `connect()` is called.
  public func multicast<S: Subject>(_ createSubject: @escaping () -> S)
    -> Publishers.Multicast<Self, S>
  where Failure == S.Failure, Output == S.Output {
    Publishers.Multicast(upstream: self, createSubject: createSubject)
  }

  /// Shares this publisher through `subject`, connecting when `connect()` is called.
  public func multicast<S: Subject>(subject: S) -> Publishers.Multicast<Self, S>
  where Failure == S.Failure, Output == S.Output {
    Publishers.Multicast(upstream: self) { subject }
  }
}

extension Publisher where Failure == Never {
  /// Creates a connectable wrapper around this publisher.
  public func makeConnectable() -> Publishers.MakeConnectable<Self> {
    Publishers.MakeConnectable(upstream: self)
  }
}

extension ConnectablePublisher {
  /// Connects to the upstream when the first subscriber attaches and disconnects when the
  /// last one cancels.
  public func autoconnect() -> Publishers.Autoconnect<Self> {
    Publishers.Autoconnect(upstream: self)
  }
}
