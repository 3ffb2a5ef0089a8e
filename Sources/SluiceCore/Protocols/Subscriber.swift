/// A protocol that declares a type that can receive input from a publisher, as in Combine.
///
/// A subscriber receives, in order and never concurrently: one subscription, then at most as
/// many values as it demanded, then at most one completion.
public protocol Subscriber<Input, Failure>: CustomCombineIdentifierConvertible {
  /// The kind of values this subscriber receives.
  associatedtype Input

  /// The kind of errors this subscriber might receive; `Never` if it cannot receive a failure.
  associatedtype Failure: Error

  /// Tells the subscriber that it has subscribed and may request values.
  func receive(subscription: any Subscription)

  /// Tells the subscriber that the publisher has produced a value.
  ///
  /// - Returns: how many more values the subscriber wants, added to its outstanding demand.
  func receive(_ input: Input) -> Subscribers.Demand

  /// Tells the subscriber that the publisher has completed, normally or with an error.
  func receive(completion: Subscribers.Completion<Failure>)
}

extension Subscriber where Input == Void {
  /// Tells the subscriber that a publisher of `Void` produced an element.
  @inlinable
  public func receive() -> Subscribers.Demand {
    receive(())
  }
}

/// A namespace for types that serve as subscribers, as in Combine.
public enum Subscribers {}
