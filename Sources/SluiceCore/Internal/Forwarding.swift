/// The subscriber of a stateless operator (map, mapError, setFailureType, replaceNil): it
/// converts each signal and passes it on.
///
/// A struct with no lock and no state: the downstream receives the upstream's own subscription,
/// so demand and cancellation go straight upstream, exactly as requested (as in Combine).
/// **Ordering**: the upstream's. **Cancellation**: the upstream's; nothing is held here beyond
/// the downstream and the closures, which the upstream releases with this subscriber.
@usableFromInline
struct Forwarding<Input, Failure: Error, Downstream: Subscriber>: Subscriber,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible
{
  @usableFromInline let downstream: Downstream
  @usableFromInline let value: (Input) -> Downstream.Input
  @usableFromInline let failure: (Failure) -> Downstream.Failure
  @usableFromInline let description: String
  /// What the mirror shows (Combine shows none for most, the key paths for the key-path maps,
  /// file, line and prefix for assertNoFailure).
  @usableFromInline let children: [Mirror.Child]
  @usableFromInline let combineIdentifier = CombineIdentifier()

  @inlinable
  init(
    _ description: String, downstream: Downstream, children: [Mirror.Child] = [],
    value: @escaping (Input) -> Downstream.Input,
    failure: @escaping (Failure) -> Downstream.Failure
  ) {
    self.description = description
    self.downstream = downstream
    self.children = children
    self.value = value
    self.failure = failure
  }

  @inlinable func receive(subscription: any Subscription) {
    downstream.receive(subscription: subscription)
  }

  @inlinable func receive(_ input: Input) -> Subscribers.Demand {
    downstream.receive(value(input))
  }

  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    downstream.receive(completion: completion.mapFailure(failure))
  }

  @usableFromInline var customMirror: Mirror { Mirror(self, children: children) }
  @usableFromInline var playgroundDescription: Any { description }
}

extension Forwarding where Failure == Downstream.Failure {
  /// Passes failures on unchanged.
  @inlinable
  init(
    _ description: String, downstream: Downstream, children: [Mirror.Child] = [],
    value: @escaping (Input) -> Downstream.Input
  ) {
    self.init(
      description, downstream: downstream, children: children, value: value, failure: { $0 })
  }
}

/// The subscriber of filter and compactMap: it converts each value, passes on what is not `nil`
/// and asks upstream for one more value in place of each `nil`.
///
/// Like ``Forwarding``, a struct with no subscription object of its own: the downstream receives
/// the upstream's subscription, so `request` and `cancel` go straight upstream, as in Combine.
/// **Demand**: the downstream's, plus `.max(1)` per dropped value. **Ordering**: the upstream's.
/// **Cancellation**: the upstream's.
@usableFromInline
struct FilterForwarding<Input, Downstream: Subscriber>: Subscriber, CustomStringConvertible,
  CustomReflectable, CustomPlaygroundDisplayConvertible
{
  @usableFromInline typealias Failure = Downstream.Failure

  @usableFromInline let downstream: Downstream
  @usableFromInline let transform: (Input) -> Downstream.Input?
  @usableFromInline let description: String
  @usableFromInline let combineIdentifier = CombineIdentifier()

  @inlinable
  init(
    _ description: String, downstream: Downstream,
    transform: @escaping (Input) -> Downstream.Input?
  ) {
    self.description = description
    self.downstream = downstream
    self.transform = transform
  }

  @inlinable func receive(subscription: any Subscription) {
    downstream.receive(subscription: subscription)
  }

  @inlinable func receive(_ input: Input) -> Subscribers.Demand {
    guard let output = transform(input) else { return .max(1) }
    return downstream.receive(output)
  }

  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    downstream.receive(completion: completion)
  }

  /// No children, as in Combine.
  @usableFromInline var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @usableFromInline var playgroundDescription: Any { description }
}

/// The subscriber of `ignoreOutput()`: hands the upstream's subscription to the downstream, then
/// requests `.unlimited` on it, drops every value and passes the completion on (as in Combine).
@usableFromInline
struct IgnoringForwarding<Input, Downstream: Subscriber>: Subscriber, CustomStringConvertible,
  CustomReflectable, CustomPlaygroundDisplayConvertible
where Downstream.Input == Never {
  @usableFromInline typealias Failure = Downstream.Failure

  @usableFromInline let downstream: Downstream
  @usableFromInline let combineIdentifier = CombineIdentifier()

  @inlinable init(downstream: Downstream) { self.downstream = downstream }

  @inlinable func receive(subscription: any Subscription) {
    downstream.receive(subscription: subscription)
    subscription.request(.unlimited)
  }

  @inlinable func receive(_ input: Input) -> Subscribers.Demand { .none }

  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    downstream.receive(completion: completion)
  }

  @usableFromInline var description: String { "IgnoreOutput" }
  /// No children, as in Combine.
  @usableFromInline var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @usableFromInline var playgroundDescription: Any { description }
}

/// The subscriber of `scan`: folds each value into `result` and passes the new result on.
///
/// No subscription object of its own (the downstream receives the upstream's subscription, as in
/// Combine). A class because the fold is state; values are serial by the publisher contract, so
/// the state needs no lock. **Demand**: the downstream's, one result per value.
/// **Ordering**: the upstream's. **Cancellation**: the upstream's.
@usableFromInline
final class ScanForwarding<Input, Downstream: Subscriber>: Subscriber, CustomStringConvertible,
  CustomReflectable, CustomPlaygroundDisplayConvertible, @unchecked Sendable
{
  // Safety: `result` is touched only by upstream values, which the publisher contract makes
  // serial; everything else is immutable.
  @usableFromInline typealias Failure = Downstream.Failure

  @usableFromInline let downstream: Downstream
  @usableFromInline @exclusivity(unchecked) var result: Downstream.Input
  @usableFromInline let next: (Downstream.Input, Input) -> Downstream.Input

  @inlinable init(
    downstream: Downstream, initial: Downstream.Input,
    next: @escaping (Downstream.Input, Input) -> Downstream.Input
  ) {
    self.downstream = downstream
    result = initial
    self.next = next
  }

  @inlinable func receive(subscription: any Subscription) {
    downstream.receive(subscription: subscription)
  }

  @inlinable func receive(_ input: Input) -> Subscribers.Demand {
    result = next(result, input)
    return downstream.receive(result)
  }

  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    downstream.receive(completion: completion)
  }

  @usableFromInline var description: String { "Scan" }
  @usableFromInline var customMirror: Mirror {
    Mirror(self, children: ["downstream": downstream, "result": result])
  }
  @usableFromInline var playgroundDescription: Any { description }
}
