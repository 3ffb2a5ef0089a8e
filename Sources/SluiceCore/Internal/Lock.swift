public import Synchronization

/// A `Mutex` whose protected state may hold non-`Sendable` values: subscribers, subscriptions,
/// user closures.
///
/// `Mutex.withLock` requires its state and result to be `sending`, which a subscription cannot
/// satisfy: its whole job is to hand the same downstream reference to whichever thread delivers
/// the next signal. This wrapper keeps `Mutex` as the primitive and moves that obligation to the
/// subscription's state machine.
///
/// Rules for every user of `Lock` (reviewed by hand, since the compiler no longer checks them):
/// - the body is short, never calls out (no subscriber, subscription, user closure or `deinit`
///   that could run user code), never blocks and never re-enters the same lock;
/// - values leave the body only as the result of a state-machine event, and the caller performs
///   the resulting action after the lock is released;
/// - objects the state drops (a cancelled downstream, a finished closure) are returned and
///   released by the caller after unlocking, so their `deinit` never runs under the lock.
@usableFromInline
package struct Lock<State>: ~Copyable, @unchecked Sendable {
  // Safety: `State` is only reachable inside `withLock`, which holds the mutex; see the rules above.
  @usableFromInline
  let mutex: Mutex<UncheckedSendable<State>>
  /// An acquire load after locking and a release store before unlocking, for the thread
  /// sanitizer only: on Linux, `Mutex` hands a contended lock over through the kernel (a
  /// priority-inheriting futex), which the sanitizer does not see, so it reported races between
  /// two bodies of the same lock (reproduced without Sluice: 4 threads incrementing a property
  /// inside one `Mutex`). These two accesses are what it sees instead; on x86 and arm64 an
  /// acquire load and a release store are plain loads and stores, next to the lock word.
  @usableFromInline
  let sanitizerEdge = Atomic<Int>(0)

  @inlinable
  package init(_ initialState: consuming State) {
    mutex = Mutex(UncheckedSendable(initialState))
  }

  /// Runs `body` with exclusive access to the state and returns what it returns.
  @inlinable @inline(__always)
  package func withLock<Result>(_ body: (inout State) -> Result) -> Result {
    mutex.withLock { box -> UncheckedSendable<Result> in
      _ = sanitizerEdge.load(ordering: .acquiring)
      defer { sanitizerEdge.store(0, ordering: .releasing) }
      return UncheckedSendable(body(&box.value))
    }.value
  }
}

/// A value carried across an isolation boundary that the compiler cannot see through.
///
/// Every use names, in a `// Safety:` comment at the use site, the invariant that makes the
/// transfer safe (for example: "the scheduler runs the action exactly once, on its queue").
@usableFromInline
package struct UncheckedSendable<Value>: @unchecked Sendable {
  // Safety: see the type's documentation; each construction site justifies itself.
  @usableFromInline
  package var value: Value

  @inlinable
  package init(_ value: Value) { self.value = value }
}
