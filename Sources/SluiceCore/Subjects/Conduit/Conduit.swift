/// How a ``SubjectCore`` reaches one of its subscriptions, whatever the subscriber's type.
///
/// The closures are made when the subscriber attaches, in code specialized for its type, so a
/// `send` calls straight into specialized delivery (no existential, no generic metadata lookups
/// per value). Each captures only the conduit, which needs no allocation of its own.
@usableFromInline
struct ConduitEntry<Output, Failure: Error> {
  @usableFromInline let conduit: AnyObject
  @usableFromInline let offer: (Output) -> Void
  @usableFromInline let finish: (Subscribers.Completion<Failure>) -> Void

  @inlinable
  init(
    conduit: AnyObject, offer: @escaping (Output) -> Void,
    finish: @escaping (Subscribers.Completion<Failure>) -> Void
  ) {
    self.conduit = conduit
    self.offer = offer
    self.finish = finish
  }
}

/// A subject's subscription to one subscriber: per-subscriber demand, serial delivery.
///
/// **Demand**: a value offered while the subscriber has no demand is dropped (for subjects with a
/// current value, the subscriber is then owed the latest value on its next request).
/// **Ordering**: values reach the subscriber in the order the conduit accepted them; concurrent
/// senders never deliver concurrently (see ``ConduitState``). **Cancellation**: `cancel()` detaches
/// from the subject and releases the subscriber at once; a value already being delivered on
/// another thread completes its delivery, and nothing starts after `cancel()` returns.
@usableFromInline
final class Conduit<Downstream: Subscriber>: Subscription,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
{
  // Safety: all mutable state is in `state`'s lock; the subscriber is called only by the single
  // drainer that `ConduitState` elects, after unlocking.
  @usableFromInline typealias Output = Downstream.Input
  @usableFromInline typealias Failure = Downstream.Failure
  @usableFromInline typealias Parent = SubjectCore<Output, Failure>

  @usableFromInline let state: Lock<ConduitState<Downstream, Parent>>
  @usableFromInline let replaysCurrentValue: Bool
  @usableFromInline let demandIsOnOff: Bool
  @usableFromInline let description: String
  /// `request(_:)` and `cancel()` as compiled where the subscriber attached (specialized);
  /// subscribers call them through `any Subscription`, whose generic implementations forward.
  @usableFromInline let specializedRequest: (Conduit, Subscribers.Demand) -> Void
  @usableFromInline let specializedCancel: (Conduit) -> Void

  @inlinable
  init(parent: Parent, subject: AnyObject?, downstream: Downstream) {
    replaysCurrentValue = parent.replaysCurrentValue
    demandIsOnOff = parent.demandIsOnOff
    description = parent.name
    state = Lock(
      ConduitState(
        downstream: downstream, parent: parent, subject: subject,
        replaysCurrentValue: parent.replaysCurrentValue))
    specializedRequest = { $0.requestSpecialized($1) }
    specializedCancel = { $0.cancelSpecialized() }
  }

  /// This conduit as the subject core sees it.
  @inlinable
  var entry: ConduitEntry<Output, Failure> {
    ConduitEntry(conduit: self, offer: { [self] in offer($0) }, finish: { [self] in finish($0) })
  }

  @inlinable
  func offer(_ value: Output) {
    let action = state.withLock { $0.offered(value, replaysCurrentValue: replaysCurrentValue) }
    if case .deliver(let downstream) = action {
      drain(adding: downstream.receive(value))
    }
  }

  @inlinable
  func finish(_ completion: Subscribers.Completion<Failure>) {
    if state.withLock({ $0.finished(completion) }) { drain(adding: .none) }
  }

  @inlinable
  func request(_ demand: Subscribers.Demand) { specializedRequest(self, demand) }

  @inlinable
  func requestSpecialized(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    let demand = demandIsOnOff ? .unlimited : demand
    let (drains, parent) = state.withLock { ($0.requested(demand), $0.firstRequest()) }
    if drains { drain(adding: .none) }
    // After draining: a value the upstream sends while it is asked for `.unlimited` then finds
    // this conduit idle and is delivered at once, in order with the upstream's other effects.
    parent?.downstreamRequested()
  }

  @inlinable
  func cancel() { specializedCancel(self) }

  @inlinable
  func cancelSpecialized() {
    let released = state.withLock { $0.cancelled() }
    released.parent?.detach(self)
    withExtendedLifetime(released) {}
  }

  /// The drain loop; only the thread that `ConduitState` made the drainer runs it.
  @inlinable
  func drain(adding demand: Subscribers.Demand) {
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
      case .complete(let downstream, let completion, let parent, let subject):
        parent?.detach(self)
        downstream.receive(completion: completion)
        withExtendedLifetime(subject) {}
        return
      case .idle:
        return
      }
    }
  }

  @usableFromInline var customMirror: Mirror {
    let (core, subject, downstream, demand) = state.withLock {
      ($0.parent, $0.subject, $0.downstream, $0.demand)
    }
    // Combine's children; `parent`, `downstream` and `subject` read nil once it has ended.
    if demandIsOnOff { return Mirror(self, children: ["downstream": downstream as Any]) }
    let parent: Any? = subject ?? core
    return Mirror(
      self,
      children: [
        ("parent", parent as Any), ("downstream", downstream as Any), ("demand", demand),
        ("subject", parent as Any),
      ])
  }

  @usableFromInline var playgroundDescription: Any { description }
}
