/// A type-erasing subscriber, as in Combine.
///
/// Wraps another subscriber, a subject, or three closures. Its `description` is the wrapped
/// subscriber's, `"Subject"` for a subject and `"Anonymous AnySubscriber"` for closures.
///
/// **Cost.** A value reaches the wrapped subscriber through one indirect call to code made, and
/// specialised, where it was wrapped (see `AnySubscriberBox`): no existential, no generic
/// metadata lookups. This is what keeps an ``AnyPublisher`` as fast as what it wraps.
public struct AnySubscriber<Input, Failure: Error>: Subscriber, CustomStringConvertible,
  CustomReflectable, CustomPlaygroundDisplayConvertible
{
  @usableFromInline
  let box: AnySubscriberBox<Input, Failure>

  public let combineIdentifier: CombineIdentifier

  /// Wraps `subscriber`; wrapping an `AnySubscriber` again does not nest.
  @inlinable
  public init<S: Subscriber>(_ subscriber: S) where S.Input == Input, S.Failure == Failure {
    if let erased = subscriber as? AnySubscriber<Input, Failure> {
      self = erased
    } else {
      box = SubscriberBox(subscriber)
      combineIdentifier = subscriber.combineIdentifier
    }
  }

  /// Wraps `subject`: the subject receives the subscription, values and completion.
  @inlinable
  public init<S: Subject>(_ subject: S) where S.Output == Input, S.Failure == Failure {
    self.init(SubjectSubscriber(subject))
  }

  /// Creates a subscriber from closures; a missing `receiveValue` asks for no more values.
  public init(
    receiveSubscription: ((any Subscription) -> Void)? = nil,
    receiveValue: ((Input) -> Subscribers.Demand)? = nil,
    receiveCompletion: ((Subscribers.Completion<Failure>) -> Void)? = nil
  ) {
    box = SubscriberBox(
      ClosureSubscriber(
        receiveSubscription: receiveSubscription ?? { _ in },
        receiveValue: receiveValue ?? { _ in .none },
        receiveCompletion: receiveCompletion ?? { _ in }))
    combineIdentifier = CombineIdentifier()
  }

  @inlinable
  public func receive(subscription: any Subscription) {
    box.receiveSubscription(box, subscription)
  }

  @inlinable
  public func receive(_ value: Input) -> Subscribers.Demand { box.receiveValue(box, value) }

  @inlinable
  public func receive(completion: Subscribers.Completion<Failure>) {
    box.receiveCompletion(box, completion)
  }

  /// The wrapped subscriber (cold paths only).
  var base: any Subscriber<Input, Failure> { box.base }

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

/// The subscriber wrapped by an ``AnySubscriber``, whatever its type: functions made where it
/// was wrapped, in code specialised for its type (one indirect call per signal). The pattern of
/// ``AnyConduit``, for its reasons: non-capturing functions in `let` properties of an object the
/// caller holds need no retain around the call, and an overridden method of a generic class is
/// reached through a vtable holding its unspecialised implementation. ``SubscriberBox`` is the
/// only subclass.
@usableFromInline
class AnySubscriberBox<Input, Failure: Error>: @unchecked Sendable {
  // Safety: immutable; the wrapped subscriber is called only as the `Subscriber` contract lets
  // its publisher call it (serially).
  @usableFromInline let receiveSubscription: (AnySubscriberBox, any Subscription) -> Void
  @usableFromInline let receiveValue: (AnySubscriberBox, Input) -> Subscribers.Demand
  @usableFromInline let receiveCompletion:
    (AnySubscriberBox, Subscribers.Completion<Failure>) -> Void
  /// The wrapped subscriber if it is a `Sink`: a subject's conduit then delivers to it as it
  /// does to a sink attached directly, without the sink's gate (see ``Conduit``), so that an
  /// erased subject costs what the subject costs.
  @usableFromInline let sink: Subscribers.Sink<Input, Failure>?

  @inlinable
  init(
    receiveSubscription: @escaping (AnySubscriberBox, any Subscription) -> Void,
    receiveValue: @escaping (AnySubscriberBox, Input) -> Subscribers.Demand,
    receiveCompletion: @escaping (AnySubscriberBox, Subscribers.Completion<Failure>) -> Void,
    sink: Subscribers.Sink<Input, Failure>?
  ) {
    self.receiveSubscription = receiveSubscription
    self.receiveValue = receiveValue
    self.receiveCompletion = receiveCompletion
    self.sink = sink
  }

  /// The wrapped subscriber, as an existential (cold paths only).
  @usableFromInline var base: any Subscriber<Input, Failure> {
    Violation.internalInconsistency("AnySubscriberBox without a subscriber")
  }
}

@usableFromInline
final class SubscriberBox<Wrapped: Subscriber>: AnySubscriberBox<Wrapped.Input, Wrapped.Failure>,
  @unchecked Sendable
{
  // Safety: see the base class.
  @usableFromInline let subscriber: Wrapped

  @inlinable
  init(_ subscriber: Wrapped) {
    self.subscriber = subscriber
    // Non-capturing, so made without a context here, where `Wrapped` is known.
    super.init(
      receiveSubscription: {
        unsafeDowncast($0, to: SubscriberBox.self).subscriber.receive(subscription: $1)
      },
      receiveValue: { unsafeDowncast($0, to: SubscriberBox.self).subscriber.receive($1) },
      receiveCompletion: {
        unsafeDowncast($0, to: SubscriberBox.self).subscriber.receive(completion: $1)
      },
      // Decided here, where `Wrapped` is known (a bit cast to the type it is).
      sink: Wrapped.self == Subscribers.Sink<Wrapped.Input, Wrapped.Failure>.self
        ? SubscriberBox.reinterpret(
          subscriber, as: Subscribers.Sink<Wrapped.Input, Wrapped.Failure>.self)
        : nil)
  }

  /// `value` as `Target`, which it is (checked by the caller): a bit cast, not `as`.
  @inlinable @inline(__always)
  static func reinterpret<Value, Target>(_ value: Value, as target: Target.Type) -> Target {
    unsafeBitCast(value, to: target)
  }

  @usableFromInline override var base: any Subscriber<Wrapped.Input, Wrapped.Failure> {
    subscriber
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
