import Synchronization

/// A `Mutex` whose state may hold values that are not `Sendable` (a subscriber, a parked
/// continuation), as SluiceCore's own lock: `Mutex.withLock` wants its state and result
/// `sending`, which a subscription's state cannot be (it hands the same subscriber to whichever
/// thread delivers next).
///
/// Rules for its users, checked by hand since the compiler no longer does: the body only runs a
/// state-machine event (short, never calls out, never blocks, never re-enters); what leaves the
/// body is that event's action, performed after unlocking; objects the state drops are
/// released after unlocking.
@usableFromInline
struct StateLock<State>: ~Copyable, @unchecked Sendable {
  // Safety: `State` is reachable only inside `withLock`, which holds the mutex; see the rules.
  @usableFromInline let mutex: Mutex<UncheckedBox<State>>

  @inlinable init(_ initialState: consuming State) {
    mutex = Mutex(UncheckedBox(initialState))
  }

  /// Runs `body` with exclusive access to the state and returns what it returns.
  @inlinable @inline(__always)
  func withLock<Result>(_ body: (inout State) -> Result) -> Result {
    mutex.withLock { box in UncheckedBox(body(&box.value)) }.value
  }
}

/// A value inside a ``StateLock``, or leaving it as a state-machine event's result.
@usableFromInline
struct UncheckedBox<Value>: @unchecked Sendable {
  // Safety: only ever inside the lock, or the result of a state-machine event (see StateLock).
  @usableFromInline var value: Value
  @inlinable init(_ value: Value) { self.value = value }
}
