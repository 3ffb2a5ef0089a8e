extension Publishers {
  /// A publisher that uses a subject to deliver elements to multiple subscribers, as in
  /// Combine.
  ///
  /// ![Marble diagram: input.multicast { PassthroughSubject() }](multicast)
  ///
  /// The subject is created once, on the first subscription or `connect()`. Subscribers attach
  /// to the subject (each through a `"Multicast"` subscription of its own); nothing flows from
  /// upstream until `connect()`, which subscribes the subject to the upstream, holding it weakly
  /// (its subscribers keep it alive). **Demand**: the subject asks the upstream for what it
  /// wants (`.unlimited` for Sluice's subjects) and serves each subscriber against its own
  /// demand; demand a subscriber returns from `receive(_:)` is passed to the subject as a
  /// request. **Cancellation**: cancelling what `connect()` returned disconnects from the
  /// upstream; cancelling a subscriber detaches only that subscriber.
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
      lazySubject.receive(subscriber: MulticastInner(downstream: subscriber))
    }

    /// Subscribes the subject to the upstream; the connection holds the subject weakly.
    public func connect() -> any Cancellable {
      let subscriber = SubjectSubscriber(lazySubject, holdingWeakly: true)
      upstream.subscribe(subscriber)
      return AnyCancellable(subscriber)
    }
  }
}

/// One subscriber of a ``Publishers/Multicast``: the subject's subscriber and the downstream's
/// subscription (`"Multicast"`), as Combine's inner object is.
///
/// States (``SubscriberLifecycle``): awaiting subscription → subscribed → terminal.
/// | event | awaiting | subscribed | terminal |
/// |---|---|---|---|
/// | subscription `s` | subscribed; hand self downstream | cancel `s` | cancel `s` |
/// | value | drop | deliver; returned demand requested from the subject; return `.none` | drop |
/// | completion | forward, terminal | forward, terminal | ignore |
/// | `request(n)` | ignore | request `n` from the subject | ignore |
/// | `cancel()` | terminal | terminal; cancel the subject's subscription | nothing |
///
/// The downstream is released on completion and on cancel.
final class MulticastInner<Downstream: Subscriber>: Subscriber, Subscription,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
{
  // Safety: all mutable state is in `box`'s lock; the downstream and the subject's
  // subscription are called after unlocking.
  typealias Input = Downstream.Input
  typealias Failure = Downstream.Failure

  private let box: LifecycleBox<Downstream>

  init(downstream: Downstream) {
    box = LifecycleBox(downstream)
  }

  func receive(subscription: any Subscription) {
    if box.receive(subscription: subscription, requesting: .none),
      let downstream = box.payloadForValue()
    {
      downstream.receive(subscription: self)
    }
  }

  func receive(_ input: Input) -> Subscribers.Demand {
    guard let downstream = box.payloadForValue() else { return .none }
    let more = downstream.receive(input)
    if more > 0 { box.subscription?.request(more) }
    return .none
  }

  func receive(completion: Subscribers.Completion<Failure>) {
    box.payloadForCompletion()?.receive(completion: completion)
  }

  func request(_ demand: Subscribers.Demand) { box.subscription?.request(demand) }

  func cancel() { box.cancel() }

  var description: String { "Multicast" }
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  var playgroundDescription: Any { description }
}

extension Publisher {
  /// Shares this publisher through a subject made by `createSubject` (once), connecting when
  /// `connect()` is called.
  ///
  /// ![Marble diagram: input.multicast { PassthroughSubject() }](multicast)
  public func multicast<S: Subject>(_ createSubject: @escaping () -> S)
    -> Publishers.Multicast<Self, S>
  where Failure == S.Failure, Output == S.Output {
    Publishers.Multicast(upstream: self, createSubject: createSubject)
  }

  /// Shares this publisher through `subject`, connecting when `connect()` is called.
  ///
  /// ![Marble diagram: input.multicast(subject: CurrentValueSubject("z"))](multicast-subject)
  public func multicast<S: Subject>(subject: S) -> Publishers.Multicast<Self, S>
  where Failure == S.Failure, Output == S.Output {
    Publishers.Multicast(upstream: self) { subject }
  }
}
