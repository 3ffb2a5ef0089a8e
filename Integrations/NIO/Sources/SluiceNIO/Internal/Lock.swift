public import Synchronization

/// A `Mutex` whose state may hold non-`Sendable` values (a subscription, a subscriber), as the
/// main package's own `Lock`: `Mutex.withLock` wants its state and result `sending`, which a
/// subscription handed between the pipeline's thread and the event loop cannot be.
///
/// Rules for every user (reviewed by hand, since the compiler no longer checks them): the body
/// only runs a state-machine event — it never calls out (no subscriber, subscription, channel or
/// user code), never blocks and never re-enters the lock; values leave it only as the event's
/// result, and the caller acts on them after unlocking.
@usableFromInline
struct Lock<State>: ~Copyable, @unchecked Sendable {
  // Safety: `State` is reachable only inside `withLock`, which holds the mutex; see above.
  @usableFromInline let mutex: Mutex<Unchecked<State>>

  @inlinable init(_ state: consuming State) {
    mutex = Mutex(Unchecked(state))
  }

  /// Runs `body` with exclusive access to the state; returns what it returns.
  @inlinable @inline(__always)
  func withLock<Result>(_ body: (inout State) -> Result) -> Result {
    mutex.withLock { box in Unchecked(body(&box.value)) }.value
  }
}

/// A value inside a ``Lock``'s mutex, or handed out by `withLock` under its rules.
@usableFromInline
struct Unchecked<Value>: @unchecked Sendable {
  // Safety: only ever inside the mutex, or handed out by `withLock` under its rules.
  @usableFromInline var value: Value

  @inlinable init(_ value: Value) { self.value = value }
}
