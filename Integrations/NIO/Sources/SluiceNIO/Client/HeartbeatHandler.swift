import NIOCore

/// Writes a heartbeat frame each time NIO's `IdleStateHandler` (placed before it) reports that
/// nothing was written for its write timeout: the client's side of the liveness check. The
/// client writes nothing else, so it sends one heartbeat per interval, whatever its subscriber's
/// pace; the server closes a connection that stays silent for its read timeout.
final class HeartbeatHandler: ChannelInboundHandler {
  typealias InboundIn = [WireFrame]
  typealias InboundOut = [WireFrame]

  /// One heartbeat frame, written as is each time.
  static let frame: ByteBuffer = {
    var buffer = ByteBuffer()
    WireFrame.write(.heartbeat, into: &buffer)
    return buffer
  }()

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if case IdleStateHandler.IdleStateEvent.write = event {
      context.writeAndFlush(NIOAny(Self.frame), promise: nil)
      return
    }
    context.fireUserInboundEventTriggered(event)
  }
}
