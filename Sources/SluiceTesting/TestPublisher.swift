public import SluiceCore

/// A publisher a test drives by hand, which records every `request` and `cancel` it receives.
///
/// `send(_:)` delivers to every subscriber that has not cancelled, **whether or not it asked for
/// the value**: the test decides, so it can also play a misbehaving upstream. Each subscriber
/// gets its own ``TestSubscription``, which keeps the history of its demand.
///
/// ```swift
/// let upstream = TestPublisher<Int, Never>()
/// let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2))
/// upstream.subscribe(recorder)
/// upstream.subscriptions[0].requests   // [max(2)]
/// upstream.send(1)
/// upstream.subscriptions[0].outstandingDemand   // max(1)
/// ```
public final class TestPublisher<Output, Failure: Error>: Publisher, @unchecked Sendable {
  // Safety: all mutable state is in `state`'s lock; subscribers are called after unlocking.
  private struct Attached {
    let subscriber: AnySubscriber<Output, Failure>
    let subscription: TestSubscription
  }

  private struct State {
    /// Subscribers still attached: like a real publisher, it lets go of a subscriber when the
    /// subscriber cancels or receives a completion.
    var attached: [Attached] = []
    /// Every subscription ever handed out, kept for inspection.
    var subscriptions: [TestSubscription] = []
    var subscriberDescriptions: [String] = []
  }

  private let state = Lock(State())
  private let subscriptionDescription: String

  /// Creates a publisher whose subscriptions describe themselves as `subscriptionDescription`.
  public init(subscriptionDescription: String = "TestSubscription") {
    self.subscriptionDescription = subscriptionDescription
  }

  public func receive<S: Subscriber>(subscriber: S) where Output == S.Input, Failure == S.Failure {
    let subscription = TestSubscription(description: subscriptionDescription)
    subscription.onFirstCancel { [weak self, weak subscription] in
      self?.detach(subscription)
    }
    state.withLock { state in
      state.attached.append(
        Attached(subscriber: AnySubscriber(subscriber), subscription: subscription))
      state.subscriptions.append(subscription)
      state.subscriberDescriptions.append(String(describing: subscriber))
    }
    subscriber.receive(subscription: subscription)
  }

  /// The `description` of each subscriber, in subscription order: for an operator, the name
  /// Combine gives its subscription ("Map", "Filter", …).
  public var subscriberDescriptions: [String] { state.withLock { $0.subscriberDescriptions } }

  /// The subscriptions handed out so far, in subscription order.
  public var subscriptions: [TestSubscription] { state.withLock { $0.subscriptions } }

  /// Delivers `value` to every subscriber that is still attached, regardless of demand, and
  /// returns how many received it.
  @discardableResult
  public func send(_ value: Output) -> Int {
    let attached = state.withLock { $0.attached }
    for each in attached {
      each.subscription.recordDelivery()
      let more = each.subscriber.receive(value)
      if more > 0 { each.subscription.recordReturnedDemand(more) }
    }
    return attached.count
  }

  /// Delivers `completion` to every subscriber that is still attached, then lets go of them.
  public func send(completion: Subscribers.Completion<Failure>) {
    let attached = state.withLock { state in
      defer { state.attached = [] }
      return state.attached
    }
    for each in attached { each.subscriber.receive(completion: completion) }
  }

  private func detach(_ subscription: TestSubscription?) {
    let removed = state.withLock { state -> [Attached] in
      let removed = state.attached.filter { $0.subscription === subscription }
      state.attached.removeAll { $0.subscription === subscription }
      return removed
    }
    withExtendedLifetime(removed) {}
  }
}

/// A subscription that records the demand and cancellations it receives.
///
/// It delivers nothing by itself; use it alone to test a subscriber, or through
/// ``TestPublisher``.
public final class TestSubscription: Subscription, CustomStringConvertible, @unchecked Sendable {
  // Safety: all mutable state is in `state`'s lock.
  private struct State {
    var requests: [Subscribers.Demand] = []
    var cancelCount = 0
    var demanded = Subscribers.Demand.none
    var delivered = 0
    var onFirstCancel: (@Sendable () -> Void)?
  }

  private let state = Lock(State())
  public let description: String

  /// A subscription that describes itself as `description`.
  public init(description: String = "TestSubscription") {
    self.description = description
  }

  public func request(_ demand: Subscribers.Demand) {
    state.withLock { state in
      state.requests.append(demand)
      state.demanded += demand
    }
  }

  public func cancel() {
    let onFirstCancel = state.withLock { state in
      state.cancelCount += 1
      defer { state.onFirstCancel = nil }
      return state.onFirstCancel
    }
    onFirstCancel?()
  }

  func onFirstCancel(_ action: @escaping @Sendable () -> Void) {
    state.withLock { $0.onFirstCancel = action }
  }

  /// Every `request` received, in order.
  public var requests: [Subscribers.Demand] { state.withLock { $0.requests } }

  /// How many times `cancel()` was called.
  public var cancelCount: Int { state.withLock { $0.cancelCount } }

  /// Whether `cancel()` was called at least once.
  public var isCancelled: Bool { cancelCount > 0 }

  /// All demand received: requests plus demand returned from `receive(_:)`.
  public var totalDemand: Subscribers.Demand { state.withLock { $0.demanded } }

  /// How many values the test publisher delivered through this subscription.
  public var deliveredCount: Int { state.withLock { $0.delivered } }

  /// Demand not yet used by a delivery (never negative).
  public var outstandingDemand: Subscribers.Demand {
    state.withLock { $0.demanded - $0.delivered }
  }

  func recordDelivery() { state.withLock { $0.delivered += 1 } }

  func recordReturnedDemand(_ demand: Subscribers.Demand) {
    state.withLock { $0.demanded += demand }
  }
}
