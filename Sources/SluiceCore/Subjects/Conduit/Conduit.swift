/// What a ``SubjectCore`` needs from each of its subscriptions, whatever the subscriber's type.
protocol SubjectConduit<Output, Failure>: AnyObject, Sendable {
  associatedtype Output
  associatedtype Failure: Error
  func offer(_ value: Output)
  func finish(_ completion: Subscribers.Completion<Failure>)
}

/// A subject's subscription to one subscriber: per-subscriber demand, serial delivery.
///
/// **Demand**: a value offered while the subscriber has no demand is dropped (for subjects with a
/// current value, the subscriber is then owed the latest value on its next request).
/// **Ordering**: values reach the subscriber in the order the conduit accepted them; concurrent
/// senders never deliver concurrently (see ``ConduitState``). **Cancellation**: `cancel()` detaches
/// from the subject and releases the subscriber at once; a value already being delivered on
/// another thread completes its delivery, and nothing starts after `cancel()` returns.
final class Conduit<Downstream: Subscriber>: SubjectConduit, Subscription,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
{
  // Safety: all mutable state is in `state`'s lock; the subscriber is called only by the single
  // drainer that `ConduitState` elects, after unlocking.
  typealias Output = Downstream.Input
  typealias Failure = Downstream.Failure
  typealias Parent = SubjectCore<Output, Failure>

  private let state: Lock<ConduitState<Downstream, Parent>>
  private let replaysCurrentValue: Bool
  let description: String

  init(parent: Parent, downstream: Downstream) {
    replaysCurrentValue = parent.replaysCurrentValue
    description = parent.name
    state = Lock(
      ConduitState(
        downstream: downstream, parent: parent, replaysCurrentValue: parent.replaysCurrentValue))
  }

  func offer(_ value: Output) {
    let action = state.withLock { $0.offered(value, replaysCurrentValue: replaysCurrentValue) }
    if case .deliver(let downstream) = action {
      drain(adding: downstream.receive(value))
    }
  }

  func finish(_ completion: Subscribers.Completion<Failure>) {
    if state.withLock({ $0.finished(completion) }) { drain(adding: .none) }
  }

  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    if state.withLock({ $0.requested(demand) }) { drain(adding: .none) }
  }

  func cancel() {
    let released = state.withLock { $0.cancelled() }
    released.parent?.detach(self)
    withExtendedLifetime(released) {}
  }

  /// The drain loop; only the thread that `ConduitState` made the drainer runs it.
  private func drain(adding demand: Subscribers.Demand) {
    var more = demand
    while true {
      switch state.withLock({ $0.nextStep(adding: more) }) {
      case .deliver(let downstream, let value):
        more = downstream.receive(value)
      case .deliverCurrentValue(let downstream, let parent):
        if let value = parent.currentValue {
          more = downstream.receive(value)
        } else {
          more = .max(1)  // nothing to replay: give the demand back
        }
      case .complete(let downstream, let completion, let parent):
        parent?.detach(self)
        downstream.receive(completion: completion)
        return
      case .idle:
        return
      }
    }
  }

  var customMirror: Mirror {
    let (downstream, demand) = state.withLock { ($0.downstream, $0.demand) }
    return Mirror(self, children: ["downstream": downstream as Any, "demand": demand])
  }

  var playgroundDescription: Any { description }
}
