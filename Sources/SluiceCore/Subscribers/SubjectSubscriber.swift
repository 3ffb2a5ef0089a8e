/// Feeds a subject from a publisher: `Publisher.subscribe(_:)` with a subject, and
/// `AnySubscriber(subject)`.
///
/// **Demand**: never requests on its own: the subject decides (in `send(subscription:)`, through
/// this wrapper); each value asks for nothing more. **Cancellation**: `cancel()` cancels the
/// upstream and releases the subject. A multicast's connection holds its subject weakly
/// (`holdingWeakly`), as Combine's does: the connection alone does not keep the subject alive.
/// For Sluice's own subjects (`PassthroughSubject`, `CurrentValueSubject`) it holds their core
/// instead, strongly, and the subject weakly only for its mirror: a value then costs no weak
/// load (a runtime call, and the subject's reference count moved to a side table, whose release
/// is a slow path: together a quarter of a `share()`d value's time). The core alone is not the
/// subject: nobody can subscribe to it, and the subject's subscribers keep the subject alive —
/// once they are gone, the subject's `deinit` cancels its upstreams, this subscription among
/// them, which releases the core, as Combine's subject's death cancels them.
@usableFromInline
final class SubjectSubscriber<Downstream: Subject>: Subscriber, Subscription,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
{
  // Safety: all mutable state is in the lock-protected lifecycle; the subject is called after
  // unlocking.
  @usableFromInline typealias Input = Downstream.Output
  @usableFromInline typealias Failure = Downstream.Failure
  @usableFromInline typealias Core = SubjectCore<Input, Failure>

  /// The subject, strongly or weakly — or, weakly held and one of Sluice's, its core strongly.
  @usableFromInline struct Reference {
    @usableFromInline let strong: Downstream?
    @usableFromInline weak var weak: Downstream?
    @usableFromInline let core: Core?

    @inlinable init(_ subject: Downstream, weakly: Bool) {
      strong = weakly ? nil : subject
      weak = weakly ? subject : nil
      core = weakly ? Self.core(of: subject) : nil
    }

    /// The core of one of Sluice's subjects (two casts, once per connection).
    @inlinable static func core(of subject: Downstream) -> Core? {
      if let passthrough = subject as? PassthroughSubject<Input, Failure> {
        return passthrough.core
      }
      return (subject as? CurrentValueSubject<Input, Failure>)?.core
    }

    @inlinable var subject: Downstream? { strong ?? weak }

    @inlinable func send(subscription: any Subscription) {
      if let core { return core.send(subscription: subscription) }
      subject?.send(subscription: subscription)
    }

    @inlinable func send(completion: Subscribers.Completion<Failure>) {
      if let core { return core.send(completion: completion) }
      subject?.send(completion: completion)
    }
  }

  @usableFromInline let box: LifecycleBox<Reference>

  @inlinable init(_ subject: Downstream, holdingWeakly: Bool = false) {
    box = LifecycleBox(Reference(subject, weakly: holdingWeakly))
  }

  @inlinable func receive(subscription: any Subscription) {
    // The subject itself requests (if it wants to) through this wrapper in
    // `send(subscription:)`.
    if box.receive(subscription: subscription, requesting: .none),
      let reference = box.payloadForValue()
    {
      reference.send(subscription: self)
    }
  }

  @inlinable func receive(_ value: Input) -> Subscribers.Demand {
    // Read in place, field by field: a copy of `Reference` (which `.subject` or a test for
    // `nil` makes) would copy and destroy its weak reference (runtime calls) on every value.
    let target = box.projectPayloadForValue { reference -> (Core?, Downstream?)? in
      if let core = reference?.core { return (core, nil) }
      if let strong = reference?.strong { return (nil, strong) }
      return (nil, reference?.weak)
    }
    if let core = target?.0 {
      core.send(value)
    } else {
      target?.1?.send(value)
    }
    return .none
  }

  /// A completion before the subscription is ignored, as Combine's subject subscriber does
  /// (a `share()`'s subscribers would all complete on an upstream's contract break).
  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    box.payloadForCompletion(beforeSubscription: false)?.send(completion: completion)
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
