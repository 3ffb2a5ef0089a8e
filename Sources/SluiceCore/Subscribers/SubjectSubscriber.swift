/// Feeds a subject from a publisher: `Publisher.subscribe(_:)` with a subject, and
/// `AnySubscriber(subject)`.
///
/// **Demand**: never requests on its own: the subject decides (in `send(subscription:)`, through
/// this wrapper); each value asks for nothing more. **Cancellation**: `cancel()` cancels the
/// upstream and releases the subject. A multicast's connection holds its subject weakly
/// (`holdingWeakly`), as Combine's does: the connection alone does not keep the subject alive.
@usableFromInline
final class SubjectSubscriber<Downstream: Subject>: Subscriber, Subscription,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
{
  // Safety: all mutable state is in the lock-protected lifecycle; the subject is called after
  // unlocking.
  @usableFromInline typealias Input = Downstream.Output
  @usableFromInline typealias Failure = Downstream.Failure

  /// The subject, strongly or weakly.
  @usableFromInline struct Reference {
    @usableFromInline let strong: Downstream?
    @usableFromInline weak var weak: Downstream?

    @inlinable init(_ subject: Downstream, weakly: Bool) {
      strong = weakly ? nil : subject
      weak = weakly ? subject : nil
    }

    @inlinable var subject: Downstream? { strong ?? weak }
  }

  @usableFromInline let box: LifecycleBox<Reference>

  @inlinable init(_ subject: Downstream, holdingWeakly: Bool = false) {
    box = LifecycleBox(Reference(subject, weakly: holdingWeakly))
  }

  @inlinable func receive(subscription: any Subscription) {
    // The subject itself requests (if it wants to) through this wrapper in
    // `send(subscription:)`.
    if box.receive(subscription: subscription, requesting: .none),
      let subject = box.payloadForValue()?.subject
    {
      subject.send(subscription: self)
    }
  }

  @inlinable func receive(_ value: Input) -> Subscribers.Demand {
    // The subject read in place, field by field: a copy of `Reference` (which `.subject` or a
    // test for `nil` makes) would copy and destroy its weak reference (runtime calls) on every
    // value.
    box.projectPayloadForValue { reference in
      if let strong = reference?.strong { return strong }
      return reference?.weak
    }?.send(value)
    return .none
  }

  /// A completion before the subscription is ignored, as Combine's subject subscriber does
  /// (a `share()`'s subscribers would all complete on an upstream's contract break).
  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    box.payloadForCompletion(beforeSubscription: false)?.subject?.send(completion: completion)
  }

  @inlinable func request(_ demand: Subscribers.Demand) {
    box.subscription?.request(demand)
  }

  @inlinable func cancel() { box.cancel() }

  @usableFromInline var description: String { "Subject" }
  @usableFromInline var customMirror: Mirror {
    Mirror(self, children: ["downstreamSubject": box.payload?.subject as Any])
  }
  @usableFromInline var playgroundDescription: Any { description }
}
