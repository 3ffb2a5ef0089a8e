/// Feeds a subject from a publisher: `Publisher.subscribe(_:)` with a subject, and
/// `AnySubscriber(subject)`.
///
/// **Demand**: the subject asks its upstream for `.unlimited` (it does so in
/// `send(subscription:)`); each value asks for nothing more. **Cancellation**: `cancel()` cancels
/// the upstream and releases the subject.
final class SubjectSubscriber<Downstream: Subject>: Subscriber, Subscription,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
{
  // Safety: all mutable state is in the lock-protected lifecycle; the subject is called after
  // unlocking.
  typealias Input = Downstream.Output
  typealias Failure = Downstream.Failure

  private let box: LifecycleBox<Downstream>

  init(_ subject: Downstream) {
    box = LifecycleBox(subject)
  }

  func receive(subscription: any Subscription) {
    // The subject itself requests (`.unlimited`) through this wrapper in `send(subscription:)`.
    if box.receive(subscription: subscription, requesting: .none),
      let subject = box.payloadForValue()
    {
      subject.send(subscription: self)
    }
  }

  func receive(_ value: Input) -> Subscribers.Demand {
    box.payloadForValue()?.send(value)
    return .none
  }

  func receive(completion: Subscribers.Completion<Failure>) {
    box.payloadForCompletion()?.send(completion: completion)
  }

  func request(_ demand: Subscribers.Demand) {
    box.subscription?.request(demand)
  }

  func cancel() { box.cancel() }

  var description: String { "Subject" }
  var customMirror: Mirror {
    Mirror(self, children: ["downstreamSubject": box.payload as Any])
  }
  var playgroundDescription: Any { description }
}
