public import Logging
public import NIOCore
public import Sluice
public import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The subscriber a ``PipelineServer`` attaches to one connection's pipeline: encodes each
/// value into a frame and writes the frames in batches, asking for the next value only while
/// the batch has room (see ``PipelineWriterState`` for the rules and the table).
///
/// **Threads**: `receive` runs wherever the pipeline sends (the writer's own requests run in a
/// `Task`, so a synchronous pipeline runs on the cooperative pool, never on an event loop);
/// writes, heartbeats and write completions run on the channel's event loop. The lock guards
/// only the state machine; encoding (the value's own code), requests, cancels and channel
/// calls happen after unlocking.
///
/// **Demand**: `prefetch` values at a time (what is owed: ``demanded`` minus ``received``);
/// when it runs out the state machine decides, under the lock, whether to ask for more (see
/// ``PipelineWriterState``) — so at most `prefetch` − 1 values arrive after a stall, and nothing
/// is asked while it lasts (checked under the lock as a request call asks). Inside the
/// writer's own request calls it asks for fewer while a synchronous source is slow per value
/// (``SignalSide/ramp``), so that a call yields its thread soon. Inside its own request call the
/// writer never returns demand from `receive`: the call asks again once the source returns from
/// the last request (``SignalSide/askAgain``), so a synchronous hand-written source that ignores
/// what `receive` returns, or sends values nobody asked for and drops their returned demand, is
/// served to its end rather than stalled. A value from another thread (an asynchronous source)
/// gets the next `prefetch` as `receive`'s returned demand, as Combine's rules have a source
/// add it: a `request` from inside `receive` would deadlock a source that emits holding its own
/// lock or serial queue (or recurse through one that emits inside `request`), and one from a
/// task of its own would leave a hot source (a subject) without demand meanwhile, dropping
/// values. Only one request call of the writer's asks at a time (``becomeRequester(_:)``), and
/// both ways of asking add demand by compare-and-swap (``reserveDemand(upTo:received:)``), so
/// the pipeline is never owed more than `prefetch`.
///
/// **The fast path**: frames are encoded into `filling`. A value that arrives inside the
/// writer's own `request` call, on its thread (a synchronous source emitting what it was asked
/// for), with demand left and `filling` under `batchBytes`, takes no lock; `filling` joins the
/// state machine's `pending` frames when it is full, when the demand runs out, when the call
/// returns, or at the next tick (see ``PipelineWriterState``: a value waits about a millisecond
/// at most, however long the source takes for the next). Any other value hands `filling` over
/// at once, under the lock.
///
/// **Who touches `filling`**: whoever holds `fillingOwner` (its thread): each signal for its
/// duration, the request call's end and the tick for their hand-over. Signals are serial, so
/// only a hand-over can find it held: a signal then waits (a lock and a copy), while the
/// request call's end and the tick leave the frames to the holder — a signal of another
/// thread hands them over as it ends, and the tick tries again at the next.
@usableFromInline
final class PipelineWriter<Value: WireCodable, Failure: Error>: Subscriber, PipelineConnection,
  @unchecked Sendable
{
  // Safety: `state` is behind its lock; `filling` is touched only by the holder of
  // `fillingOwner` (see "Who touches `filling`"); the rest of `signalSide` only by the thread
  // inside the writer's request call; `requester` is atomic; the other properties are
  // immutable.
  @usableFromInline typealias Input = Value

  @usableFromInline let state: Lock<PipelineWriterState>
  /// What only the signal path (and the writer's own request call) touches, behind a pointer of
  /// its own: a stored `var` of a class costs a dynamic exclusivity check on every access,
  /// here on every value; the rules above already make the accesses exclusive.
  @usableFromInline let signalSide: UnsafeMutablePointer<SignalSide>

  /// See ``PipelineWriter/signalSide``.
  @usableFromInline
  struct SignalSide {
    /// Frames encoded and not yet handed to the state machine.
    @usableFromInline var filling = ByteBuffer()
    /// The bytes of frames the current request call may produce before it yields (returns,
    /// with a new call scheduled), so that one connection's synchronous pipeline does not hold
    /// a thread of the pool for long (with ``callDeadline`` for a slow one): 0 for a
    /// connection's first call (its first values go out at once), 16 batches after that.
    @usableFromInline var callBudget = 0
    /// The bytes of frames produced in the current request call.
    @usableFromInline var callProduced = 0
    /// When the current request call yields however few bytes it produced (a slow synchronous
    /// source, a blocking read per value): ``PipelineWriter/callTimeBudget`` after it began.
    @usableFromInline var callDeadline = NIODeadline.distantFuture
    /// The current request call stopped asking because its budget was spent.
    @usableFromInline var yielded = false
    /// The demand the current request call gave was used inside it, in time and within its
    /// budget: the call asks for ``ramp`` more once the source returns.
    @usableFromInline var askAgain = false
    /// How many values the writer's own request call asks for next: a call begins with this
    /// many and asks for twice as many (up to `prefetch`) each time its demand is used within
    /// ``callDeadline``; back to 1 when a call runs out of time. So after a connection's first
    /// call (`prefetch` values), a call of a source slow per value holds its thread of the pool
    /// for about the deadline plus a value's time (asked for `prefetch` a call, a source taking
    /// 500 ms a value held it 8 s a call), and a source that turns fast is back at `prefetch`
    /// within a few values.
    @usableFromInline var ramp: Int

    @inlinable init(prefetch: Int) { ramp = prefetch }
  }
  /// The thread inside the writer's own `request` call, or 0 (see ``becomeRequester(_:)``).
  @usableFromInline let requester = Atomic<UInt>(0)
  /// A call of the writer's found another one requesting and left it a request to make.
  @usableFromInline let askWanted = Atomic<Bool>(false)
  /// The thread that may touch `filling` now, or 0 (see "Who touches `filling`").
  @usableFromInline let fillingOwner = Atomic<UInt>(0)
  /// Whether the tick is scheduled.
  @usableFromInline let tickArmed = Atomic<Bool>(false)
  /// How long a request call of the writer's may go on asking for values before it yields
  /// (returns, with a new call scheduled as a task of its own): a slow synchronous source
  /// would otherwise hold its thread of the cooperative pool — as wide as the cores — for as
  /// long as its byte budget lasts (minutes at a few values a second), and connections beyond
  /// the core count would get none. Checked when the demand given runs out, so a call lasts
  /// at most this plus the time the source takes for the values it was last asked for
  /// (``SignalSide/ramp``).
  static var callTimeBudget: TimeAmount { .milliseconds(50) }
  /// How often the tick takes the frames of a running request call (see
  /// ``PipelineWriterState``, **The tick**).
  static var tickInterval: TimeAmount { .milliseconds(1) }
  /// Values demanded from the pipeline, in all: added to (rarely: once a `prefetch`) by
  /// whoever asks for more (``reserveDemand(upTo:received:)``). With ``received``: two
  /// counters with one writer each on the per-value path, so that a value costs no locked
  /// instruction for the demand (a shared counter decremented per value was half of
  /// `receive`'s own time).
  @usableFromInline let demanded = Atomic<Int>(0)
  /// Values received, in all: written only by `receive`, holding `filling` (so one signal at a
  /// time: a load and a store, not a read-modify-write).
  @usableFromInline let received = Atomic<Int>(0)
  /// Adds to ``demanded`` what brings the values owed up to `wanted`, counting `received`
  /// values (the caller's reading: a stale one is lower, so it asks for less): the number
  /// added, 0 when none is missing. A compare-and-swap, so that a request call of the writer's
  /// and a value from another thread asking at once never owe more than `wanted` between them.
  @inlinable
  func reserveDemand(upTo wanted: Int, received: Int) -> Int {
    var current = demanded.load(ordering: .relaxed)
    while true {
      let missing = wanted - max(0, current &- received)
      guard missing > 0 else { return 0 }
      let (exchanged, original) = demanded.compareExchange(
        expected: current, desired: current &+ missing, ordering: .relaxed)
      if exchanged { return missing }
      current = original
    }
  }

  /// Values demanded at a time.
  @usableFromInline let prefetch: Int
  @usableFromInline let channel: any Channel
  @usableFromInline let maximumFrameLength: Int
  @usableFromInline let batchBytes: Int
  @usableFromInline let logger: Logger

  @usableFromInline
  init(channel: any Channel, configuration: PipelineServerConfiguration, logger: Logger) {
    self.channel = channel
    self.maximumFrameLength = configuration.maximumFrameLength
    self.batchBytes = configuration.batchBytes
    self.prefetch = configuration.prefetch
    self.logger = logger
    state = Lock(PipelineWriterState(batchBytes: batchBytes))
    signalSide = .allocate(capacity: 1)
    signalSide.initialize(to: SignalSide(prefetch: configuration.prefetch))
  }

  deinit {
    signalSide.deinitialize(count: 1)
    signalSide.deallocate()
  }

  /// The frames encoded and not yet handed over (see "The fast path").
  @inlinable var filling: ByteBuffer {
    unsafeAddress { UnsafePointer(signalSide).pointer(to: \.filling)! }
    unsafeMutableAddress { signalSide.pointer(to: \.filling)! }
  }

  // MARK: Subscriber

  @usableFromInline
  func receive(subscription: any Subscription) {
    switch state.withLock({ $0.subscribed(subscription) }) {
    case .request(let subscription):
      request(from: subscription, first: true)
    case .cancel(let subscription):
      subscription.cancel()
    }
  }

  /// `@inlinable`: the per-value path, specialised for the value's type in the caller's
  /// module (encoding an integer costs twice as much through the generic entry point).
  @inlinable
  func receive(_ input: Value) -> Subscribers.Demand {
    let thread = currentThreadID()
    claimFilling(thread)
    let count = received.load(ordering: .relaxed) &+ 1
    received.store(count, ordering: .relaxed)
    let left = demanded.load(ordering: .relaxed) &- count
    let start = filling.writerIndex
    let length: Int
    do {
      length = try WireFrame.write(value: input, into: &filling)
    } catch {
      filling.moveWriterIndex(to: start)
      let cancel = fail("encoding a value failed: \(error)")
      releaseFilling()
      cancel?.cancel()
      return .none
    }
    guard length <= maximumFrameLength else {
      filling.moveWriterIndex(to: start)
      let cancel = fail(
        "a value of \(length - 1) bytes does not fit the server's maximum frame length of "
          + "\(maximumFrameLength) bytes")
      releaseFilling()
      cancel?.cancel()
      return .none
    }
    let inCall = requester.load(ordering: .relaxed) == thread
    if inCall {
      signalSide.pointee.callProduced += length
      if left > 0, filling.readableBytes < batchBytes {
        // Inside the writer's own request call, with demand left: nothing to decide yet; the
        // frames are handed over when the batch is full, the demand runs out, the call
        // returns, or the tick takes them.
        releaseFilling()
        armTick()
        return .none
      }
    }
    let (more, flush, held) = state.withLock { state in
      let (more, flush) = state.received(&filling)
      return (more, flush, state.framesHeld)
    }
    shrinkFilling()
    releaseFilling()
    if flush { scheduleFlush() }
    if held { armTick() }
    guard more, left <= 0 else { return .none }
    guard inCall else {
      // From another thread than the writer's own call (an asynchronous source): up to
      // `prefetch` owed again, returned (see "Demand"), unless a call of the writer's asked
      // meanwhile.
      let missing = reserveDemand(upTo: prefetch, received: count)
      return missing > 0 ? .max(missing) : .none
    }
    // The call returns (``SignalSide/yielded``) and a new one is scheduled, when it spent
    // its bytes or its time; a slow source's next call asks for one value at a time.
    if NIODeadline.now() >= signalSide.pointee.callDeadline {
      signalSide.pointee.yielded = true
      signalSide.pointee.ramp = 1
      return .none
    }
    if signalSide.pointee.callProduced >= signalSide.pointee.callBudget {
      signalSide.pointee.yielded = true
      return .none
    }
    // In time: twice as much (up to `prefetch`), asked by the same call once the source
    // returns from its `request`.
    signalSide.pointee.ramp = min(prefetch, 2 * signalSide.pointee.ramp)
    signalSide.pointee.askAgain = true
    return .none
  }

  @usableFromInline
  func receive(completion: Subscribers.Completion<Failure>) {
    claimFilling(currentThreadID())
    defer { releaseFilling() }
    switch completion {
    case .finished:
      WireFrame.write(.finished, into: &filling)
    case .failure(let error):
      logger.notice(
        "the pipeline failed; sending the failure to the client",
        metadata: ["error": "\(error)"])
      WireFrame.write(
        .failed, text: String(describing: error), maximumFrameLength: maximumFrameLength,
        into: &filling)
    }
    let (flush, held) = state.withLock { ($0.completed(&filling), $0.framesHeld) }
    if flush { scheduleFlush() }
    if held { armTick() }  // a request call runs (a source blocked in it): out within a tick
  }

  // MARK: Events from the connection (on its event loop)

  /// The client went away: cancels the pipeline unless it completed.
  @usableFromInline
  func connectionClosed() {
    state.withLock { $0.closed() }?.cancel()
  }

  /// Nothing was written for the heartbeat interval: writes a heartbeat unless frames wait or
  /// a write is in flight (then the client has bytes to read anyway).
  @usableFromInline
  func heartbeatDue() {
    guard state.withLock({ $0.heartbeatDue() }) else { return }
    var frame = channel.allocator.buffer(capacity: WireFrame.headerLength)
    WireFrame.write(.heartbeat, into: &frame)
    perform(PipelineWriterState.Write(frames: frame, halfClose: false, resume: false))
  }

  // MARK: Internals

  /// A value cannot be sent: ends the stream with a failure frame. Called holding `filling`
  /// (in a signal); returns the subscription to cancel once it is released (the upstream's
  /// `cancel()` is not called holding it: a source may signal from inside it).
  @usableFromInline
  func fail(_ reason: String) -> (any Subscription)? {
    logger.error(
      "a value cannot be sent; cancelling the pipeline", metadata: ["reason": "\(reason)"])
    WireFrame.write(
      .failed, text: reason, maximumFrameLength: maximumFrameLength, into: &filling)
    let (failed, held) = state.withLock { ($0.failed(&filling), $0.framesHeld) }
    if failed.flush { scheduleFlush() }
    if held { armTick() }  // as for a completion
    return failed.cancel
  }

  /// Keeps `filling` from holding on to a large value's capacity (holding `filling`).
  @usableFromInline
  func shrinkFilling() {
    if filling.capacity > 4 * batchBytes { filling = ByteBuffer() }
  }

  /// Takes `filling` for `thread`, waiting while a hand-over holds it (a signal's wait: see
  /// "Who touches `filling`"). Its holder calls nothing that can signal the writer (the
  /// upstream's `cancel()` after a failed value waits until it is released), so a signal
  /// never waits for its own thread.
  @inlinable
  func claimFilling(_ thread: UInt) {
    if !tryClaimFilling(thread) { waitForFilling(thread) }
  }

  @usableFromInline
  func waitForFilling(_ thread: UInt) {
    while !tryClaimFilling(thread) { sched_yield() }
  }

  /// Takes `filling` for `thread` if no one holds it.
  @inlinable
  func tryClaimFilling(_ thread: UInt) -> Bool {
    fillingOwner.compareExchange(expected: 0, desired: thread, ordering: .acquiring).exchanged
  }

  @inlinable
  func releaseFilling() {
    fillingOwner.store(0, ordering: .releasing)
  }

  /// A request call of the writer's (the state machine counted it in): as the requester, asks
  /// `subscription` for up to `ramp` values owed, and again as ``askAsRequester`` says;
  /// otherwise leaves the running requester a request to make. Then hands the frames encoded
  /// inside the call over.
  private func request(from subscription: any Subscription, first: Bool = false) {
    let thread = currentThreadID()
    var yielded = false
    if becomeRequester(thread) {
      signalSide.pointee.callBudget = first ? 0 : 16 * batchBytes
      signalSide.pointee.callProduced = 0
      signalSide.pointee.callDeadline = .now() + Self.callTimeBudget
      signalSide.pointee.yielded = false
      yielded = askAsRequester(subscription, thread: thread)
    }
    let (flush, resume): (Bool, Bool)
    if tryClaimFilling(thread) {
      (flush, resume) = state.withLock { $0.requestReturned(&filling, yielded: yielded) }
      shrinkFilling()
      releaseFilling()
    } else {
      // A signal of another thread holds `filling` (it hands the frames over as it ends), or
      // the tick does (it takes them).
      var none = ByteBuffer()
      (flush, resume) = state.withLock { $0.requestReturned(&none, yielded: yielded) }
    }
    if flush { scheduleFlush() }
    if resume { self.resume() }
  }

  /// Whether `thread` became the writer's requesting call. Only one call asks at a time, so
  /// that a synchronous source emits every value on the thread of the call that counts its
  /// budget and asks again after it. When another call is the requester (its source still
  /// inside `request`, after emitting, while a write lifted a stall and scheduled this call),
  /// this one leaves it a request to make (``askWanted``) and asks nothing itself.
  func becomeRequester(_ thread: UInt) -> Bool {
    while true {
      // Sequentially consistent, with the requester's end in ``askAsRequester``: either it
      // sees the flag, or this call sees it gone and takes over.
      if requester.compareExchange(expected: 0, desired: thread, ordering: .sequentiallyConsistent)
        .exchanged
      {
        return true
      }
      askWanted.store(true, ordering: .sequentiallyConsistent)
      if requester.load(ordering: .sequentiallyConsistent) != 0 { return false }
    }
  }

  /// The requesting call's asking: `ramp` values owed, again while a synchronous source uses
  /// the demand inside the call (in time and within budget) or another call left a request;
  /// stops being the requester at the end. Whether the call yielded (spent its bytes or time).
  private func askAsRequester(_ subscription: any Subscription, thread: UInt) -> Bool {
    while true {
      signalSide.pointee.askAgain = false
      // Nothing while the pipeline is stalled (the write that lifts the stall schedules a call
      // that asks): decided under the lock, with the reservation, so that a value stalling it
      // from another thread meanwhile lets no ask through, and a stalled connection is owed at
      // most `prefetch` values (a call scheduled by an earlier lift, running late, would
      // otherwise top the demand up behind the stall, once per call).
      let ramp = signalSide.pointee.ramp
      let missing = state.withLock { state in
        state.stalled ? 0 : reserveDemand(upTo: ramp, received: received.load(ordering: .relaxed))
      }
      if missing > 0 { subscription.request(.max(missing)) }
      if signalSide.pointee.yielded {
        // A new call is scheduled (``PipelineWriterState/requestReturned(_:yielded:)``); a
        // request left meanwhile waits for it.
        requester.store(0, ordering: .sequentiallyConsistent)
        return true
      }
      if signalSide.pointee.askAgain { continue }
      // A request another call left (a write lifted a stall meanwhile) is made here only while
      // the call is within its bytes and time: demands that each end stalled set no
      // `askAgain` and check neither, and the writes lifting their stalls would otherwise keep
      // one call asking for the whole stream. Past them, the call yields and the flag waits
      // for the next call.
      if callSpent {
        signalSide.pointee.yielded = true
        requester.store(0, ordering: .sequentiallyConsistent)
        return true
      }
      if askWanted.exchange(false, ordering: .sequentiallyConsistent) { continue }
      requester.store(0, ordering: .sequentiallyConsistent)
      // A request left between the check and the store is this call's to make, unless
      // another call became the requester meanwhile (it asks as it begins).
      guard askWanted.exchange(false, ordering: .sequentiallyConsistent),
        requester.compareExchange(
          expected: 0, desired: thread, ordering: .sequentiallyConsistent
        ).exchanged
      else { return false }
    }
  }

  /// Whether the requesting call spent its bytes or its time (see ``SignalSide/callBudget``).
  private var callSpent: Bool {
    signalSide.pointee.callProduced >= signalSide.pointee.callBudget
      || NIODeadline.now() >= signalSide.pointee.callDeadline
  }

  /// Asks the pipeline for one more value, off the event loop.
  private func resume() {
    let connection: any PipelineConnection = self  // not the generic type: its metatype stays
    Task { connection.requestMore() }
  }

  @usableFromInline
  func requestMore() {
    guard let subscription = state.withLock({ $0.requestStarting() }) else { return }
    request(from: subscription)
  }

  /// Frames wait inside a request call: schedules the tick unless it is scheduled (see
  /// ``PipelineWriterState``, **The tick**).
  @inlinable
  func armTick() {
    if !tickArmed.load(ordering: .relaxed) { scheduleTick() }
  }

  @usableFromInline
  func scheduleTick() {
    guard
      tickArmed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing)
        .exchanged
    else { return }
    let connection: any PipelineConnection = self
    channel.eventLoop.scheduleTask(in: Self.tickInterval) { connection.tick() }
  }

  /// The tick (on the event loop): takes the running request call's frames unless a signal
  /// holds them, and writes what waits; armed again while frames still wait for it (a signal
  /// held `filling`; frames behind a write in flight wait for its completion, which arms the
  /// tick if they are still held then).
  @usableFromInline
  func tick() {
    tickArmed.store(false, ordering: .releasing)
    let claimed = tryClaimFilling(currentThreadID())
    let (write, held): (PipelineWriterState.Write?, Bool)
    if claimed {
      (write, held) = state.withLock { ($0.tick(&filling), $0.framesHeld) }
      shrinkFilling()
      releaseFilling()
    } else {
      var none = ByteBuffer()
      (write, held) = state.withLock { ($0.tick(&none), $0.framesHeld) }
    }
    if let write { perform(write) }
    if held || !claimed { armTick() }
  }

  @usableFromInline
  func scheduleFlush() {
    let connection: any PipelineConnection = self
    channel.eventLoop.execute { connection.flushDue() }
  }

  @usableFromInline
  func flushDue() {
    if let write = state.withLock({ $0.flushDue() }) { perform(write) }
  }

  /// Performs `write` (on the event loop).
  func perform(_ write: PipelineWriterState.Write) {
    let promise = channel.eventLoop.makePromise(of: Void.self)
    let connection: any PipelineConnection = self
    promise.futureResult.whenComplete { result in connection.writeCompleted(result) }
    channel.writeAndFlush(write.frames, promise: promise)
    if write.halfClose { channel.close(mode: .output, promise: nil) }
    if write.resume { resume() }
  }

  @usableFromInline
  func writeCompleted(_ result: Result<Void, any Error>) {
    if case .failure(let error) = result {
      logger.debug("a write failed", metadata: ["error": "\(error)"])
    }
    // The next write runs from a new event-loop task, not from inside the completed one (a
    // write the kernel takes at once completes inline).
    let (next, held) = state.withLock { ($0.writeCompleted(), $0.framesHeld) }
    if let next {
      let target: any PipelineWriteTarget = self
      channel.eventLoop.execute { target.perform(next) }
    } else if held {
      armTick()  // less than a batch, held while a request call runs: out within a tick
    }
  }
}

extension PipelineWriter: PipelineWriteTarget {}

/// Where a write taken from the state machine is performed (on the event loop).
protocol PipelineWriteTarget: AnyObject, Sendable {
  func perform(_ write: PipelineWriterState.Write)
}

/// A served connection's writer, as its handler and its event-loop tasks see it (not generic:
/// closures that capture it need no metatype).
@usableFromInline
protocol PipelineConnection: AnyObject, Sendable {
  /// The client went away.
  func connectionClosed()
  /// Nothing was written for the heartbeat interval.
  func heartbeatDue()
  /// A scheduled flush runs (on the event loop).
  func flushDue()
  /// A write completed (on the event loop).
  func writeCompleted(_ result: Result<Void, any Error>)
  /// Asks the pipeline for one more value (off the event loop).
  func requestMore()
  /// The tick fires (on the event loop, while a request call runs).
  func tick()
}
