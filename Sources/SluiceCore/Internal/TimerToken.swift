public import Synchronization

/// What a scheduled timer action holds to reach the operator that armed it: a strong reference,
/// handed over once. The operator gives it the reference when it arms the timer (``hold(_:)``);
/// whoever ``take()``s it first — the action when it fires, or the operator when it ends — owns
/// it, and the other gets `nil`. So an action that fires late, after its timer was replaced or
/// the operator ended, finds nothing, and the operator stays alive while a timer is armed but no
/// cycle outlives it.
///
/// Not a `weak` reference: one weak reference gives the operator a side table, and then every
/// retain and release of it anywhere on the per-value path takes the slow path.
///
/// A token no action holds any more (`isKnownUniquelyReferenced`) can be armed again, so a
/// scheduler that runs actions at once, or releases them when cancelled, costs no allocation per
/// timer.
@usableFromInline
package final class TimerToken<Owner: AnyObject>: @unchecked Sendable {
  // Safety: the only state is an atomic word holding a +1 reference; `hold` stores it into an
  // empty token, `take` moves it out with one exchange, so exactly one caller owns it.
  @usableFromInline
  let owner = Atomic<UnsafeMutableRawPointer?>(nil)

  @inlinable
  package init() {}

  /// Hands the token a strong reference to `owner` (the token must hold none).
  @inlinable
  package func hold(_ owner: Owner) {
    self.owner.store(Unmanaged.passRetained(owner).toOpaque(), ordering: .releasing)
  }

  /// The reference the token holds, now the caller's; `nil` if someone took it already.
  @inlinable
  package func take() -> Owner? {
    guard let raw = owner.exchange(nil, ordering: .acquiringAndReleasing) else { return nil }
    return Unmanaged<Owner>.fromOpaque(raw).takeRetainedValue()
  }

  @inlinable
  deinit {
    if let raw = owner.load(ordering: .acquiring) {
      Unmanaged<Owner>.fromOpaque(raw).release()
    }
  }
}
