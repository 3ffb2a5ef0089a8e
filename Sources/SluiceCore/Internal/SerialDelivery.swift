/// A downstream that several threads may signal — scheduler actions, timers, upstreams of
/// different publishers — delivered to one signal at a time, in the order signals were handed
/// in, without holding a lock while calling the downstream: the delivery half of time-based
/// operators.
///
/// A thread that hands in a signal while another is delivering leaves it queued; the delivering
/// thread delivers it next (see ``HandOffQueue``). After a completion, or after ``end()``,
/// nothing more is delivered and the downstream is released.
///
/// States: `live(downstream)` → `ended`.
/// | event | live, idle | live, delivering | ended |
/// |---|---|---|---|
/// | `send(signal)` | deliver it now on this thread, then anything queued meanwhile | queue it | drop |
/// | a completion is delivered | ended | — | — |
/// | `end()` | ended: drop the queue, release the downstream | same (the value in flight completes) | nothing |
@usableFromInline
final class SerialDelivery<Downstream: Subscriber>: @unchecked Sendable {
  // Safety: all mutable state is in `state`'s lock; the downstream and `returned` are called
  // after unlocking, by the one thread the hand-off queue lets deliver.
  @usableFromInline
  typealias Input = Downstream.Input
  @usableFromInline
  typealias Failure = Downstream.Failure

  @usableFromInline
  enum Signal {
    case value(Input)
    case completion(Subscribers.Completion<Failure>)
  }

  @usableFromInline
  struct State {
    @usableFromInline
    var downstream: Downstream?
    @usableFromInline
    var queue = HandOffQueue<Signal>()

    @inlinable
    init(downstream: Downstream) { self.downstream = downstream }

    @inlinable
    mutating func next(_ item: Signal?) -> (Signal, Downstream)? {
      guard let item, let downstream else { return nil }
      if case .completion = item {
        self.downstream = nil
        queue.clear()
      }
      return (item, downstream)
    }
  }

  @usableFromInline
  let state: Lock<State>
  /// Receives the demand the downstream returned for a value (after unlocking).
  @usableFromInline
  let returned: (Subscribers.Demand) -> Void

  @inlinable
  init(_ downstream: Downstream, returned: @escaping (Subscribers.Demand) -> Void) {
    state = Lock(State(downstream: downstream))
    self.returned = returned
  }

  /// The downstream, while live (to hand it the subscription, or for a mirror).
  @inlinable
  var downstream: Downstream? { state.withLock { $0.downstream } }

  /// Delivers `signal` now, or after the signal being delivered on another thread. Returns the
  /// demand the downstream returned for `signal` when this call delivered it (the caller passes
  /// it on, as Combine's operators return it); demand returned for signals delivered later, or
  /// for others this call delivers, goes to `returned`.
  @discardableResult
  @inlinable
  func send(_ signal: Signal) -> Subscribers.Demand {
    var next = state.withLock { state -> (Signal, Downstream)? in
      guard state.downstream != nil else { return nil }
      state.queue.submit(signal)
      return state.next(state.queue.actionRan())
    }
    // While another thread delivers, the signal waits for it; nothing is returned for it here.
    var own: Subscribers.Demand = .none
    var first = true
    while let (signal, downstream) = next {
      switch signal {
      case .value(let value):
        let more = downstream.receive(value)
        if first {
          own = more
        } else if more > 0 {
          returned(more)
        }
      case .completion(let completion):
        downstream.receive(completion: completion)
      }
      first = false
      next = state.withLock { $0.next($0.queue.performed()) }
    }
    return own
  }

  /// Ends delivery (cancel): drops what is queued and releases the downstream after unlocking.
  @inlinable
  func end() {
    let released = state.withLock { state -> (Downstream?, HandOffQueue<Signal>) in
      defer {
        state.downstream = nil
        state.queue.clear()
      }
      return (state.downstream, state.queue)
    }
    withExtendedLifetime(released) {}
  }
}
