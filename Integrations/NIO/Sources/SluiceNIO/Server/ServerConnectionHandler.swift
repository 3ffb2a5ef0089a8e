import Foundation
import Logging
import NIOCore
import Sluice

/// The last handler of a served connection: starts its pipeline when the connection is active,
/// hands the connection's events to the ``PipelineWriter``, and logs every fault before closing.
///
/// The client sends only heartbeats (the decoder drops them): any other frame is a protocol
/// violation. NIO's `IdleStateHandler` before it reports a client silent for the read timeout
/// (closed, logged as timed out) and a connection with nothing written for the heartbeat
/// interval (the writer sends a heartbeat).
final class ServerConnectionHandler: ChannelInboundHandler {
  typealias InboundIn = [WireFrame]

  let writer: any PipelineConnection
  let start: @Sendable () -> Void
  let readTimeout: Duration
  let logger: Logger

  init(
    connection: any PipelineConnection, start: @escaping @Sendable () -> Void,
    readTimeout: Duration, logger: Logger
  ) {
    self.writer = connection
    self.start = start
    self.readTimeout = readTimeout
    self.logger = logger
  }

  func channelActive(context: ChannelHandlerContext) {
    logger.debug("connection accepted")
    // The pipeline is made and subscribed to off the event loop: its own code (and a
    // synchronous source's values) never runs on it.
    start()
    context.fireChannelActive()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    let frames = unwrapInboundIn(data)
    guard let frame = frames.first else { return }
    logger.warning(
      "the client sent a \(frame.tag) frame (a client sends only heartbeats); closing",
      metadata: ["payload": "\(frame.payload.escapedPrefix)"])
    context.close(promise: nil)
  }

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    switch event {
    case IdleStateHandler.IdleStateEvent.read:
      logger.warning(
        "timed out: nothing from the client, not even a heartbeat, for \(readTimeout); closing"
      )
      // An abortive close (a reset): a silent client usually has unread frames queued, which
      // a graceful close would leave in the kernel, retried, for minutes.
      let (channel, logger) = (context.channel, logger)
      guard let options = channel as? any SocketOptionProvider else {
        context.close(promise: nil)
        return
      }
      options.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { result in
        if case .failure(let error) = result {
          logger.debug("setting SO_LINGER failed", metadata: ["error": "\(error)"])
        }
        channel.close(promise: nil)
      }
    case IdleStateHandler.IdleStateEvent.write:
      writer.heartbeatDue()
    default:
      context.fireUserInboundEventTriggered(event)
    }
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    if let error = error as? IOError, [ECONNRESET, EPIPE].contains(error.errnoCode) {
      logger.info("the client reset the connection", metadata: ["error": "\(error)"])
    } else {
      logger.warning("connection error; closing", metadata: ["error": "\(error)"])
    }
    context.close(promise: nil)
  }

  func channelInactive(context: ChannelHandlerContext) {
    writer.connectionClosed()
    logger.debug("connection closed")
    context.fireChannelInactive()
  }
}

/// The only handler of a connection beyond the limit: sends a refusal frame, then closes.
final class RefusalHandler: ChannelInboundHandler {
  typealias InboundIn = ByteBuffer

  let reason: String

  init(reason: String, logger: Logger) {
    self.reason = reason
    self.logger = logger
  }

  func channelActive(context: ChannelHandlerContext) {
    var frame = context.channel.allocator.buffer(
      capacity: WireFrame.headerLength + reason.utf8.count)
    WireFrame.write(.refused, text: reason, maximumFrameLength: 4096, into: &frame)
    let channel = context.channel
    context.writeAndFlush(NIOAny(frame)).whenComplete { _ in channel.close(promise: nil) }
    context.fireChannelActive()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {}  // whatever the client sends

  let logger: Logger

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    logger.debug("error on a refused connection", metadata: ["error": "\(error)"])
    context.close(promise: nil)
  }
}
