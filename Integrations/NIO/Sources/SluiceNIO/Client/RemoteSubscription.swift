public import NIOCore
public import Sluice
public import Synchronization

/// The subscription a ``RemotePipeline`` gives each subscriber: connects on the first request,
/// then delivers the connection's values from its event loop as demand allows (see
/// ``RemoteSubscriptionState`` for the rules and the table).
///
/// **Threads**: `request` and `cancel` may come from any thread; every signal to the subscriber
/// comes from the connection's event loop, one at a time. A subscriber that blocks in
/// `receive` holds up the other connections of that event loop: move slow work elsewhere
/// (`receive(on:)`, `values`).
///
/// **Cancellation**: `cancel()` closes the connection; no value is delivered after it returns
/// (a delivery checks the flag it sets just before calling the subscriber), and the subscriber
/// is released.
///
/// **A `sink`** (directly, or behind the `AnySubscriber` an `AnyPublisher` wraps it in) hands
/// the subscription the release of its `receiveValue` closure at its first request
/// (`Subscribers.Sink._claimValueRelease(for:)`): the drain, the only deliverer, then calls the
/// closure without the sink's gate (two atomic read-modify-write operations less per value:
/// about a sixth of the client event loop's time at 10 million values a second), and the
/// subscription releases it after its last delivery — at `cancel()` if no chunk is being
/// delivered, otherwise when that chunk is over, and before a completion.
///
/// `@inlinable` on the per-value path (request, drain): the subscriber's and the value's types
/// are specialised in the client's module, as the main package's subscriptions are.
@usableFromInline
final class RemoteSubscription<Value: WireCodable, Downstream: Subscriber>: Subscription,
  CustomStringConvertible, @unchecked Sendable
where Downstream.Input == Value, Downstream.Failure == RemotePipelineError {
  // Safety: the state machine and the subscriber are behind `state`'s lock; the subscriber is
  // called only from the drain, which runs on one event loop at a time (`draining`), after
  // unlocking; `cancelledFlag` is atomic; the rest is immutable.
  @usableFromInline
  struct Guarded {
    @usableFromInline var machine = RemoteSubscriptionState()
    @usableFromInline var downstream: Downstream?
    /// The subscriber is a sink whose `receiveValue` this subscription releases (see the type).
    @usableFromInline var ownsSinkRelease = false
    /// The drain is delivering a chunk, outside the lock: a cancel meanwhile leaves the sink's
    /// release to the drain, as the chunk ends.
    @usableFromInline var delivering = false

    @inlinable init(downstream: Downstream) { self.downstream = downstream }
  }

  @usableFromInline let state: Lock<Guarded>
  @usableFromInline let cancelledFlag = Atomic<Bool>(false)
  @usableFromInline let pipeline: RemotePipelineEndpoint
  /// `drain()` specialised for this subscription's types: made in the initializer, which is
  /// specialised in the client's module, and called from the connection's events, which reach
  /// the subscription through a protocol (that is, unspecialised).
  @usableFromInline let specializedDrain: (RemoteSubscription) -> Void

  @inlinable init(pipeline: RemotePipelineEndpoint, downstream: Downstream) {
    self.pipeline = pipeline
    state = Lock(Guarded(downstream: downstream))
    specializedDrain = { $0.drain() }
  }

  @usableFromInline var description: String { "RemotePipeline" }

  @inlinable
  func request(_ demand: Subscribers.Demand) {
    if demand == .none {
      fatalError(
        "API Violation: request(.none) on a RemotePipeline subscription: demand must not be "
          + "zero; request at least .max(1)")
    }
    let action = state.withLock { guarded in
      if !guarded.ownsSinkRelease, let downstream = guarded.downstream,
        let sink = Sink._releasable(downstream)
      {
        // The sink's first request, on the subscription it accepted (an atomic operation on
        // the sink, no call out).
        guarded.ownsSinkRelease = sink._claimValueRelease(for: self)
      }
      return guarded.machine.requested(demand)
    }
    switch action {
    case .none: break
    case .connect: connect()
    case .drain(let loop):
      let events: any RemoteChannelEvents = self  // not the generic type: its metatype stays
      loop.execute { events.drainNow() }
    }
  }

  @usableFromInline
  func cancel() {
    cancelledFlag.store(true, ordering: .sequentiallyConsistent)
    let (channel, downstream, releases) = state.withLock { guarded in
      let channel = guarded.machine.cancelled()
      defer { guarded.downstream = nil }
      return (channel, guarded.downstream, guarded.ownsSinkRelease && !guarded.delivering)
    }
    channel?.close(promise: nil)
    if releases, let downstream { endSinkRelease(downstream) }
    withExtendedLifetime(downstream) {}  // released here, after unlocking
  }

  @usableFromInline typealias Sink = Subscribers.Sink<Value, RemotePipelineError>

  /// After the last delivery to a sink whose release this subscription owns: releases its
  /// `receiveValue` (idempotent; see the type).
  @inlinable
  func endSinkRelease(_ downstream: Downstream) {
    Sink._releasable(downstream)?._endValueRelease(by: self)
  }

  /// Delivers what the state machine hands out, until it says there is nothing to do. Runs on
  /// the connection's event loop, one drain at a time.
  @inlinable
  func drain() {
    while true {
      let (step, downstream, ownsSinkRelease) = state.withLock {
        guarded -> (RemoteSubscriptionState.Step, Downstream?, Bool) in
        let step = guarded.machine.nextStep()
        if case .deliver = step { guarded.delivering = true }
        return (step, guarded.downstream, guarded.ownsSinkRelease)
      }
      switch step {
      case .idle:
        return
      case .read(let channel):
        channel.read()
      case .complete(let completion, let channel):
        channel?.close(promise: nil)
        state.withLock { $0.downstream = nil }
        if ownsSinkRelease, let downstream { endSinkRelease(downstream) }
        if !cancelledFlag.load(ordering: .sequentiallyConsistent) {
          downstream?.receive(completion: completion)
        }
        return
      case .deliver(let frames):
        guard let downstream else {
          state.withLock { $0.delivering = false }
          return
        }
        let sink = ownsSinkRelease ? Sink._releasable(downstream) : nil
        // Borrowed, not copied, one frame after the other.
        let outcome = frames.withUnsafeBufferPointer { frames in
          deliver(frames, to: downstream, sink: sink)
        }
        switch outcome {
        case .delivered(let more):
          let cancelled = state.withLock { guarded in
            guarded.delivering = false
            guarded.machine.delivered(more)
            return guarded.machine.isClosed
          }
          // Cancelled while the chunk was delivered: the cancel left the release to this drain.
          if cancelled, let sink { sink._endValueRelease(by: self) }
        case .cancelled:
          state.withLock { $0.delivering = false }
          sink?._endValueRelease(by: self)
          return
        case .undecodable(let error):
          let step = state.withLock {
            $0.delivering = false
            $0.downstream = nil
            return $0.machine.undecodable(.malformedFrame("a value frame: \(error)"))
          }
          sink?._endValueRelease(by: self)
          if case .complete(let completion, let channel) = step {
            channel?.close(promise: nil)
            downstream.receive(completion: completion)
          }
          return
        }
      }
    }
  }

  /// What delivering a chunk came to.
  @usableFromInline
  enum Delivered {
    /// Every value was delivered; the subscriber asked for this much more meanwhile.
    case delivered(Subscribers.Demand)
    /// The subscriber cancelled meanwhile: the rest was not delivered.
    case cancelled
    /// A payload was not a value: the stream ends with this error.
    case undecodable(any Error)
  }

  /// Delivers the values of `frames` (value frames, their demand already taken), to `sink` if
  /// this subscription owns its release (it is `downstream` or what it wraps; its demand is
  /// `.unlimited`), else to `downstream`.
  @inlinable
  func deliver(
    _ frames: UnsafeBufferPointer<WireFrame>, to downstream: Downstream, sink: Sink?
  ) -> Delivered {
    guard let sink else { return deliver(frames) { downstream.receive($0) } }
    // Borrowed for the chunk: no reference counting per value.
    return Unmanaged.passUnretained(sink)._withUnsafeGuaranteedRef { sink in
      deliver(frames) {
        sink._receiveFromReleaseOwner($0)
        return .none
      }
    }
  }

  /// Decodes each of `frames` and hands it to `receive`, until a cancel or a payload that is
  /// not a value.
  @inlinable @inline(__always)
  func deliver(
    _ frames: UnsafeBufferPointer<WireFrame>, _ receive: (Value) -> Subscribers.Demand
  ) -> Delivered {
    var more = Subscribers.Demand.none
    for index in frames.indices {
      guard !cancelledFlag.load(ordering: .sequentiallyConsistent) else { return .cancelled }
      let value: Value
      do {
        value = try Value(wirePayload: frames[index].payload)
      } catch {
        return .undecodable(error)
      }
      more += receive(value)
    }
    return .delivered(more)
  }

  /// Starts connecting (the first request); the connection reports back on its event loop.
  @usableFromInline
  func connect() {
    let events: any RemoteChannelEvents = self
    pipeline.connect(events: events).whenComplete { result in
      switch result {
      case .success(let channel): events.connected(channel)
      case .failure(let error): events.connectFailed(String(describing: error))
      }
    }
  }
}

extension RemoteSubscription: RemoteChannelEvents {
  @usableFromInline
  func drainNow() { specializedDrain(self) }

  @usableFromInline
  func connected(_ channel: any Channel) {
    let (close, drain) = state.withLock { $0.machine.connected(channel) }
    close?.close(promise: nil)
    if drain { specializedDrain(self) }
  }

  @usableFromInline
  func connectFailed(_ reason: String) {
    if state.withLock({ $0.machine.connectFailed(reason) }) { specializedDrain(self) }
  }

  @usableFromInline
  func arrived(_ frames: [WireFrame]) {
    if state.withLock({ $0.machine.arrived(frames) }) { specializedDrain(self) }
  }

  @usableFromInline
  func readCompleted() {
    if state.withLock({ $0.machine.readCompleted() }) { specializedDrain(self) }
  }

  @usableFromInline
  func failed(_ error: RemotePipelineError) {
    let (channel, drain) = state.withLock { $0.machine.failed(error) }
    channel?.close(promise: nil)
    if drain { specializedDrain(self) }
  }
}

/// What a connection tells its subscription (on the connection's event loop).
@usableFromInline
protocol RemoteChannelEvents: AnyObject, Sendable {
  /// Runs a drain (scheduled by a request from another thread).
  func drainNow()
  /// The connection is up.
  func connected(_ channel: any Channel)
  /// Connecting failed.
  func connectFailed(_ reason: String)
  /// Frames were read, in order.
  func arrived(_ frames: [WireFrame])
  /// A socket read is over (it may have brought no whole frame).
  func readCompleted()
  /// The connection failed or ended: the first call counts.
  func failed(_ error: RemotePipelineError)
}

/// The last handler of a client connection: hands its frames and its faults to the
/// subscription.
final class RemoteSubscriptionHandler: ChannelInboundHandler {
  typealias InboundIn = [WireFrame]

  let events: any RemoteChannelEvents

  init(events: any RemoteChannelEvents) {
    self.events = events
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    events.arrived(unwrapInboundIn(data))
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    events.readCompleted()
    context.fireChannelReadComplete()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    events.failed(Self.failure(for: error))
    context.close(promise: nil)
  }

  func channelInactive(context: ChannelHandlerContext) {
    events.failed(.connectionDropped)  // ignored after a completion or an earlier fault
    context.fireChannelInactive()
  }

  /// The failure a connection's error becomes.
  static func failure(for error: any Error) -> RemotePipelineError {
    switch error {
    case WireFrameError.frameTooLong(let length, let limit):
      .frameTooLong(length: length, limit: limit)
    case WireFrameError.malformed(let reason): .malformedFrame(reason)
    case let timedOut as ReadDeadlineHandler.ReadTimedOut: .timedOut(timedOut.timeout)
    // The connection ended inside a frame, was reset, or another I/O error: before the
    // pipeline completed, whatever the cause.
    default: .connectionDropped
    }
  }
}
