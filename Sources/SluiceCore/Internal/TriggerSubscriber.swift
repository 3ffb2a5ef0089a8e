/// An operator driven by a second publisher's first value (`drop(untilOutputFrom:)`,
/// `prefix(untilOutputFrom:)`).
@usableFromInline
protocol TriggeredSubscription: AnyObject, CustomStringConvertible {
  associatedtype TriggerFailure: Error
  func triggerReceive(subscription: any Subscription)
  func triggerReceiveValue()
  func triggerReceive(completion: Subscribers.Completion<TriggerFailure>)
}

/// Subscribes a ``TriggeredSubscription`` to its trigger publisher: it shares the operator's
/// identity and description, as Combine's does, and has no children.
@usableFromInline
struct TriggerSubscriber<Input, Parent: TriggeredSubscription>: Subscriber,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible
{
  @usableFromInline
  typealias Failure = Parent.TriggerFailure
  @usableFromInline
  let parent: Parent

  @inlinable
  init(parent: Parent) { self.parent = parent }
  @inlinable
  var combineIdentifier: CombineIdentifier { CombineIdentifier(parent) }

  @inlinable
  func receive(subscription: any Subscription) { parent.triggerReceive(subscription: subscription) }
  @inlinable
  func receive(_ input: Input) -> Subscribers.Demand {
    parent.triggerReceiveValue()
    return .none
  }
  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    parent.triggerReceive(completion: completion)
  }

  @inlinable
  var description: String { parent.description }
  @inlinable
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @inlinable
  var playgroundDescription: Any { description }
}

/// The trigger's side of a ``TriggeredSubscription``'s state: the trigger is asked for one
/// value, and cancelled once it has sent it or the operator ends (Combine keeps it: a trigger
/// that never completes would keep the operator and its downstream alive) — never after it
/// completed. A value the trigger sends before its subscription is ignored, as Combine does.
@usableFromInline
struct TriggerState {
  @usableFromInline
  var subscription: (any Subscription)?
  @usableFromInline
  var fired = false
  @usableFromInline
  var done = false
  /// The trigger has handed over its subscription.
  @usableFromInline
  var subscribed = false

  /// A subscription from the trigger: whether to keep it (the caller requests `.max(1)`).
  @inlinable
  mutating func attached(_ subscription: any Subscription) -> Bool {
    guard !subscribed, !fired, !done else { return false }
    subscribed = true
    self.subscription = subscription
    return true
  }

  /// The trigger sent a value: `nil` if it already had, has not subscribed yet (ignored, as
  /// Combine does) or the operator ended; else the subscription to cancel.
  @inlinable
  mutating func fire() -> (any Subscription)?? {
    guard subscribed, !fired, !done else { return nil }
    fired = true
    defer { subscription = nil }
    return .some(subscription)
  }

  /// The trigger completed: it is not cancelled later.
  @inlinable
  mutating func completed() { subscription = nil }

  /// The operator ended: the subscription to cancel.
  @inlinable
  mutating func end() -> (any Subscription)? {
    done = true
    defer { subscription = nil }
    return subscription
  }
}
