import SluiceCore

/// A publisher that keeps its subscriber and sends nothing on its own: the test decides when the
/// subscription, values and completion arrive (before the subscription included).
final class HeldPublisher<Output, Failure: Error>: Publisher, @unchecked Sendable {
  // Safety: used from one test's thread at a time.
  private var held: AnySubscriber<Output, Failure>?
  /// What the operator under test handed upstream.
  private(set) var subscriberObject: Any?

  func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
    subscriberObject = subscriber
    held = AnySubscriber(subscriber)
  }

  private var subscriber: AnySubscriber<Output, Failure> {
    guard let held else { fatalError("nobody subscribed") }
    return held
  }

  func send(subscription: any Subscription) { subscriber.receive(subscription: subscription) }
  func send(_ value: Output) -> Subscribers.Demand { subscriber.receive(value) }
  func send(completion: Subscribers.Completion<Failure>) {
    subscriber.receive(completion: completion)
  }

  /// Lets go of the subscriber without a signal, at the end of a test: a subscriber that never
  /// got a subscription or a completion and this publisher would otherwise keep each other
  /// (through an operator that holds its parent publisher, as autoconnect's does).
  func release() {
    held = nil
    subscriberObject = nil
  }
}

/// `value`'s custom mirror (unwrapping an optional first), `nil` if it has none.
func customMirror(of value: Any?) -> Mirror? {
  guard let value, let reflectable = value as? any CustomReflectable else { return nil }
  return reflectable.customMirror
}

/// The labels of `value`'s custom mirror.
func mirrorLabels(_ value: Any?) -> [String?] {
  customMirror(of: value)?.children.map(\.label) ?? ["<not reflectable>"]
}
