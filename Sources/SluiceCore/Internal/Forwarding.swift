/// The subscriber of a stateless operator (map, mapError, setFailureType, the key-path maps,
/// assertNoFailure, breakpoint): it converts each signal and passes it on.
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
  @usableFromInline let combineIdentifier = CombineIdentifier()

  @inlinable
  init(
    _ description: String, downstream: Downstream,
    value: @escaping (Input) -> Downstream.Input,
    failure: @escaping (Failure) -> Downstream.Failure
  ) {
    self.description = description
    self.downstream = downstream
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

  @usableFromInline var customMirror: Mirror {
    Mirror(self, children: ["downstream": downstream])
  }
  @usableFromInline var playgroundDescription: Any { description }
}

extension Forwarding where Failure == Downstream.Failure {
  /// Passes failures on unchanged.
  @inlinable
  init(
    _ description: String, downstream: Downstream,
    value: @escaping (Input) -> Downstream.Input
  ) {
    self.init(description, downstream: downstream, value: value, failure: { $0 })
  }
}
