public import Dispatch

#if canImport(Glibc)
  public import Glibc
#elseif canImport(Musl)
  public import Musl
#elseif canImport(Darwin)
  public import Darwin
#endif

/// What one thread knows about the delivery turns it holds: how deep it is inside deliveries,
/// how much of other threads' work its call may still take on, and the turns it must come back
/// to before its call returns. One per thread (thread-local storage), reached without ARC
/// through an unmanaged pointer; its address is the thread's identity
/// (``currentThreadIdentity()``).
///
/// Every engine where one thread delivers what others hand over (a subject's list, `merge`,
/// `flatMap`, `zip`, `combineLatest`, the time operators' delivery) takes *turns* through this
/// context, and three rules make the turns compose, however the engines are wired together:
///
/// - **A call's allowance is shared by every turn it holds.** When a thread that holds no turn
///   takes one (its *call* begins), its allowance is ``allowancePerCall``. Every turn it
///   begins, at any depth, reserves the grants it offers other threads from that allowance
///   (``reserve(_:)``), and every value it delivers for a waiting thread spends one
///   (``spendOne()``); unused grants of a turn that ends under its engine's lock are given back.
///   So one call delivers at most ``allowancePerCall`` values of other threads in all, however
///   many subjects and operators its values pass through (see ``SharedSubscriberList`` and
///   ``DeliveryTurn`` for why nothing else is left to it).
/// - **A thread inside a delivery never blocks for a turn.** Where a thread holding no turn
///   waits for its turn (``TurnWaiter/wait()``), a thread that holds one (``depth`` > 0)
///   *defers* the wait (``deferTurn(_:resume:)``): its value stays queued with a waiter, the
///   call in progress goes on, and the thread comes back to the waiter when its outermost turn
///   ends, holding nothing: the turn in progress delivered the value for it (the waiter is
///   dismissed), or handed it the turn, which it then takes (``resumeDeferred()``). A blocked
///   thread holds no turn, and a thread holding one runs without blocking until it hands the
///   turn over or leaves, so turns that feed each other (feedback through `merge`, subjects
///   that forward to each other, a ring) never deadlock. Nor does a thread coming back to its
///   deferred waiters (``mustNotBlock``): it waits for any of them, on one semaphore, so a
///   wait for one more turn made meanwhile (a released value's `deinit` that sends) is
///   deferred too, and joins them.
/// - **Deferred turns are paid for by the deferring call.** Its call does not return until
///   every deferred waiter is resolved, so a thread that keeps sending from inside deliveries
///   feels the pace of the turns it feeds, as a blocked sender does, and what it can leave
///   queued at once is one value per engine it sent into.
///
/// States: `outside` (depth 0) → `inside(depth)` → (depth back to 0) `resuming` while deferred
/// waiters remain → `outside`.
/// | event | outside | inside | resuming |
/// |---|---|---|---|
/// | ``enter()`` (a turn taken) | inside(1); allowance = ``allowancePerCall`` | depth +1 | depth 1, still resuming; allowance kept (the same call) |
/// | ``exit()`` (a turn left or handed over) | — | depth −1; at 0 (not resuming): resuming if deferred waiters remain, else outside | — |
/// | a deferred waiter resolved (resuming, depth 0) | — | — | dismissed: forget it; granted: take its turn (`resume`); none left: outside |
/// | ``deferTurn(_:resume:)`` | — (a thread outside blocks instead) | waiter kept | waiter kept (the loop comes back to it too) |
/// | ``beginCall()`` … ``endCall()`` (a fan-in's `request`, asking each upstream in turn) | allowance = ``allowancePerCall``, kept by the turns taken until ``endCall()`` | nothing | nothing |
@usableFromInline
struct DeliveryContext {
  /// The thread's state; only its own thread reads or writes it, so it needs no lock.
  @usableFromInline
  struct State {
    /// How many turns this thread holds now (deliveries it is inside).
    @usableFromInline var depth = 0
    /// How many more values of other threads the call in progress may take on.
    @usableFromInline var allowance = 0
    /// The call's outermost turn has ended and it is coming back to deferred waiters
    /// (``DeliveryContext/resumeDeferred()`` runs): turns taken meanwhile are the same call's.
    @usableFromInline var resuming = false
    /// A call that takes several turns one after another, holding none between them (a
    /// fan-in's `request` forwarded to each upstream), is in progress: its turns share the
    /// allowance ``DeliveryContext/beginCall()`` gave it.
    @usableFromInline var inCall = false
    /// Waiters this call left queued from inside deliveries, with what to do on a grant.
    @usableFromInline var deferred: [DeferredTurn] = []
    /// Signalled once by every waiter of this thread as it is granted or dismissed.
    @usableFromInline let wakeUp = DispatchSemaphore(value: 0)

    @inlinable init() {}
  }

  /// A waiter left queued from inside a delivery, and what the thread does if it is granted
  /// the turn (take it: deliver the value and run what follows).
  @usableFromInline
  struct DeferredTurn {
    @usableFromInline let waiter: TurnWaiter
    @usableFromInline let resume: () -> Void

    @inlinable init(waiter: TurnWaiter, resume: @escaping () -> Void) {
      self.waiter = waiter
      self.resume = resume
    }
  }

  @usableFromInline let state: UnsafeMutablePointer<State>

  @inlinable init(_ state: UnsafeMutablePointer<State>) { self.state = state }

  /// How many values of other threads one call may take on (grants it offers and values it
  /// delivers for waiting threads), in every turn it holds together: twice
  /// ``TurnWaiter/grantsPerTurn``, so that a pipeline of one engine keeps its full grants and
  /// as many deliveries for waiting threads.
  @inlinable static var allowancePerCall: Int { 2 * TurnWaiter.grantsPerTurn }

  /// This thread's context (made on the thread's first use, freed when the thread exits).
  @inlinable @inline(__always)
  static var current: DeliveryContext {
    if let raw = pthread_getspecific(deliveryContextKey) {
      return DeliveryContext(raw.assumingMemoryBound(to: State.self))
    }
    return makeCurrent()
  }

  @usableFromInline
  static func makeCurrent() -> DeliveryContext {
    let state = UnsafeMutablePointer<State>.allocate(capacity: 1)
    state.initialize(to: State())
    pthread_setspecific(deliveryContextKey, state)
    return DeliveryContext(state)
  }

  /// A context bound to no thread, for tests that play several senders on one thread (each
  /// with its own identity, allowance and semaphore); freed with ``deallocateDetached()``.
  static func detached() -> DeliveryContext {
    let state = UnsafeMutablePointer<State>.allocate(capacity: 1)
    state.initialize(to: State())
    return DeliveryContext(state)
  }

  /// Frees a context made by ``detached()``.
  func deallocateDetached() {
    state.deinitialize(count: 1)
    state.deallocate()
  }

  /// The thread's identity: nonzero, unique among the threads alive now.
  @inlinable var identity: UInt { UInt(bitPattern: state) }

  /// How many turns this thread holds now.
  @inlinable var depth: Int { state.pointee.depth }

  /// Whether the thread must not block for a turn: it holds one, or it is coming back to
  /// deferred waiters (``resumeDeferred()``). The second matters as much as the first: code
  /// runs there at depth 0 — the `deinit` of a value released with a resolved waiter's turn,
  /// which may send — and a send that blocked there would wait on the semaphore the deferred
  /// waiters signal (taking one of their signals for its own, so that it went on with its
  /// value still queued and a later grant of it was never taken: every sender of the subject
  /// then waited for ever), or for a turn queued behind one of its own deferred waiters (a
  /// deadlock). Deferred instead, its waiter joins the loop that is coming back to them.
  @inlinable var mustNotBlock: Bool { state.pointee.depth > 0 || state.pointee.resuming }

  /// The semaphore this thread's waiters signal.
  @inlinable var wakeUp: DispatchSemaphore { state.pointee.wakeUp }

  /// A turn is taken: the call begins (with a fresh allowance) if the thread held none.
  @inlinable @inline(__always)
  func enter() {
    if state.pointee.depth == 0, !state.pointee.resuming, !state.pointee.inCall {
      state.pointee.allowance = Self.allowancePerCall
    }
    state.pointee.depth += 1
  }

  /// A call that may take several turns one after another begins: if the thread holds no turn
  /// and no call is in progress, its allowance is ``allowancePerCall`` now, and turns it takes
  /// before ``endCall()`` share it (each would otherwise begin a call of its own). Returns
  /// whether this began the call (then call ``endCall()`` as it ends).
  @inlinable
  func beginCall() -> Bool {
    guard state.pointee.depth == 0, !state.pointee.resuming, !state.pointee.inCall else {
      return false
    }
    state.pointee.inCall = true
    state.pointee.allowance = Self.allowancePerCall
    return true
  }

  /// Ends the call ``beginCall()`` began.
  @inlinable
  func endCall() { state.pointee.inCall = false }

  /// A turn is left (or handed over). When the thread holds none any more and deferred waiters
  /// remain, it comes back to them before its call returns.
  @inlinable @inline(__always)
  func exit() {
    state.pointee.depth -= 1
    if state.pointee.depth == 0, !state.pointee.resuming, !state.pointee.deferred.isEmpty {
      resumeDeferred()
    }
  }

  /// Reserves up to `wanted` values of others from the call's allowance: the grants a turn it
  /// begins offers. Returns how many it got.
  @inlinable @inline(__always)
  func reserve(_ wanted: Int) -> Int {
    let granted = max(0, min(wanted, state.pointee.allowance))
    state.pointee.allowance -= granted
    return granted
  }

  /// Gives back grants a turn reserved and did not use.
  @inlinable
  func giveBack(_ unused: Int) { state.pointee.allowance += unused }

  /// Spends one of the allowance on a waiting thread's value, if any is left.
  @inlinable
  func spendOne() -> Bool {
    guard state.pointee.allowance > 0 else { return false }
    state.pointee.allowance -= 1
    return true
  }

  /// How much of the allowance is left (for tests and the model's counterpart).
  @inlinable var allowance: Int { state.pointee.allowance }

  /// Keeps `waiter` (queued from inside a delivery, or while coming back to deferred waiters:
  /// see ``mustNotBlock``) until the thread's outermost turn ends; `resume` runs if the waiter
  /// is granted the turn.
  @usableFromInline
  func deferTurn(_ waiter: TurnWaiter, resume: @escaping () -> Void) {
    state.pointee.deferred.append(DeferredTurn(waiter: waiter, resume: resume))
  }

  /// Comes back to the deferred waiters, holding no turn: waits until any of them is resolved;
  /// a dismissed one needs nothing more (its value was delivered for this thread), a granted
  /// one's turn is taken (`resume`, inside a turn again, with what is left of the allowance).
  /// New deferred waiters that those turns leave are handled in the same loop.
  @usableFromInline
  func resumeDeferred() {
    state.pointee.resuming = true
    while !state.pointee.deferred.isEmpty {
      // One signal per resolved waiter: wait for one, then take a resolved waiter.
      state.pointee.wakeUp.wait()
      guard let index = state.pointee.deferred.firstIndex(where: { $0.waiter.isResolved }) else {
        Violation.internalInconsistency("a deferred turn's waiter was signalled unresolved")
      }
      let turn = state.pointee.deferred.remove(at: index)
      guard turn.waiter.isGranted else { continue }
      turn.resume()  // enter() … exit(): deferrals it makes join this loop
    }
    state.pointee.resuming = false
  }
}

/// The thread-local key of ``DeliveryContext/current``; its destructor frees a thread's context
/// when the thread exits.
@usableFromInline
let deliveryContextKey: pthread_key_t = {
  var key = pthread_key_t()
  let created = pthread_key_create(&key) { raw in
    #if canImport(Darwin)
      let state = raw.assumingMemoryBound(to: DeliveryContext.State.self)
    #else
      guard let raw else { return }
      let state = raw.assumingMemoryBound(to: DeliveryContext.State.self)
    #endif
    state.deinitialize(count: 1)
    state.deallocate()
  }
  guard created == 0 else {
    Violation.internalInconsistency("no thread-local key for delivery turns (error \(created))")
  }
  return key
}()
