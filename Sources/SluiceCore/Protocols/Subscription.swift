/// A protocol representing the connection of a subscriber to a publisher, as in Combine.
///
/// `request(_:)` and `cancel()` may be called from any thread, concurrently with each other and
/// with the publisher's signals. `cancel()` is idempotent.
public protocol Subscription: Cancellable, CustomCombineIdentifierConvertible {
  /// Tells the publisher that it may send `demand` more values to the subscriber.
  func request(_ demand: Subscribers.Demand)
}

/// A namespace for symbols related to subscriptions, as in Combine.
public enum Subscriptions {}

extension Subscriptions {
  /// A subscription that does nothing: `request(_:)` and `cancel()` are no-ops.
  ///
  /// Publishers that complete without ever producing a value (`Empty`, `Fail`, a completed
  /// subject) hand it to their subscribers before the completion.
  public static var empty: any Subscription { emptySubscription }
}

private let emptySubscription = EmptySubscription()

private final class EmptySubscription: Subscription, CustomStringConvertible,
  CustomReflectable, CustomPlaygroundDisplayConvertible, Sendable
{
  let combineIdentifier = CombineIdentifier()
  func request(_ demand: Subscribers.Demand) {}
  func cancel() {}
  var description: String { "Empty" }
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  var playgroundDescription: Any { description }
}
