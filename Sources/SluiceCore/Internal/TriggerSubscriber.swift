/// An operator driven by a second publisher's first value (`drop(untilOutputFrom:)`,
/// `prefix(untilOutputFrom:)`).
protocol TriggeredSubscription: AnyObject, CustomStringConvertible {
  associatedtype TriggerFailure: Error
  func triggerReceive(subscription: any Subscription)
  func triggerReceiveValue()
  func triggerReceive(completion: Subscribers.Completion<TriggerFailure>)
}

/// Subscribes a ``TriggeredSubscription`` to its trigger publisher: it shares the operator's
/// identity and description, as Combine's does, and has no children.
struct TriggerSubscriber<Input, Parent: TriggeredSubscription>: Subscriber,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible
{
  typealias Failure = Parent.TriggerFailure
  let parent: Parent
  var combineIdentifier: CombineIdentifier { CombineIdentifier(parent) }

  func receive(subscription: any Subscription) { parent.triggerReceive(subscription: subscription) }
  func receive(_ input: Input) -> Subscribers.Demand {
    parent.triggerReceiveValue()
    return .none
  }
  func receive(completion: Subscribers.Completion<Failure>) {
    parent.triggerReceive(completion: completion)
  }

  var description: String { parent.description }
  var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  var playgroundDescription: Any { description }
}

/// The trigger's side of a ``TriggeredSubscription``'s state: the trigger is asked for one
/// value, and cancelled once it has sent it or the operator ends (Combine keeps it: a trigger
/// that never completes would keep the operator and its downstream alive).
struct TriggerState {
  var subscription: (any Subscription)?
  var fired = false
  var done = false

  /// A subscription from the trigger: whether to keep it (the caller requests `.max(1)`).
  mutating func attached(_ subscription: any Subscription) -> Bool {
    guard self.subscription == nil, !fired, !done else { return false }
    self.subscription = subscription
    return true
  }

  /// The trigger sent a value: `nil` if it already had (or the operator ended), else the
  /// subscription to cancel.
  mutating func fire() -> (any Subscription)?? {
    guard !fired, !done else { return nil }
    fired = true
    defer { subscription = nil }
    return .some(subscription)
  }

  /// The operator ended: the subscription to cancel.
  mutating func end() -> (any Subscription)? {
    done = true
    defer { subscription = nil }
    return subscription
  }
}
