import NIOCore

/// Fails a connection whose peer sends nothing for `timeout` while this side is reading.
///
/// NIO's `IdleStateHandler` counts time since the last read whether or not anyone asked for
/// data; here the reader stops asking whenever its subscriber has no demand (backpressure), and
/// that time must not count. So the clock runs only from a `read()` that finds no read waiting
/// until bytes arrive: a subscriber may take as long as it likes between values, and a peer that
/// stops sending while the subscriber waits is found within `timeout`.
///
/// **States**: `idle` (no read outstanding) → `waiting(since)` on `read()`; `waiting` → `idle`
/// on bytes. **Actions**: one scheduled check at a time, at `since + timeout`; when it finds the
/// same wait still open it fires ``ReadTimedOut`` down the pipeline and closes the channel.
final class ReadDeadlineHandler: ChannelDuplexHandler {
  typealias InboundIn = ByteBuffer
  typealias InboundOut = ByteBuffer
  typealias OutboundIn = ByteBuffer
  typealias OutboundOut = ByteBuffer

  /// The error fired when the peer was silent for `timeout`.
  struct ReadTimedOut: Error {
    let timeout: Duration
  }

  let timeout: Duration
  private let timeAmount: TimeAmount
  /// When the outstanding read began; `nil` when none is outstanding.
  private var waitingSince: NIODeadline?
  private var check: Scheduled<Void>?

  init(timeout: Duration) {
    self.timeout = timeout
    self.timeAmount = TimeAmount(timeout)
  }

  func read(context: ChannelHandlerContext) {
    if waitingSince == nil {
      let now = NIODeadline.now()
      waitingSince = now
      if check == nil { schedule(context, at: now + timeAmount) }
    }
    context.read()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    waitingSince = nil
    context.fireChannelRead(data)
  }

  func channelInactive(context: ChannelHandlerContext) {
    stop()
    context.fireChannelInactive()
  }

  func handlerRemoved(context: ChannelHandlerContext) {
    stop()
  }

  private func stop() {
    check?.cancel()
    check = nil
    waitingSince = nil
  }

  private func schedule(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
    check = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
      self.check = nil
      guard let since = self.waitingSince, context.channel.isActive else { return }
      let due = since + self.timeAmount
      if NIODeadline.now() < due {
        self.schedule(context, at: due)
        return
      }
      self.waitingSince = nil
      context.fireErrorCaught(ReadTimedOut(timeout: self.timeout))
      context.close(promise: nil)
    }
  }
}
