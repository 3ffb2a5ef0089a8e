public import NIOCore
public import Sluice

/// One ``RemotePipeline`` subscription: its connection, the subscriber's demand, the frames read
/// but not yet delivered, and the completion waiting behind them. A pure state machine; the
/// ``RemoteSubscription`` calls it under its lock and acts on what it returns after unlocking.
///
/// **Demand and reads**: the connection never reads on its own (`autoRead` is off). A socket
/// read is asked for only when no frame is left and the subscriber has demand, one at a time; so
/// the client holds at most one read's frames, and a subscriber without demand leaves the bytes
/// in the kernel, where TCP's window stops the server.
///
/// **Delivery**: only the connection's event loop delivers (`draining` says one is running or
/// scheduled), in chunks taken under the lock: values while there is demand, then the
/// completion once every frame before it is delivered. A completion needs no demand.
///
/// | state | event | next state | action |
/// |---|---|---|---|
/// | awaitingDemand | request(n) | connecting | connect |
/// | connecting | connected | streaming | drain |
/// | connecting | connect failed | connecting, completion pending | drain |
/// | streaming | request(n), not draining | streaming | schedule a drain |
/// | streaming | frames read | streaming | drain |
/// | streaming | read complete | streaming (no read outstanding) | drain |
/// | streaming | fault (bad frame, timeout, drop) | streaming, completion pending | close, drain |
/// | connecting, streaming | drain: a value frame, demand | unchanged | deliver a chunk |
/// | connecting, streaming | drain: no frame, demand, no read | unchanged | read |
/// | connecting, streaming | drain: completion frame or pending completion | closed | close, complete |
/// | any | cancel | closed | close |
/// | closed | any | closed | none |
@usableFromInline
struct RemoteSubscriptionState {
  @usableFromInline
  enum Phase {
    case awaitingDemand
    case connecting
    case streaming(any Channel)
    case closed
  }

  /// What a drain does next.
  @usableFromInline
  enum Step {
    /// Deliver these value frames (demand for each is taken), then report the demand they
    /// returned with ``delivered(_:)``.
    case deliver(ArraySlice<WireFrame>)
    /// Deliver the completion (nothing follows), after closing the channel if there is one.
    case complete(Subscribers.Completion<RemotePipelineError>, close: (any Channel)?)
    /// Ask the channel for a read, then take the next step.
    case read(any Channel)
    /// Nothing to do: the drain ends.
    case idle
  }

  /// What a request does.
  @usableFromInline
  enum RequestAction {
    case none
    /// The first demand: connect.
    case connect
    /// Run a drain on the channel's event loop.
    case drain(any EventLoop)
  }

  @usableFromInline var phase = Phase.awaitingDemand
  @usableFromInline var demand = Subscribers.Demand.none
  /// Frames read and not yet delivered: `frames[next...]`.
  @usableFromInline var frames: [WireFrame] = []
  @usableFromInline var next = 0
  /// The failure to deliver once the frames before it are delivered.
  @usableFromInline var pendingCompletion: Subscribers.Completion<RemotePipelineError>?
  /// A drain is running or scheduled on the event loop.
  @usableFromInline var draining = false
  /// A read was asked for and nothing has arrived since.
  @usableFromInline var readOutstanding = false
  /// The most values one chunk delivers before the lock is taken again.
  @usableFromInline let chunk: Int

  @inlinable init(chunk: Int = 256) {
    self.chunk = chunk
  }

  @inlinable
  mutating func requested(_ more: Subscribers.Demand) -> RequestAction {
    switch phase {
    case .closed:
      return .none
    case .awaitingDemand:
      demand += more
      phase = .connecting
      return .connect
    case .connecting:
      demand += more
      return .none
    case .streaming(let channel):
      demand += more
      if draining { return .none }
      draining = true
      return .drain(channel.eventLoop)
    }
  }

  /// The connection is up (on its event loop). The channel to close instead, or whether to
  /// drain now.
  @usableFromInline
  mutating func connected(_ channel: any Channel) -> (close: (any Channel)?, drain: Bool) {
    guard case .connecting = phase else { return (channel, false) }
    phase = .streaming(channel)
    return (nil, startDraining())
  }

  /// Connecting failed. Whether to drain now (to deliver the failure).
  @usableFromInline
  mutating func connectFailed(_ reason: String) -> Bool {
    guard case .connecting = phase else { return false }
    pendingCompletion = .failure(.connectionFailed(reason))
    return startDraining()
  }

  /// Frames were read (on the event loop). Whether to drain now. The read is over only at
  /// ``readCompleted()``: a read may bring several batches, or none (a partial frame, a
  /// heartbeat).
  @usableFromInline
  mutating func arrived(_ more: [WireFrame]) -> Bool {
    guard pendingCompletion == nil, !isClosed else { return false }
    if next == frames.count {
      frames = more
      next = 0
    } else {
      frames += more
    }
    return startDraining()
  }

  /// A socket read is over, whatever it brought (on the event loop). Whether to drain now (to
  /// ask for the next read).
  @usableFromInline
  mutating func readCompleted() -> Bool {
    readOutstanding = false
    guard !isClosed else { return false }
    return startDraining()
  }

  /// The connection failed (on its event loop): a bad frame, a timeout, a drop. The channel to
  /// close, and whether to drain now. Frames read before the fault are still delivered first;
  /// only the first fault counts.
  @usableFromInline
  mutating func failed(_ error: RemotePipelineError) -> (close: (any Channel)?, drain: Bool) {
    readOutstanding = false
    guard pendingCompletion == nil, !isClosed else { return (nil, false) }
    pendingCompletion = .failure(error)
    return (channel, startDraining())
  }

  /// The next step of the running drain (on the event loop).
  @inlinable
  mutating func nextStep() -> Step {
    if isClosed {
      draining = false
      return .idle
    }
    if next < frames.count {
      let head = frames[next]
      guard head.tag == .value else {
        return complete(Self.completion(of: head))
      }
      guard demand > .none else {
        draining = false
        return .idle
      }
      var end = next + 1
      let limit = demand == .unlimited ? chunk : min(chunk, demand.max ?? chunk)
      while end < frames.count, end - next < limit, frames[end].tag == .value { end += 1 }
      demand -= end - next
      let values = frames[next..<end]
      next = end
      return .deliver(values)
    }
    if let completion = pendingCompletion { return complete(completion) }
    if demand > .none, !readOutstanding, case .streaming(let channel) = phase {
      readOutstanding = true
      return .read(channel)
    }
    draining = false
    return .idle
  }

  /// A chunk was delivered; the subscriber asked for `more` while taking it.
  @inlinable
  mutating func delivered(_ more: Subscribers.Demand) {
    if !isClosed { demand += more }
  }

  /// A value frame's payload is not a value: the stream ends with that failure, now.
  @usableFromInline
  mutating func undecodable(_ error: RemotePipelineError) -> Step {
    // Cancelled while the chunk was delivered: nothing follows a cancel, not even this failure.
    guard !isClosed else {
      draining = false
      return .idle
    }
    return complete(.failure(error))
  }

  /// The subscriber cancelled. The channel to close.
  @usableFromInline
  mutating func cancelled() -> (any Channel)? {
    defer { close() }
    return channel
  }

  @usableFromInline var isClosed: Bool {
    if case .closed = phase { return true }
    return false
  }

  @usableFromInline var channel: (any Channel)? {
    if case .streaming(let channel) = phase { return channel }
    return nil
  }

  @usableFromInline
  mutating func startDraining() -> Bool {
    if draining { return false }
    draining = true
    return true
  }

  @usableFromInline
  mutating func complete(_ completion: Subscribers.Completion<RemotePipelineError>) -> Step {
    let channel = channel
    close()
    draining = false
    return .complete(completion, close: channel)
  }

  @usableFromInline
  mutating func close() {
    phase = .closed
    frames = []
    next = 0
    pendingCompletion = nil
  }

  /// The completion a finished, failed or refused frame means.
  @usableFromInline
  static func completion(of frame: WireFrame) -> Subscribers.Completion<RemotePipelineError> {
    let text = frame.text ?? String(decoding: frame.payload.readableBytesView, as: UTF8.self)
    switch frame.tag {
    case .finished: return .finished
    case .failed: return .failure(.serverFailed(text))
    case .refused: return .failure(.refused(text))
    case .value, .heartbeat:
      return .failure(.malformedFrame("a \(frame.tag) frame where a completion was expected"))
    }
  }
}
