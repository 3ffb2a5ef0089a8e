/// Declares that a type can deliver a sequence of values over time, as in Combine.
///
/// A publisher delivers elements to one or more ``Subscriber`` instances. The subscriber's
/// `Input` and `Failure` must match the publisher's `Output` and `Failure`.
///
/// A publisher calls, on each subscriber, in this order and never concurrently:
/// - `receive(subscription:)` exactly once;
/// - `receive(_:)` at most as many times as the subscriber has demanded (through
///   `Subscription.request(_:)` and the demand returned from `receive(_:)`);
/// - `receive(completion:)` at most once, after which nothing else.
///
/// After `cancel()` on the subscription returns, no further signals arrive.
public protocol Publisher<Output, Failure> {
  /// The kind of values published by this publisher.
  associatedtype Output

  /// The kind of errors this publisher might publish; `Never` if it cannot fail.
  associatedtype Failure: Error

  /// Attaches `subscriber` to this publisher. Call `subscribe(_:)` instead.
  func receive<S: Subscriber>(subscriber: S) where Failure == S.Failure, Output == S.Input
}

extension Publisher {
  /// Attaches `subscriber` to this publisher.
  ///
  /// ![Marble diagram: input.subscribe(subject)](subscribe)
  ///
  /// Always use this method rather than `receive(subscriber:)`, as with Combine.
  @inlinable
  public func subscribe<S: Subscriber>(_ subscriber: S)
  where Failure == S.Failure, Output == S.Input {
    receive(subscriber: subscriber)
  }

  /// Attaches `subject` to this publisher: the subject receives the subscription (and requests
  /// `.unlimited`), every value, and the completion.
  ///
  /// ![Marble diagram: input.subscribe(subject)](subscribe)
  ///
  /// - Returns: a cancellable that cancels the subscription between this publisher and `subject`.
  public func subscribe<S: Subject>(_ subject: S) -> AnyCancellable
  where Failure == S.Failure, Output == S.Output {
    let subscriber = SubjectSubscriber(subject)
    subscribe(subscriber)
    return AnyCancellable(subscriber)
  }
}

/// A namespace for types that serve as publishers, as in Combine.
public enum Publishers {}
