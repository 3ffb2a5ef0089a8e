/// A publisher that exposes a method for outside callers to publish elements, as in Combine.
///
/// A subject is a reference type: every subscriber shares the same stream, and each receives
/// values according to its own demand.
public protocol Subject<Output, Failure>: AnyObject, Publisher {
  /// Sends `value` to every subscriber that has outstanding demand.
  func send(_ value: Output)

  /// Sends a completion to every subscriber; later subscribers receive it on subscription.
  func send(completion: Subscribers.Completion<Failure>)

  /// Gives the subject an upstream subscription; subjects request `.unlimited` from it.
  func send(subscription: any Subscription)
}

extension Subject where Output == Void {
  /// Sends a `Void` value to the subscribers.
  public func send() {
    send(())
  }
}
