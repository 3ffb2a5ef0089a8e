/// A subject that broadcasts elements to downstream subscribers, as in Combine.
///
/// Unlike ``CurrentValueSubject``, it has no initial value or buffer of the most recent element:
/// a value sent while a subscriber has no demand (or while there are no subscribers) is dropped
/// for that subscriber.
///
/// **Demand**: each subscriber receives values against its own demand; `request(.none)` traps.
/// **Ordering**: values sent from one thread arrive in order; sends from several threads are
/// delivered serially, each at most once, in one order per subscriber. **Completion**: sent once
/// and replayed to later subscribers. **Cancellation**: a cancelled subscription is released at
/// once and receives nothing more. It is safe to call `send` from any thread.
/// **As a subscriber** (`publisher.subscribe(subject)`): each upstream subscription is kept and
/// asked for `.unlimited` once any of the subject's subscribers has made a request (at once if
/// one already has), and cancelled when the subject is deinitialised.
///
/// ```swift
/// let subject = PassthroughSubject<Int, Never>()
/// let cancellable = subject.sink { print($0) }
/// subject.send(1)   // prints "1"
/// ```
public final class PassthroughSubject<Output, Failure: Error>: Subject, @unchecked Sendable {
  // Safety: all state is in `core`, which is thread-safe.
  @usableFromInline let core = SubjectCore<Output, Failure>(
    name: "PassthroughSubject", currentValue: nil, requestsUpstreamsOnDemand: true)

  /// Creates a subject with no subscribers and no upstream.
  public init() {}

  deinit { core.cancelUpstreams() }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S)
  where Output == S.Input, Failure == S.Failure {
    core.subscribe(subscriber, subject: self)
  }

  @inlinable
  public func send(_ input: Output) { core.send(input) }

  @inlinable
  public func send(completion: Subscribers.Completion<Failure>) {
    core.send(completion: completion)
  }

  @inlinable
  public func send(subscription: any Subscription) { core.send(subscription: subscription) }

  /// Whether any subscriber is attached (for tests that must not send before a consumer has
  /// subscribed).
  package var hasSubscribers: Bool { core.subscriberCount > 0 }
}
