/// The per-subscriber state of a subject's subscription ("conduit"), as a pure state machine.
///
/// A subject pushes values from any thread; each subscriber must still receive them serially and
/// only against its own demand. The conduit accepts a value only if the subscriber has demand
/// (otherwise drops it, as Combine does), and hands delivery to at most one thread at a time: the
/// *drainer*. A thread that finds a drainer at work queues its accepted value for the drainer and
/// returns. Re-entrant calls (a subscriber calling `request` or the subject's `send` from inside
/// `receive`) take the same path, so no lock is ever held or re-entered during delivery.
///
/// **Attaching.** The conduit is in the subject's list before its subscriber's
/// `receive(subscription:)` returns (a send from inside it, or the replay its first request
/// asks for, must reach it). Until that call returns only the subscribing thread delivers:
/// values and a completion from other threads are queued and a request from another thread
/// only adds demand, so that nothing reaches the subscriber on another thread while it is
/// still in `receive(subscription:)` (serial signals); the subscribing thread's own request,
/// value or completion is delivered at once, as in Combine (a replay is synchronous, so is a
/// value an upstream sends inside the request). A drain of that thread that has spent its
/// share stops with the rest queued (``pausedForAttach(adding:)``: idle with values queued,
/// the one state where that happens), and ``attachEnded()`` hands what is left to the drain
/// loop. Once ``attachQueueLimit`` values of other threads are queued, the turn that offers one
/// parks at its end (``TurnParking``) and its sender waits at the ``AttachGate`` (at the end of
/// its call) until the attach ends: the queue stays bounded, and its values beyond that come
/// from that one turn, whose call delivers what the attach's drain leaves.
///
/// States: `live` (has a downstream) with `draining` on or off, and `attaching` on or off →
/// `terminal` (no downstream).
///
/// Transitions and actions (performed by ``Conduit`` after unlocking):
/// | event | live, idle | live, draining | terminal |
/// |---|---|---|---|
/// | `offered(v)`, demand > 0 | demand −1, become drainer: deliver `v` (attaching, by another thread: queue `v`, and at the limit the sender waits at the gate; paused, by the subscribing thread: queue `v`, drain) | demand −1, queue `v` (same gate) | ignore |
/// | `offered(v)`, demand = 0 | drop `v` (replaying: owe the current value) | same | ignore |
/// | `requested(n)` | demand +n, become drainer (attaching: only the subscribing thread) | demand +n | ignore |
/// | `finished(c)` | remember `c`, become drainer (attaching: only the subscribing thread) | remember `c` | ignore |
/// | `nextStep(+n)` (drainer only) | — | queued value, else owed current value, else completion, else idle | idle |
/// | `attachEnded()` (subscribing thread) | attaching off, gate opened; if anything waits, become drainer, holding the subject's turn (beside another thread's, past its allowance the rest to that turn) | — | nothing |
/// | `cancelled` while attaching | gate opened (its senders go on) | same | — |
/// | the drainer's share spent, values queued | — | attaching: idle, paused (the rest waits); else handed to the subject's turn | — |
/// | `cancelled` | terminal, release everything | same | nothing |
@usableFromInline
struct ConduitState<Downstream: Subscriber, Parent> {
  @usableFromInline typealias Output = Downstream.Input
  @usableFromInline typealias Failure = Downstream.Failure

  /// `nil` once terminal.
  @usableFromInline var downstream: Downstream?
  @usableFromInline var parent: Parent?
  /// The subject object whose core `parent` is: kept alive by its subscriptions, as Combine's
  /// subjects are (a connection that holds the subject weakly relies on it). `nil` once terminal.
  @usableFromInline var subject: AnyObject?
  @usableFromInline var demand = Subscribers.Demand.none
  /// Whether the parent has been told of this subscriber's first request.
  @usableFromInline var announcedDemand = false
  @usableFromInline var draining = false
  /// While the subscriber's `receive(subscription:)` runs: the subscribing thread (its
  /// ``currentThreadIdentity()``), the only one that may drain meanwhile; 0 after.
  @usableFromInline var attachingThread: UInt
  /// How many values the subscribing thread delivered while attaching (drained, or offered by
  /// its own turn): they count against its call's allowance before the drain that
  /// ``Conduit/attachEnded()`` runs charges its own.
  @usableFromInline var deliveredWhileAttaching = 0
  /// Where senders of other threads wait while the subscriber attaches with a full share
  /// queued (made by the first of them); opened as the attach ends or at `cancel()`.
  @usableFromInline var attachGate: AttachGate?
  /// Values accepted against demand while a drainer was delivering, oldest first.
  /// (Each value is moved out as it is delivered, so the buffer never holds the last
  /// reference to one: released under the lock, its `deinit` could call the subject.)
  @usableFromInline var queue: [Output?] = []
  @usableFromInline var queueHead = 0
  @usableFromInline var completion: Subscribers.Completion<Failure>?
  /// For subjects with a current value: the latest value this subscriber was sent (or the
  /// subject's value when it attached) that it has not received, for lack of demand; its
  /// replay. Kept per subscriber, not read from the subject when demand comes, so that a value
  /// the subject stored but had not yet sent is not replayed and then sent again.
  @usableFromInline var owedValue: Output?

  @inlinable var owesCurrentValue: Bool { owedValue != nil }

  /// Whether a request now would replay the owed value from an idle state: the replay then
  /// runs holding the subject's turn (see ``Conduit``).
  @inlinable var replayNeedsTurn: Bool {
    !draining && downstream != nil && completion == nil && owedValue != nil && mayDrainHere
  }

  /// Whether the calling thread may become the drainer: any thread once attached, only the
  /// subscribing one before (see **Attaching**).
  @inlinable var mayDrainHere: Bool {
    attachingThread == 0 || attachingThread == currentThreadIdentity()
  }

  /// `attachingThread`: the subscribing thread, which calls ``attachEnded()`` once the
  /// subscriber's `receive(subscription:)` returns.
  @inlinable init(
    downstream: Downstream, parent: Parent, subject: AnyObject?, replaysCurrentValue: Bool,
    attachingThread: UInt
  ) {
    self.downstream = downstream
    self.parent = parent
    self.subject = subject
    self.attachingThread = attachingThread
  }

  @usableFromInline enum OfferAction {
    case deliver(Downstream)
    /// The subscribing thread, while attaching, found values of other threads queued and
    /// nobody draining them: it drains them, this value after them.
    case drain
    /// Another thread's value, queued while the subscriber attaches with a full share queued:
    /// the sender waits at the gate (after unlocking; deferred to the end of its call, see
    /// ``AttachGate``) until the attach ends.
    case waitForAttach(TurnWaiter)
    case none
  }

  /// How many values of other threads may wait for a subscriber that is attaching before
  /// the turn offering one parks and its sender waits for the attach to end: a drain's share,
  /// so that the subscribe call delivers a bounded number of them.
  @inlinable static var attachQueueLimit: Int { TurnWaiter.grantsPerTurn }

  /// `replaced`: a value owed before, which the caller releases after unlocking (its `deinit`
  /// may call the subject or cancel this subscription).
  @inlinable mutating func offered(
    _ value: Output, replaysCurrentValue: Bool, replaced: inout Output?
  ) -> OfferAction {
    guard let downstream, completion == nil else { return .none }
    guard demand > 0 else {
      if replaysCurrentValue {
        replaced = owedValue.take()
        owedValue = value
      }
      return .none
    }
    demand -= 1
    replaced = owedValue.take()
    let here = mayDrainHere
    if draining || !here {
      queue.append(value)
      guard !here, queue.count - queueHead >= Self.attachQueueLimit else { return .none }
      let gate = attachGate ?? AttachGate()
      attachGate = gate
      guard let waiter = gate.waiter(for: DeliveryContext.current) else { return .none }
      return .waitForAttach(waiter)
    }
    draining = true
    // Idle with values queued only while attaching (see `pausedForAttach`).
    if queueHead < queue.count {
      queue.append(value)
      return .drain
    }
    if attachingThread != 0 { deliveredWhileAttaching += 1 }
    return .deliver(downstream)
  }

  /// `true` when the caller became the drainer and must run the drain loop.
  /// The parent to tell about the first request (once; `nil` after that or once ended).
  @inlinable mutating func firstRequest() -> Parent? {
    if announcedDemand { return nil }
    announcedDemand = true
    return parent
  }

  @inlinable mutating func requested(_ more: Subscribers.Demand) -> Bool {
    guard downstream != nil else { return false }
    demand += more
    return mayDrainHere && becomeDrainer()
  }

  /// `true` when the caller became the drainer and must run the drain loop.
  @inlinable mutating func finished(_ completion: Subscribers.Completion<Failure>) -> Bool {
    guard downstream != nil, self.completion == nil else { return false }
    self.completion = completion
    return mayDrainHere && becomeDrainer()
  }

  /// The subscriber's `receive(subscription:)` has returned (on the subscribing thread):
  /// `true` when the caller became the drainer of what waits (values and a completion queued
  /// meanwhile, a value owed with demand for it) and must run the drain loop, holding the
  /// subject's turn (see ``Conduit/attachEnded()``).
  @inlinable mutating func attachEnded() -> Bool {
    attachingThread = 0
    guard downstream != nil, !draining else { return false }
    guard queueHead < queue.count || completion != nil || (owedValue != nil && demand > 0) else {
      return false
    }
    draining = true
    return true
  }

  /// Opens the gate where senders wait for the attach (as it ends, or at `cancel()`): the
  /// waiters to dismiss after unlocking.
  @inlinable mutating func openAttachGate() -> [TurnWaiter] {
    attachGate.take()?.open() ?? []
  }

  /// A drain by the subscribing thread stops while it is attaching (instead of handing the
  /// rest to the subject's turn, which would deliver on another thread): the rest waits for
  /// ``attachEnded()``. `true` if it stopped.
  @inlinable mutating func pausedForAttach(adding more: Subscribers.Demand) -> Bool {
    guard attachingThread != 0 else { return false }
    demand += more
    draining = false
    return true
  }

  @inlinable mutating func becomeDrainer() -> Bool {
    if draining { return false }
    draining = true
    return true
  }

  @usableFromInline enum Step {
    case deliver(Downstream, Output)
    case complete(
      Downstream, Subscribers.Completion<Failure>, releasing: Parent?, subject: AnyObject?)
    case idle
  }

  /// The drainer's next action, after adding the demand the last delivery returned.
  @inlinable mutating func nextStep(adding more: Subscribers.Demand) -> Step {
    // The common case (nothing queued, owed or finished) binds nothing, so it retains nothing.
    guard downstream != nil else {
      draining = false
      return .idle
    }
    demand += more
    guard queueHead < queue.count || completion != nil || owesCurrentValue else {
      draining = false
      return .idle
    }
    guard let downstream else { Violation.internalInconsistency("conduit lost its downstream") }
    if queueHead < queue.count {
      guard let value = queue[queueHead].take() else {
        Violation.internalInconsistency("a conduit's queued value was taken twice")
      }
      queueHead += 1
      if queueHead == queue.count {
        queue.removeAll(keepingCapacity: true)
        queueHead = 0
      }
      if attachingThread != 0 { deliveredWhileAttaching += 1 }
      return .deliver(downstream, value)
    }
    // Demand came for the owed value (a request): it is the subscriber's, completion or not.
    if demand > 0, let owed = owedValue.take() {
      demand -= 1
      if attachingThread != 0 { deliveredWhileAttaching += 1 }
      return .deliver(downstream, owed)
    }
    if let completion {
      self.downstream = nil
      let parent = self.parent
      let subject = self.subject
      self.parent = nil
      self.subject = nil
      return .complete(downstream, completion, releasing: parent, subject: subject)
    }
    draining = false
    return .idle
  }

  /// Whether the next value may skip the lock (see ``Conduit``): idle, live, unlimited demand,
  /// nothing queued, owed or finishing.
  @inlinable var allowsFastDelivery: Bool {
    !draining && attachingThread == 0 && downstream != nil && completion == nil
      && demand == .unlimited && queueHead == queue.count && !owesCurrentValue
  }

  /// Terminal; returns what to release (and to detach from) after unlocking. Idempotent.
  @inlinable mutating func cancelled() -> (
    downstream: Downstream?, parent: Parent?, subject: AnyObject?, queue: [Output?]
  ) {
    guard downstream != nil else { return (nil, nil, nil, []) }
    // Moved out (`take()`), not copied and then cleared.
    var queue: [Output?] = []
    swap(&queue, &self.queue)
    queueHead = 0
    completion = nil
    // The value owed goes with the queue, released by the caller after unlocking.
    if let owed = owedValue.take() { queue.append(owed) }
    return (downstream.take(), parent.take(), subject.take(), queue)
  }
}
