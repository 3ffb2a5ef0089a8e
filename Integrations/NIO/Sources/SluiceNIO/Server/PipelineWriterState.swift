public import NIOCore
import Sluice

/// The write side of one served connection: which frames wait, whether the socket is busy with
/// a write, and whether the pipeline may send another value. A pure state machine; the
/// ``PipelineWriter`` calls it under its lock and performs the actions it returns after
/// unlocking.
///
/// **Demand**: ``received(_:)`` says whether the pipeline may go on (the writer then asks for
/// `prefetch` more once those demanded are used): yes, unless two batches (`batchBytes`) of
/// frames wait (`pending`) behind a busy socket (a write in flight or scheduled); then no
/// (`stalled`), and the write that takes the pending frames lifts the stall with a new request.
/// A full batch with the socket idle is flushed at once, and the pipeline fills the next one
/// meanwhile. One write is in flight at a time, however slowly the client reads, so a
/// connection holds the write in flight and the pending frames (each under three batches plus
/// one frame — frames join `pending` at most a batch and a frame at a time — plus the values
/// owed when the demand stopped, at most `prefetch`: the writer asks nothing while ``stalled``)
/// and the writer's `filling` batch.
///
/// **Batches**: a value sent during one of the writer's own `request` calls (a synchronous
/// source emits all it can inside it) waits for a full batch, for that call to return, or for
/// the *tick* — a write completing meanwhile leaves less than a batch where it is; any other
/// value schedules a write at once unless one is in flight or scheduled.
///
/// **The tick**: while frames wait inside a request call (encoded and not handed over, or
/// pending and held for a batch: ``framesHeld``), a tick fires on the event loop
/// `PipelineWriter.tickInterval` (1 ms) later: it takes the frames the call encoded so far
/// (when no signal holds them) and writes what waits if no write is in flight. So a value waits
/// at most about a tick before its write, however slowly a synchronous source emits the next
/// one or however long it blocks; a call of a fast source still writes in batches; and a tick
/// fires only while something waits (a source blocked with nothing emitted costs none).
///
/// | state | event | next state | action |
/// |---|---|---|---|
/// | awaitingSubscription | subscribed | streaming | request |
/// | streaming | frames, not two batches behind a busy socket | streaming | go on; write if idle |
/// | streaming | frames, two batches behind a busy socket | streaming (stalled) | stop |
/// | streaming (stalled) | write takes pending | streaming | write; request more |
/// | streaming | write completed, under a batch waits, a request call runs | streaming | none |
/// | streaming | request call returned, it yielded | streaming | request more (a new call) |
/// | streaming | tick | streaming | take the call's frames; write if idle |
/// | completing | tick | completed if the write holds the completion | drop the call's frames (after the end); write if idle |
/// | streaming, awaiting | completion | completing | write if idle |
/// | streaming | value not encodable | completing | cancel; failure frame |
/// | completing | write takes pending | completed | write, then half-close |
/// | any | connection closed | closed | cancel if streaming |
/// | closed | subscribed | closed | cancel |
/// | completing, completed, closed | value, completion | unchanged | none |
@usableFromInline
struct PipelineWriterState {
  @usableFromInline
  enum Phase {
    case awaitingSubscription
    /// Subscribed (``subscription``); ``stalled`` when the last value found the batch full.
    case streaming
    /// The completion frame waits in `pending`.
    case completing
    /// The completion frame was handed to the channel: nothing more is written.
    case completed
    case closed
  }

  /// What to do after a subscription arrives.
  enum SubscribedAction {
    /// Request one value (``requestReturned()`` once the call returns).
    case request(any Subscription)
    /// Cancel it: the connection is gone, or a subscription is already there.
    case cancel(any Subscription)
  }

  /// A write to perform on the event loop.
  struct Write: Sendable {
    /// The frames to write; then report ``writeCompleted()``.
    var frames: ByteBuffer
    /// Half-close the connection after this write (it holds the completion frame).
    var halfClose: Bool
    /// Request one more value (the write lifted a stall): call ``requestStarting()``.
    var resume: Bool
  }

  private(set) var phase = Phase.awaitingSubscription
  /// The pipeline's subscription while streaming (kept apart from `phase`, so that the per-value
  /// event does not copy it).
  private var subscription: (any Subscription)?
  /// The last value found the batch full: no demand is outstanding.
  private(set) var stalled = false
  /// Whole frames not yet handed to the channel.
  private(set) var pending: ByteBuffer
  /// Whether a write was handed to the channel and has not completed.
  private(set) var writeInFlight = false
  /// Whether a flush is scheduled on the event loop.
  private(set) var flushScheduled = false
  /// The writer's own `request` calls running now.
  private(set) var requestCalls = 0
  /// The buffer of the write in flight, kept to be reused once it completes.
  private var inFlight: ByteBuffer?
  /// The buffer of the last completed write, emptied: the next `pending`.
  private var spare: ByteBuffer?
  let batchBytes: Int

  init(batchBytes: Int) {
    self.batchBytes = batchBytes
    self.pending = ByteBuffer()
  }

  mutating func subscribed(_ subscription: any Subscription) -> SubscribedAction {
    guard case .awaitingSubscription = phase else { return .cancel(subscription) }
    phase = .streaming
    self.subscription = subscription
    requestCalls += 1
    return .request(subscription)
  }

  /// The writer is about to request one value: the subscription to request it from, or `nil`
  /// when there is none to ask any more.
  mutating func requestStarting() -> (any Subscription)? {
    guard case .streaming = phase, let subscription else { return nil }
    requestCalls += 1
    return subscription
  }

  /// A `request` call of the writer's returned; `frames` were encoded inside it (taken);
  /// `yielded` when it stopped asking because its budget was spent. Whether to schedule a
  /// flush, and whether to schedule a new call (unless a stall will).
  mutating func requestReturned(_ frames: inout ByteBuffer, yielded: Bool) -> (
    flush: Bool, resume: Bool
  ) {
    requestCalls -= 1
    guard case .streaming = phase else {
      frames.clear()
      return (flushIsDue(), false)
    }
    take(&frames)
    return (flushIsDue(), yielded && !stalled)
  }

  /// Whether frames wait for the tick: some are pending, a request call of the writer's runs
  /// (the flush waits for a full batch or the call's end; see **The tick**) and no write is in
  /// flight (its completion takes them, or arms the tick: a client that stops reading costs no
  /// tick). The completion frame, too, when the pipeline ended from another thread while a
  /// source blocks inside the call: it must not wait for the call to return.
  @usableFromInline var framesHeld: Bool {
    switch phase {
    case .streaming, .completing:
      return requestCalls > 0 && pending.readableBytes > 0 && !writeInFlight
    case .awaitingSubscription, .completed, .closed:
      return false
    }
  }

  /// The tick fired; `frames` are those the running request call encoded so far (taken;
  /// empty when a signal held them: it hands them over itself). The write to perform, if any.
  /// Frames found after the stream's end (a source that went on inside its call after a failed
  /// value cancelled it) are dropped, as every other event drops them.
  mutating func tick(_ frames: inout ByteBuffer) -> Write? {
    switch phase {
    case .streaming:
      take(&frames)
    case .completing:
      frames.clear()
    case .awaitingSubscription, .completed, .closed:
      frames.clear()
      return nil
    }
    return takeWrite()
  }

  /// Frames arrived, the last one a value's (taken). Whether the pipeline may go on (or is
  /// stalled), and whether to schedule a flush.
  @usableFromInline
  mutating func received(_ frames: inout ByteBuffer) -> (more: Bool, flush: Bool) {
    guard case .streaming = phase else {
      frames.clear()
      return (false, false)
    }
    take(&frames)
    let full = pending.readableBytes >= batchBytes
    let socketBusy = writeInFlight || flushScheduled
    // A full batch with the socket idle is flushed now, and the pipeline goes on filling the
    // next one meanwhile; two full batches behind a busy socket stall it. (Already stalled:
    // values still owed, which are kept, without more.)
    let more = !stalled && !(socketBusy && pending.readableBytes >= 2 * batchBytes)
    stalled = !more
    let flush: Bool
    if full && !socketBusy {
      flushScheduled = true
      flush = true
    } else {
      flush = flushIsDue()
    }
    return (more, flush)
  }

  /// The pipeline completed; the last of `frames` (taken) says how. Whether to schedule a
  /// flush.
  mutating func completed(_ frames: inout ByteBuffer) -> Bool {
    switch phase {
    case .awaitingSubscription, .streaming:
      phase = .completing
      subscription = nil
      take(&frames)
      return flushIsDue()
    case .completing, .completed, .closed:
      frames.clear()
      return false
    }
  }

  /// A value could not be sent (its encoding failed or is too long); the last of `frames`
  /// (taken) is the failure frame that ends the connection's stream. The subscription to
  /// cancel, and whether to schedule a flush.
  mutating func failed(_ frames: inout ByteBuffer) -> (cancel: (any Subscription)?, flush: Bool) {
    guard case .streaming = phase else {
      frames.clear()
      return (nil, false)
    }
    phase = .completing
    defer { subscription = nil }
    take(&frames)
    return (subscription, flushIsDue())
  }

  /// Moves `frames` to the end of `pending`, leaving `frames` empty (and with the old
  /// `pending`'s storage when that was empty: no copy).
  private mutating func take(_ frames: inout ByteBuffer) {
    if pending.readableBytes == 0 {
      swap(&pending, &frames)
      frames.clear()
    } else {
      pending.writeBuffer(&frames)
      frames.clear()
    }
  }

  /// The scheduled flush runs: the write to perform, if any.
  mutating func flushDue() -> Write? {
    flushScheduled = false
    return takeWrite()
  }

  /// The write in flight completed (or failed: the channel is closing). The next write, if
  /// frames wait — while a request call of the writer's runs, only if they make a batch (the
  /// call hands over a full one or returns, and either schedules the flush).
  mutating func writeCompleted() -> Write? {
    writeInFlight = false
    if var written = inFlight {
      inFlight = nil
      written.clear()  // NIO released it: its storage is reused, not copied
      spare = written
    }
    if case .streaming = phase, requestCalls > 0, pending.readableBytes < batchBytes {
      // Less than a batch, and a request call of the writer's is running: it hands over a
      // full batch (flushed at once: the socket is idle) or returns (then what waits is
      // flushed). Writing the part now would make a write of every few values while the
      // kernel takes them as fast as they come.
      return nil
    }
    return takeWrite()
  }

  /// The connection was quiet for the heartbeat interval. Whether to write a heartbeat (then
  /// report ``writeCompleted()``): only when nothing waits and no write is in flight.
  mutating func heartbeatDue() -> Bool {
    switch phase {
    case .awaitingSubscription, .streaming:
      guard !writeInFlight, pending.readableBytes == 0 else { return false }
      writeInFlight = true
      return true
    case .completing, .completed, .closed:
      return false
    }
  }

  /// The connection closed. The subscription to cancel, if the pipeline had not completed.
  mutating func closed() -> (any Subscription)? {
    defer {
      phase = .closed
      subscription = nil
      pending = ByteBuffer()
      inFlight = nil
      spare = nil
    }
    return subscription
  }

  /// Whether a flush should be scheduled now (and notes that it is).
  private mutating func flushIsDue() -> Bool {
    guard requestCalls == 0, !writeInFlight, !flushScheduled, pending.readableBytes > 0 else {
      return false
    }
    flushScheduled = true
    return true
  }

  /// Takes the pending frames for a write, unless one is in flight.
  private mutating func takeWrite() -> Write? {
    guard !writeInFlight, pending.readableBytes > 0 else { return nil }
    if case .closed = phase { return nil }
    let frames = pending
    pending = spare ?? ByteBuffer()
    spare = nil
    inFlight = frames
    writeInFlight = true
    var write = Write(frames: frames, halfClose: false, resume: false)
    switch phase {
    case .completing:
      phase = .completed
      write.halfClose = true
    case .streaming where stalled:
      stalled = false
      write.resume = true
    case .awaitingSubscription, .streaming, .completed, .closed:
      break
    }
    return write
  }
}
