import Dispatch
import Synchronization

/// A subscriber's replay running on its own thread while another thread holds the subject's
/// turn (see ``SubjectCore/withReplayTurn(_:)``): queued in the turn's work like a waiting
/// sender, it is where the holder stops until the replay is done.
///
/// The replay delivers without the turn, so values the holder delivers to the replaying
/// subscriber meanwhile queue behind the replay in its conduit. The holder runs its queue up to
/// this waiter — the work queued before the replay asked, which includes what the holder's own
/// deliveries sent into the subject — and then waits here (``pause()``, ``waitForReplay()``),
/// holding the turn, so that no sender adds to that conduit while the replay drains it. The
/// replaying thread delivers what was queued within its call's allowance; if more is left, it
/// hands the rest of the drain back to the holder (first in the turn's queue), then lets the
/// holder go on (``resume()``). So the replay's call delivers at most its allowance of other
/// threads' values, however much the holder queued, and the holder delivers the rest: its own
/// work, as a Combine sender waits for the subscriber's lock. A holder that would hand the turn
/// to a waiting sender queued before the replay's waiter waits for the replay first
/// (``SharedSubscriberList/pauseAtPendingReplay(_:)``), so that the rest comes back to the thread
/// that queued it, never to the next holder.
///
/// States (``state``), each transition a single atomic step:
///
/// | event | waiting | paused | withdrawn / resumed |
/// |---|---|---|---|
/// | the holder reaches it, or is about to hand the turn on before it, under the subject's lock (``pause()``) | paused: it waits | — | withdrawn: skipped |
/// | the replay is done, under the subject's lock (``withdraw()``) | withdrawn: nobody waits | resumed: the holder is woken (``resume()``, after unlocking) | — |
///
/// The holder waits only for the replaying thread's drain — a bounded amount of delivery that
/// never blocks for a turn (a thread inside a delivery defers such waits; see
/// ``DeliveryContext``) — so the wait ends unless the replaying subscriber's `receive` itself
/// blocks until the holder's call returns.
@usableFromInline
final class ReplayWaiter: Sendable {
  /// ``waiting``, ``paused``, ``withdrawn`` or ``resumed``.
  let state = Atomic<UInt8>(0)
  static var waiting: UInt8 { 0 }
  static var paused: UInt8 { 1 }
  static var withdrawn: UInt8 { 2 }
  static var resumed: UInt8 { 3 }
  /// Signalled once, by ``resume()``, for the holder paused in ``waitForReplay()``.
  let holderWakeUp = DispatchSemaphore(value: 0)

  @usableFromInline init() {}

  /// By the holder, under the subject's lock, as it reaches the waiter: `true` if the replay
  /// is still running (the holder must ``waitForReplay()`` after unlocking); `false` if it was
  /// withdrawn (skipped).
  @usableFromInline
  func pause() -> Bool {
    state.compareExchange(
      expected: Self.waiting, desired: Self.paused, ordering: .acquiringAndReleasing
    ).exchanged
  }

  /// By the holder, holding no lock, after ``pause()``: blocks until ``resume()``.
  @usableFromInline
  func waitForReplay() { holderWakeUp.wait() }

  /// By the replaying thread, under the subject's lock, as its replay is done: `true` if the
  /// holder had not reached the waiter (nobody waits; it skips it); `false` if the holder is
  /// paused, and must be resumed after unlocking.
  @usableFromInline
  func withdraw() -> Bool {
    state.compareExchange(
      expected: Self.waiting, desired: Self.withdrawn, ordering: .acquiringAndReleasing
    ).exchanged
  }

  /// By the replaying thread, after a ``withdraw()`` that found the holder paused: lets it go on.
  @usableFromInline
  func resume() {
    state.store(Self.resumed, ordering: .releasing)
    holderWakeUp.signal()
  }
}
