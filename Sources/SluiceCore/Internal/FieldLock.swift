public import Synchronization

/// A lock that protects stored properties of the object that holds it, instead of a value of
/// its own.
///
/// ``Lock`` wraps its state in `Mutex<UncheckedSendable<State>>`: for a generic `State`, each of
/// those wrapper types is a generic type the runtime must look up (hash its arguments) whenever
/// unspecialised code touches it — notably the `deinit` of a generic class, which Swift never
/// specialises. An object made and dropped per subscription (a subject's ``Conduit``) pays that
/// on every cycle. `FieldLock`'s own type is not generic, so destroying it needs no lookup; the
/// state it protects lives in the owner's `@exclusivity(unchecked)` stored properties, read and
/// written only inside ``withLock(_:)``.
///
/// The rules of ``Lock`` apply unchanged: the body is short, never calls out, never blocks and
/// never re-enters; what the state drops is released by the caller after unlocking.
@usableFromInline
package struct FieldLock: ~Copyable, @unchecked Sendable {
  // Safety: a mutex and an atomic; the state it protects is the owner's responsibility (above).
  @usableFromInline
  let mutex = Mutex<Void>(())
  /// For the thread sanitizer only, as in ``Lock``: it does not see a contended `Mutex`'s
  /// hand-over through the kernel, so the body's first and last accesses are made visible to it.
  @usableFromInline
  let sanitizerEdge = Atomic<Int>(0)

  @inlinable
  package init() {}

  /// Runs `body` while holding the lock and returns what it returns.
  @inlinable @inline(__always)
  package func withLock<Result>(_ body: () -> Result) -> Result {
    mutex.withLock { _ -> UncheckedSendable<Result> in
      _ = sanitizerEdge.load(ordering: .acquiring)
      defer { sanitizerEdge.store(0, ordering: .releasing) }
      return UncheckedSendable(body())
    }.value
  }
}
