public import Synchronization

/// Lets values reach a downstream without a lock while another thread may end the
/// subscription, and decides who releases the downstream afterwards.
///
/// An operator's upstream delivers values serially, but `cancel()` (or a final value) can come
/// from any thread at any time, and the rules require the downstream to be released then. The
/// gate is one atomic word: a *not yet open* bit, a *closed* bit, a *released* bit and a count
/// of deliveries in flight. A delivery `enter`s (one atomic add) and `exit`s (one atomic
/// subtract); `open()` admits deliveries (a gate starts unopened: no value before the
/// subscription); closing sets the closed bit. Whoever leaves the gate closed with nothing in
/// flight — the closer, or the last delivery to exit — claims the release, exactly once.
///
/// | event | unopened | open | closed, deliveries in flight | closed, idle |
/// |---|---|---|---|---|
/// | `enter()` | `.closed` | `.entered` | `.closed` | `.closed`, or `.closedReleasing` if this call claims the release |
/// | `exit()` | — | `false` | `false`; the last one claims the release: `true` | — |
/// | `open()` | open | — | — | stays closed |
/// | `close()` | closed; `true` (caller releases) | closed; `true` if idle | `false` (already closed) | `false` |
///
/// Costs two uncontended atomic operations per value and never blocks.
@usableFromInline
package struct DeliveryGate: ~Copyable, Sendable {
  @usableFromInline static var closedBit: UInt { 1 }
  @usableFromInline static var releasedBit: UInt { 2 }
  @usableFromInline static var unopenedBit: UInt { 4 }
  @usableFromInline static var oneDelivery: UInt { 8 }

  @usableFromInline let word: Atomic<UInt>

  /// A gate that starts unopened (no value before the subscription), or open when `open`
  /// (operators that handle values arriving before their subscription, as Combine's do).
  @inlinable package init(open: Bool = false) {
    word = Atomic(open ? 0 : Self.unopenedBit)
  }

  /// Admits deliveries, unless the gate closed first.
  @inlinable func open() {
    word.bitwiseAnd(~Self.unopenedBit, ordering: .acquiringAndReleasing)
  }

  @usableFromInline enum Entry {
    /// Deliver, then call ``exit()``.
    case entered
    /// Do not deliver.
    case closed
    /// Do not deliver, and release the downstream: this call was the last to leave.
    case closedReleasing
  }

  /// Runs `body` as one delivery, unless the gate is not open (then returns `nil`). Calls
  /// `release` when this call is the one the gate chose to release the downstream (the gate
  /// closed meanwhile and nothing else is in flight). Every delivery goes through here, so the
  /// release rule lives in one place.
  @inlinable package func pass<Result>(_ body: () -> Result, releasing release: () -> Void)
    -> Result?
  {
    switch enter() {
    case .entered:
      defer { if exit() { release() } }
      return body()
    case .closed:
      return nil
    case .closedReleasing:
      release()
      return nil
    }
  }

  /// Starts one delivery, unless the gate is closed.
  @inlinable func enter() -> Entry {
    let old = word.wrappingAdd(Self.oneDelivery, ordering: .acquiringAndReleasing).oldValue
    if old & (Self.closedBit | Self.unopenedBit) == 0 { return .entered }
    return exit() ? .closedReleasing : .closed
  }

  /// Ends a delivery that ``enter()`` started. `true` when the gate closed meanwhile and this was
  /// the last delivery: the caller releases the downstream.
  @inlinable func exit() -> Bool {
    let now = word.wrappingSubtract(Self.oneDelivery, ordering: .acquiringAndReleasing).newValue
    return now == Self.closedBit && claimRelease()
  }

  /// Closes the gate (idempotent). `true` when the caller must release the downstream now (no
  /// delivery in flight); otherwise the last delivery to exit does.
  @inlinable package func close() -> Bool {
    let old = word.bitwiseOr(Self.closedBit, ordering: .acquiringAndReleasing).oldValue
    guard old & Self.closedBit == 0 else { return false }
    if old & Self.unopenedBit != 0 {
      word.bitwiseAnd(~Self.unopenedBit, ordering: .acquiringAndReleasing)
    }
    // Fails while deliveries are in flight (then the last one to exit claims it).
    return claimRelease()
  }

  /// Closed with nothing in flight → released; only one caller succeeds.
  @inlinable func claimRelease() -> Bool {
    word.compareExchange(
      expected: Self.closedBit, desired: Self.closedBit | Self.releasedBit,
      ordering: .acquiringAndReleasing
    ).exchanged
  }
}
