public import Synchronization

/// A finite, synchronous source of values for ``EmissionSubscription``: what
/// `Publishers.Sequence` and `Record` have in common (`Just`, `Optional.Publisher` and
/// `Result.Publisher` have a ``SingleValueSubscription`` of their own).
@usableFromInline
protocol EmissionSource {
  associatedtype Output
  associatedtype Failure: Error

  /// The next value, or `nil` when the source is exhausted. May run user code (a sequence's
  /// iterator), so it is never called under a lock.
  mutating func next() -> Output?

  /// What the subscriber receives after the last value.
  var completion: Subscribers.Completion<Failure> { get }

  /// The subscription's `description` while it has values left.
  var liveDescription: String { get }

  /// The subscription's `description` once it has completed or been cancelled.
  static var finishedDescription: String { get }

  /// The subscription mirror's children, as Combine shows them for this source while it has
  /// values left (`finished` false) and once it has completed or been cancelled.
  func reflectedChildren(finished: Bool) -> [Mirror.Child]
}

/// The demand state of an ``EmissionSubscription``, as a pure state machine.
///
/// States: `live` (idle, or `draining`: one thread owns delivery) → `terminal`.
///
/// | event | live, idle | live, draining | terminal |
/// |---|---|---|---|
/// | `requested(n)` | become drainer, n its budget | demand +n | ignore |
/// | `refill(+n)` (drainer) | — | demand > 0: hand all of it over; else idle | stop, release source |
/// | `deliveredLastValue` (drainer) | — | terminal, deliver completion | stop, no completion |
/// | `drainerStopped` (drainer saw the cancel flag) | — | — | idle, drainer releases source |
/// | `cancelled` | terminal, release downstream (and source) | terminal, release downstream | nothing |
@usableFromInline
struct EmissionState<Downstream> {
  @usableFromInline var downstream: Downstream?
  @usableFromInline var demand = Subscribers.Demand.none
  @usableFromInline var draining = false

  @inlinable init(downstream: Downstream) { self.downstream = downstream }

  @inlinable var isTerminal: Bool { downstream == nil }

  /// The run to deliver when the caller became the drainer: `more` is its budget (an idle
  /// subscription holds no demand: its last drainer stopped for want of it); `nil` when a
  /// drainer exists (it picks `more` up at its next refill) or the subscription is terminal.
  @inlinable mutating func requested(_ more: Subscribers.Demand)
    -> (downstream: Downstream, budget: Subscribers.Demand)?
  {
    guard let downstream else { return nil }
    if draining {
      demand += more
      return nil
    }
    draining = true
    return (downstream, more)
  }

  @usableFromInline enum Refill {
    /// Deliver up to `budget` values to `downstream` before asking again.
    case deliver(Downstream, budget: Subscribers.Demand)
    /// Idle (keep the source for the next drainer) or terminal (release it).
    case stop(releaseSource: Bool)
  }

  /// The drainer spent its budget (`more`: demand returned meanwhile) and asks for the demand
  /// that accumulated, all of it at once.
  @inlinable mutating func refill(adding more: Subscribers.Demand) -> Refill {
    guard let downstream else {
      draining = false
      return .stop(releaseSource: true)
    }
    let budget = demand + more
    guard budget > 0 else {
      draining = false
      return .stop(releaseSource: false)
    }
    demand = .none
    return .deliver(downstream, budget: budget)
  }

  /// The drainer saw `cancel()` and stops; the source is its to release.
  @inlinable mutating func drainerStopped() { draining = false }

  /// The drainer delivered the last value: become terminal. Returns the downstream to send the
  /// completion to, or `nil` if `cancel()` came first (then no completion is sent).
  @inlinable mutating func deliveredLastValue() -> Downstream? {
    defer { downstream = nil }
    return downstream
  }

  /// Terminal. Returns the downstream to release after unlocking and whether the caller may
  /// release the source (only when no drainer owns it). Idempotent.
  @inlinable mutating func cancelled() -> (downstream: Downstream?, releaseSource: Bool) {
    guard let downstream else { return (nil, false) }
    self.downstream = nil
    return (downstream, !draining)
  }
}

/// Delivers the values of an ``EmissionSource`` against demand, then its completion.
///
/// **Demand**: exactly as requested: `request(.max(3))` then `request(.max(2))` delivers 5;
/// demand returned from `receive(_:)` is added. **Ordering**: the source's order; delivery is
/// serial even when `request` is called from several threads or re-entrantly from `receive`
/// (the thread that is delivering picks up the new demand; no recursion, no recursive lock).
/// The completion follows the last value at once, without waiting for more demand.
/// **Cancellation**: `cancel()` is idempotent and thread-safe; nothing starts after it returns
/// (the drainer checks before every value); the subscriber and the source are released (a
/// drainer on another thread lets go of its reference when it sees the cancellation).
///
/// The drainer takes all the demand there is at once and spends it without the lock, so a run
/// of values costs one lock round trip, plus one atomic load per value for cancellation.
@usableFromInline
final class EmissionSubscription<Source: EmissionSource, Downstream: Subscriber>: Subscription,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
where Source.Output == Downstream.Input, Source.Failure == Downstream.Failure {
  // Safety: `emission` is read and written only inside `lock`. `source` and `lookahead` are
  // touched only by the thread that `EmissionState` made the drainer (or by `init`, before
  // publication, and by `cancel` when no drainer exists), so they are never accessed
  // concurrently. `isCancelled` is atomic.
  /// Guards `emission`: a ``FieldLock``, not a `Lock` of the state, because the unspecialized
  /// `deinit` of a generic class looks up each generic type its fields are made of, and
  /// `Lock<EmissionState<…>>` is four of them where `EmissionState<…>` is one.
  @usableFromInline let lock = FieldLock()
  @usableFromInline @exclusivity(unchecked) var emission: EmissionState<Downstream>
  @usableFromInline let isCancelled = Atomic<Bool>(false)
  @usableFromInline var source: Source?
  @usableFromInline var lookahead: Source.Output?
  @usableFromInline let describedSource: Source
  /// `request(_:)` as compiled where this subscription was created (specialized for its types).
  /// Subscribers call `request` through `any Subscription`, which reaches the generic, slow
  /// implementation; that one only forwards here.
  @usableFromInline let specializedRequest: (EmissionSubscription, Subscribers.Demand) -> Void

  /// Use only for a source with at least one value: `first` is that value.
  @inlinable init(source: Source, first: Source.Output, downstream: Downstream) {
    emission = EmissionState(downstream: downstream)
    describedSource = source
    specializedRequest = { $0.requestSpecialized($1) }
    self.source = source
    lookahead = first
  }

  /// Runs `body` on the state under the lock (the rules of ``Lock`` apply).
  @inlinable @inline(__always)
  func withState<Result>(_ body: (inout EmissionState<Downstream>) -> Result) -> Result {
    lock.withLock { body(&emission) }
  }

  @inlinable func request(_ demand: Subscribers.Demand) {
    specializedRequest(self, demand)
  }

  @inlinable func requestSpecialized(_ demand: Subscribers.Demand) {
    if let run = withState({ $0.requested(demand) }) {
      drain(startingWith: run.downstream, budget: run.budget)
    }
  }

  @inlinable func cancel() {
    let (downstream, releaseSource) = withState { $0.cancelled() }
    isCancelled.store(true, ordering: .releasing)
    if releaseSource {
      source = nil
      lookahead = nil
    }
    withExtendedLifetime(downstream) {}
  }

  /// Delivers the first run (taken with the drainer's role: one lock round a `request`), then
  /// asks for the demand that accumulated until there is none.
  @inlinable func drain(startingWith downstream: Downstream, budget: Subscribers.Demand) {
    guard var more = deliverRun(to: downstream, budget: budget) else { return }
    while true {
      switch withState({ $0.refill(adding: more) }) {
      case .stop(let releaseSource):
        if releaseSource { releaseSourceAfterCancel() }
        return
      case .deliver(let downstream, let budget):
        guard let returned = deliverRun(to: downstream, budget: budget) else { return }
        more = returned
      }
    }
  }

  /// Delivers up to `budget` values without the lock. Returns the demand the downstream
  /// returned meanwhile, or `nil` when the drain is over (last value delivered, or cancelled).
  @inlinable func deliverRun(
    to downstream: borrowing Downstream, budget: Subscribers.Demand
  ) -> Subscribers.Demand? {
    var budget = budget
    var more = Subscribers.Demand.none
    while budget > 0 {
      if isCancelled.load(ordering: .acquiring) {
        // `cancel()` saw a drainer and left the source to it.
        withState { $0.drainerStopped() }
        releaseSourceAfterCancel()
        return nil
      }
      guard let value = lookahead else {
        Violation.internalInconsistency("emission drained past its last value")
      }
      lookahead = source?.next()
      guard lookahead != nil else {
        deliverLast(value, to: downstream)
        return nil
      }
      budget -= 1
      more += downstream.receive(value)
    }
    return more
  }

  @inlinable func releaseSourceAfterCancel() {
    source = nil
    lookahead = nil
  }

  @inlinable func deliverLast(_ value: Source.Output, to downstream: borrowing Downstream) {
    let completion = source?.completion ?? .finished
    source = nil
    // Demand for more is irrelevant now; a `cancel()` during this delivery suppresses the
    // completion, so at most the value already decided on follows a concurrent cancel.
    _ = downstream.receive(value)
    withState { $0.deliveredLastValue() }?.receive(completion: completion)
  }

  @usableFromInline var description: String {
    withState { $0.isTerminal } ? Source.finishedDescription : describedSource.liveDescription
  }

  @usableFromInline var customMirror: Mirror {
    let finished = withState { $0.isTerminal }
    return Mirror(self, children: describedSource.reflectedChildren(finished: finished))
  }

  @usableFromInline var playgroundDescription: Any { description }
}

extension EmissionSource {
  /// No children unless the source says otherwise.
  @usableFromInline func reflectedChildren(finished: Bool) -> [Mirror.Child] { [] }

  /// Subscribes `downstream` to this source: an emission subscription when the source has
  /// values; otherwise `Subscriptions.empty` and the completion at once, as Combine does.
  @inlinable func subscribe<Downstream: Subscriber>(_ downstream: Downstream)
  where Downstream.Input == Output, Downstream.Failure == Failure {
    var source = self
    if let first = source.next() {
      downstream.receive(
        subscription: EmissionSubscription(source: source, first: first, downstream: downstream))
    } else {
      downstream.receive(subscription: Subscriptions.empty)
      downstream.receive(completion: source.completion)
    }
  }
}
