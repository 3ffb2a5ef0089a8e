public import Synchronization

/// The `description` of a ``SingleValueSubscription``.
@usableFromInline
protocol SingleValueLabel {
  static var label: String { get }
}

/// Delivers one value, then `.finished`: the subscription of `Just`, of `Optional.Publisher`
/// with a value and of `Result.Publisher` with a success.
///
/// **Demand**: the first request of at least `.max(1)` delivers the value and, at once, the
/// completion; `request(.none)` traps, as in Combine; later requests (from inside `receive`, or
/// racing on other threads) do nothing. **Cancellation**: idempotent and thread-safe; before the
/// first request it releases the subscriber at once and nothing is delivered; during the
/// delivery (from inside `receive(_:)`, or from another thread) it suppresses the completion,
/// so at most the value already decided on follows a concurrent `cancel()`.
///
/// States (one atomic word; whoever moves it out of `idle` owns `downstream`):
/// | event | idle | delivering | done |
/// |---|---|---|---|
/// | `request(n)` | delivering: deliver the value; then, if still delivering, done and the completion; release the subscriber | ignore | ignore |
/// | `cancel()` | done; release the subscriber | done (the deliverer sends no completion) | nothing |
///
/// Unlike the general ``EmissionSubscription`` it keeps only the value, the subscriber and the
/// state word: a generic class's `deinit` is never specialised and looks up the metadata of each
/// generic type its fields are made of, which was most of the cost of `Just(v).sink`.
///
/// **Layout.** For the same reason no field's type is *derived* from a generic parameter: the
/// subscriber's slot is typed by the parameter `Slot`, always `Downstream?` (checked in
/// ``init(value:slot:)``; reached through ``withDownstream(_:)``), whose metadata the `deinit`
/// reads from the object's class, where an `Optional<Downstream>` field cost a hashed metadata
/// lookup per subscription (14 % of `Just(v).sink`); and the specialised `request` is a function
/// of `AnyObject`, a type with no generic metadata to look up.
@usableFromInline
final class SingleValueSubscription<Output, Label: SingleValueLabel, Downstream: Subscriber, Slot>:
  Subscription, CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
where Downstream.Input == Output {
  // Safety: `slot` is touched only by the thread whose compare-and-exchange moved `state` out
  // of `idle` (or by `init`, before publication); `value` is immutable; `state` is atomic.
  @usableFromInline let value: Output
  /// The subscriber until it is released (a `Downstream?`; only through ``withDownstream(_:)``).
  @usableFromInline @exclusivity(unchecked) var slot: Slot
  @usableFromInline let state = Atomic<UInt8>(State.idle)
  /// `request(_:)` as compiled where this subscription was created (specialised): subscribers
  /// call `request` through `any Subscription`, whose generic implementation only forwards here.
  @usableFromInline let specializedRequest: (AnyObject, Subscribers.Demand) -> Void

  @usableFromInline enum State {
    @usableFromInline static var idle: UInt8 { 0 }
    @usableFromInline static var delivering: UInt8 { 1 }
    @usableFromInline static var done: UInt8 { 2 }
  }

  /// `slot`: the subscriber, as a `Downstream?` (the layout's invariant).
  @inlinable init(value: Output, slot: consuming Slot) {
    assert(Slot.self == Downstream?.self)
    self.value = value
    self.slot = slot
    // Non-capturing, so made without a context here, where the types are known.
    specializedRequest = {
      unsafeDowncast($0, to: SingleValueSubscription.self).requestSpecialized($1)
    }
  }

  /// Runs `body` with the subscriber's slot, in place.
  @inlinable @inline(__always)
  func withDownstream<Result>(_ body: (inout Downstream?) -> Result) -> Result {
    // Safety: `slot` is a `Downstream?` (the layout's invariant); callers keep its rule.
    withUnsafeMutablePointer(to: &slot) { pointer in
      pointer.withMemoryRebound(to: Downstream?.self, capacity: 1) { body(&$0.pointee) }
    }
  }

  @inlinable func request(_ demand: Subscribers.Demand) {
    specializedRequest(self, demand)
  }

  @inlinable func requestSpecialized(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: Label.label)
    guard
      state.compareExchange(
        expected: State.idle, desired: State.delivering, ordering: .acquiring
      ).exchanged
    else { return }
    guard let downstream = withDownstream({ $0.take() }) else { return }
    _ = downstream.receive(value)
    // A `cancel()` meanwhile moved the state to `done`: no completion then.
    if state.compareExchange(
      expected: State.delivering, desired: State.done, ordering: .acquiringAndReleasing
    ).exchanged {
      downstream.receive(completion: .finished)
    }
  }

  @inlinable func cancel() {
    // Before the first request the subscriber is this call's to release; during the delivery
    // it stays the deliverer's.
    if state.exchange(State.done, ordering: .acquiringAndReleasing) == State.idle {
      withExtendedLifetime(withDownstream { $0.take() }) {}
    }
  }

  @usableFromInline var description: String { Label.label }

  /// One unlabelled child, the value, as in Combine.
  @usableFromInline var customMirror: Mirror {
    Mirror(self, children: [(nil, value)])
  }

  @usableFromInline var playgroundDescription: Any { description }
}

extension SingleValueSubscription where Slot == Downstream? {
  /// Subscribes `downstream` to `value`. A sink (or an `AnySubscriber` wrapping one, as
  /// `AnyPublisher` makes) is sent the value and the completion without a subscription object
  /// (see `Subscribers.Sink.receiveSingleValue(_:)`): what it would observe is the same, and
  /// `Just(v).sink` is then three allocations, not four.
  @inlinable static func subscribe(_ downstream: Downstream, to value: Output) {
    if let sink = Subscribers.Sink<Output, Downstream.Failure>.sink(of: downstream) {
      sink.receiveSingleValue(value)
      return
    }
    downstream.receive(subscription: SingleValueSubscription(value: value, slot: downstream))
  }
}
