/// A subject that wraps a single value and publishes a new element whenever the value changes,
/// as in Combine.
///
/// A new subscriber receives the current value on its first demand. A subscriber that had no
/// demand when a value was sent misses that value but receives the then-current value on its
/// next request, so it always catches up with the latest state.
///
/// **Demand**, **Ordering**, **Cancellation**: as ``PassthroughSubject``. `value` is thread-safe;
/// setting it sends the new value (unless the subject has completed, when it only stores it).
///
/// ```swift
/// let temperature = CurrentValueSubject<Int, Never>(20)
/// let cancellable = temperature.sink { print($0) }   // prints "20"
/// temperature.value = 21                              // prints "21"
/// ```
public final class CurrentValueSubject<Output, Failure: Error>: Subject, @unchecked Sendable {
  // Safety: all state is in `core`, which is thread-safe.
  @usableFromInline let core: SubjectCore<Output, Failure>

  /// Creates a subject with `value` as its current value.
  public init(_ value: Output) {
    core = SubjectCore(name: "CurrentValueSubject", currentValue: value)
  }

  deinit { core.cancelUpstreams() }

  /// The value wrapped by this subject, published as a new element whenever it is set.
  public var value: Output {
    get {
      guard let value = core.currentValue else {
        Violation.internalInconsistency("CurrentValueSubject has no current value")
      }
      return value
    }
    set { core.send(newValue, storingAfterCompletion: true) }
  }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S)
  where Output == S.Input, Failure == S.Failure {
    core.subscribe(subscriber, subject: self)
  }

  /// Sets the current value and sends it to every subscriber with demand. After the subject
  /// completed it does nothing (as in Combine; setting ``value`` still stores the new value).
  @inlinable
  public func send(_ input: Output) { core.send(input) }

  @inlinable
  public func send(completion: Subscribers.Completion<Failure>) {
    core.send(completion: completion)
  }

  @inlinable
  public func send(subscription: any Subscription) { core.send(subscription: subscription) }
}
