/// A downstream that several threads may signal — scheduler actions, timers, upstreams of
/// different publishers — delivered to one signal at a time, in the order signals were handed
/// in, without holding a lock while calling the downstream: the delivery half of time-based
/// operators.
///
/// A thread that hands in a signal while another is delivering leaves it queued; the delivering
/// thread delivers it next — while its turn has grants; past that the handing thread waits for
/// the turn to deliver its signal for it or hand it the turn (a thread inside a delivery of its
/// own defers that wait instead of blocking; see ``DeliveryTurn`` and ``DeliveryContext``). So
/// a call returns after its own signal plus at most its allowance of others', and the queue
/// stays bounded however fast another thread signals. After a completion, or after ``end()``,
/// nothing more is delivered and the downstream is released.
///
/// States: `live(downstream)` → `ended`.
/// | event | live, idle | live, delivering | ended |
/// |---|---|---|---|
/// | `send(signal)` | deliver it now on this thread, then what was queued meanwhile, up to a waiter's signal (the turn passes to it) | queue it; no grants left: wait for the turn | drop |
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
    var queue = RingBuffer<Signal>()
    @usableFromInline
    var turn = DeliveryTurn()

    @inlinable
    init(downstream: Downstream) { self.downstream = downstream }

    /// What the holder of the turn does next.
    @usableFromInline
    enum Step {
      /// Deliver this signal; dismiss the waiter it is delivered for.
      case deliver(Signal, Downstream, for: TurnWaiter?)
      /// The turn is this waiter's: grant it after unlocking and return.
      case passed(TurnWaiter)
      /// Nothing to deliver: the turn ended; dismiss these waiters after unlocking.
      case stop([(position: Int, waiter: TurnWaiter)])
    }

    @inlinable
    mutating func next(_ context: DeliveryContext) -> Step {
      guard let downstream else { return .stop(turn.ended(context)) }
      var deliveredFor: TurnWaiter?
      switch turn.waiterNext(context) {
      case .none: break
      case .deliverFor(let waiter): deliveredFor = waiter
      case .pass(let waiter): return .passed(waiter)
      }
      guard let item = queue.popFirst() else { return .stop(turn.ended(context)) }
      turn.took()
      if case .completion = item {
        self.downstream = nil
        turn.dropped(queue.count)
        queue.removeAll()
      }
      return .deliver(item, downstream, for: deliveredFor)
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
    let context = DeliveryContext.current
    let arrival = state.withLock { state -> DeliveryTurn.Arrival? in
      guard state.downstream != nil else { return nil }
      state.queue.append(signal)
      return state.turn.arrived(from: context, mayStart: true)
    }
    switch arrival {
    case nil, .queued:
      return .none  // delivered by the turn in progress; nothing is returned for it here
    case .wait(let waiter):
      guard !context.mustNotBlock else {
        // Inside a delivery (or coming back to deferred waiters): never block; come back to
        // it when the outermost turn ends (the demand for the signal, delivered then, goes to
        // `returned`).
        context.deferTurn(waiter) { [self] in
          state.withLock { $0.turn.resumed(context) }
          _ = deliverQueued(context, ownFirst: false)
        }
        return .none
      }
      guard waiter.wait() else { return .none }  // ended meanwhile
      state.withLock { $0.turn.resumed(context) }
    case .deliver:
      break
    }
    return deliverQueued(context, ownFirst: true)
  }

  /// Delivers the queue as the turn's holder until it is empty or the turn passes to a waiter,
  /// then leaves the turn. `ownFirst`: the first signal is the caller's, whose demand is
  /// returned (the rest goes to `returned`).
  @inlinable
  func deliverQueued(_ context: DeliveryContext, ownFirst: Bool) -> Subscribers.Demand {
    defer { context.exit() }
    var own: Subscribers.Demand = .none
    var first = ownFirst
    while true {
      switch state.withLock({ $0.next(context) }) {
      case .deliver(.value(let value), let downstream, let deliveredFor):
        deliveredFor?.dismiss()  // its value is delivered here: its call returns
        let more = downstream.receive(value)
        if first {
          own = more
        } else if more > 0 {
          returned(more)
        }
      case .deliver(.completion(let completion), let downstream, let deliveredFor):
        deliveredFor?.dismiss()
        downstream.receive(completion: completion)
      case .passed(let waiter):
        waiter.grant()
        return own
      case .stop(let dismissed):
        for (_, waiter) in dismissed { waiter.dismiss() }
        return own
      }
      first = false
    }
  }

  /// Ends delivery (cancel): drops what is queued and releases the downstream after unlocking.
  @inlinable
  func end() {
    let released = state.withLock { state -> (Downstream?, RingBuffer<Signal>) in
      defer {
        state.downstream = nil
        state.turn.dropped(state.queue.count)
        state.queue.removeAll()
      }
      return (state.downstream, state.queue)
    }
    withExtendedLifetime(released) {}
  }
}
