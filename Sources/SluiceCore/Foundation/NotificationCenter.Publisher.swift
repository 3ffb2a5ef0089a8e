public import Foundation

extension NotificationCenter {
  /// A publisher of the notifications named `name` (from `object`, when given) that this center
  /// posts — Combine's `NotificationCenter.Publisher`.
  ///
  /// ![Marble diagram: center.publisher(for: .thermostatChanged)](notificationCenter)
  ///
  /// **Demand**: a notification that finds the subscriber without demand is not delivered (not
  /// buffered), as in Combine. **Ordering**: one notification at a time, on the posting thread
  /// (one posted on another thread while one is delivered waits for it). It never completes.
  /// **Cancellation** removes the observer and releases the subscriber.
  public struct Publisher: SluiceCore.Publisher, Equatable, @unchecked Sendable {
    // Safety: immutable; `NotificationCenter` is thread-safe; `object` is only compared.
    public typealias Output = Notification
    public typealias Failure = Never

    /// The center observed.
    public let center: NotificationCenter
    /// The name of the notifications published.
    public let name: Notification.Name
    /// The object whose notifications are published; `nil`: any object's.
    public let object: AnyObject?

    /// Creates a publisher of `center`'s notifications named `name`, from `object` if given.
    public init(center: NotificationCenter, name: Notification.Name, object: AnyObject? = nil) {
      self.center = center
      self.name = name
      self.object = object
    }

    public func receive<S: Subscriber>(subscriber: S)
    where S.Input == Notification, S.Failure == Never {
      let subscription = NotificationSubscription(
        center: center, name: name, object: object, downstream: subscriber)
      subscriber.receive(subscription: subscription)
      subscription.observe()
    }

    public static func == (lhs: Publisher, rhs: Publisher) -> Bool {
      lhs.center === rhs.center && lhs.name == rhs.name && lhs.object === rhs.object
    }
  }

  /// Publishes the notifications named `name` (from `object`, when given) that this center
  /// posts; see ``NotificationCenter/Publisher``.
  ///
  /// ![Marble diagram: center.publisher(for: .thermostatChanged)](notificationCenter)
  public func publisher(for name: Notification.Name, object: AnyObject? = nil) -> Publisher {
    Publisher(center: self, name: name, object: object)
  }
}

/// A subscriber's observer of a `NotificationCenter`: `"NotificationCenter Observer"`, mirror
/// `center, name, object, demand`.
private final class NotificationSubscription<Downstream: Subscriber>: Subscription,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
where Downstream.Input == Notification, Downstream.Failure == Never {
  // Safety: all mutable state is in `state`'s lock; the center and the downstream are called
  // after unlocking, the downstream through the serial delivery.
  struct State {
    var demand = Subscribers.Demand.none
    var observer: (any NSObjectProtocol)?
    var cancelled = false
  }

  let center: NotificationCenter
  let name: Notification.Name
  let object: AnyObject?
  let state = Lock(State())
  private(set) var delivery: SerialDelivery<Downstream>!

  init(
    center: NotificationCenter, name: Notification.Name, object: AnyObject?, downstream: Downstream
  ) {
    self.center = center
    self.name = name
    self.object = object
    delivery = SerialDelivery(downstream) { [unowned self] more in
      state.withLock { $0.demand += more }
    }
  }

  /// Adds the observer (unless cancelled already, e.g. from `receive(subscription:)`).
  func observe() {
    // Safety: the handler only reaches this subscription, which is thread-safe.
    let handler = UncheckedSendable<(Notification) -> Void>({ [weak self] in self?.received($0) })
    let observer = center.addObserver(forName: name, object: object, queue: nil) { note in
      handler.value(note)
    }
    let stale = state.withLock { state -> (any NSObjectProtocol)? in
      guard !state.cancelled else { return observer }
      state.observer = observer
      return nil
    }
    if let stale { center.removeObserver(stale) }
  }

  private func received(_ notification: Notification) {
    let delivers = state.withLock { state -> Bool in
      guard !state.cancelled, state.demand > 0 else { return false }
      if state.demand != .unlimited { state.demand -= 1 }
      return true
    }
    guard delivers else { return }
    let more = delivery.send(.value(notification))
    if more > 0 { state.withLock { $0.demand += more } }
  }

  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    state.withLock { state in
      if !state.cancelled { state.demand += demand }
    }
  }

  func cancel() {
    let observer = state.withLock { state -> (any NSObjectProtocol)? in
      state.cancelled = true
      defer { state.observer = nil }
      return state.observer
    }
    if let observer { center.removeObserver(observer) }
    delivery.end()
  }

  var description: String { "NotificationCenter Observer" }
  var customMirror: Mirror {
    let demand = state.withLock { $0.demand }
    return Mirror(
      self,
      children: [
        ("center", center), ("name", name), ("object", object as Any), ("demand", demand),
      ])
  }
  var playgroundDescription: Any { description }
}
