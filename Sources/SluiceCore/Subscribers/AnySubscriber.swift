/// A type-erasing subscriber, as in Combine.
///
/// Wraps another subscriber, a subject, or three closures. Its `description` is the wrapped
/// subscriber's, `"Subject"` for a subject and `"Anonymous AnySubscriber"` for closures.
public struct AnySubscriber<Input, Failure: Error>: Subscriber, CustomStringConvertible,
  CustomReflectable, CustomPlaygroundDisplayConvertible
{
  @usableFromInline
  let base: any Subscriber<Input, Failure>

  public let combineIdentifier: CombineIdentifier

  /// Wraps `subscriber`; wrapping an `AnySubscriber` again does not nest.
  public init<S: Subscriber>(_ subscriber: S) where S.Input == Input, S.Failure == Failure {
    if let erased = subscriber as? AnySubscriber<Input, Failure> {
      self = erased
    } else {
      base = subscriber
      combineIdentifier = subscriber.combineIdentifier
    }
  }

  /// Wraps `subject`: the subject receives the subscription, values and completion.
  public init<S: Subject>(_ subject: S) where S.Output == Input, S.Failure == Failure {
    self.init(SubjectSubscriber(subject))
  }

  /// Creates a subscriber from closures; a missing `receiveValue` asks for no more values.
  public init(
    receiveSubscription: ((any Subscription) -> Void)? = nil,
    receiveValue: ((Input) -> Subscribers.Demand)? = nil,
    receiveCompletion: ((Subscribers.Completion<Failure>) -> Void)? = nil
  ) {
    base = ClosureSubscriber(
      receiveSubscription: receiveSubscription ?? { _ in },
      receiveValue: receiveValue ?? { _ in .none },
      receiveCompletion: receiveCompletion ?? { _ in })
    combineIdentifier = CombineIdentifier()
  }

  @inlinable
  public func receive(subscription: any Subscription) { base.receive(subscription: subscription) }

  @inlinable
  public func receive(_ value: Input) -> Subscribers.Demand { base.receive(value) }

  @inlinable
  public func receive(completion: Subscribers.Completion<Failure>) {
    base.receive(completion: completion)
  }

  public var description: String {
    if base is ClosureSubscriber<Input, Failure> { return "Anonymous AnySubscriber" }
    if let describable = base as? any CustomStringConvertible { return describable.description }
    return String(describing: type(of: base))
  }

  public var customMirror: Mirror {
    if base is ClosureSubscriber<Input, Failure> {
      return Mirror(reflecting: "Anonymous AnySubscriber")
    }
    return (base as? any CustomReflectable)?.customMirror
      ?? Mirror(base, children: EmptyCollection())
  }

  public var playgroundDescription: Any {
    (base as? any CustomPlaygroundDisplayConvertible)?.playgroundDescription ?? description
  }
}

/// The subscriber behind `AnySubscriber(receiveSubscription:receiveValue:receiveCompletion:)`.
private final class ClosureSubscriber<Input, Failure: Error>: Subscriber {
  let receiveSubscription: (any Subscription) -> Void
  let receiveValue: (Input) -> Subscribers.Demand
  let receiveCompletion: (Subscribers.Completion<Failure>) -> Void

  init(
    receiveSubscription: @escaping (any Subscription) -> Void,
    receiveValue: @escaping (Input) -> Subscribers.Demand,
    receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void
  ) {
    self.receiveSubscription = receiveSubscription
    self.receiveValue = receiveValue
    self.receiveCompletion = receiveCompletion
  }

  func receive(subscription: any Subscription) { receiveSubscription(subscription) }
  func receive(_ input: Input) -> Subscribers.Demand { receiveValue(input) }
  func receive(completion: Subscribers.Completion<Failure>) { receiveCompletion(completion) }
}
