public import Dispatch

/// Where a subject's sender waits while a subscriber it delivers to is still inside
/// `receive(subscription:)` on another thread with a full share of values queued (see
/// ``ConduitState``, **Attaching**): the sender feels the attach's pace, as it feels a slow
/// `receive`, instead of queueing values for that subscriber without bound.
///
/// Made (at most once per conduit) by the first sender that must wait, under the conduit's
/// lock; opened once, by the attach's end or by a `cancel()`, which release every waiter.
///
/// The wait ends unless the subscriber's `receive(subscription:)` itself blocks until that
/// sender's call returns: the subscribing thread runs that call as inside a delivery, so a
/// `send` it makes there never blocks for a turn (see ``DeliveryContext``).
@usableFromInline
final class AttachGate: @unchecked Sendable {
  // Safety: `waiters` and `isOpen` are read and written only under the owning conduit's lock;
  // the semaphore is thread-safe.
  /// Senders that will wait (counted under the conduit's lock before they do).
  @usableFromInline var waiters = 0
  @usableFromInline var isOpen = false
  @usableFromInline let opened = DispatchSemaphore(value: 0)

  @usableFromInline init() {}

  /// By a sender, holding no lock, after counting itself in ``waiters``: blocks until opened.
  @inlinable func wait() { opened.wait() }

  /// Under the conduit's lock: opens the gate; returns how many waiters to release (after
  /// unlocking, with ``release(_:)``).
  @inlinable func open() -> Int {
    isOpen = true
    defer { waiters = 0 }
    return waiters
  }

  /// After unlocking: lets `count` waiters go on.
  @inlinable func release(_ count: Int) {
    for _ in 0..<count { opened.signal() }
  }
}
