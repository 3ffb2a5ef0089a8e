public import NIOCore
public import NIOPosix
public import Sluice

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A publisher of the values a ``PipelineServer`` serves, over a TCP connection made for each
/// subscriber on its first request.
///
/// ```swift
/// let readings = RemotePipeline<Reading>(host: "sensors.local", port: 7000)
/// for try await reading in readings.values { print(reading) }
/// ```
///
/// **Demand**: the connection reads from its socket only while the subscriber has demand and
/// every frame read before was delivered; meanwhile the bytes stay in the kernel's receive
/// buffer, the TCP window closes, and the server stops asking its pipeline for values. **In
/// flight** on this side, at most: one read of `readSize` bytes of frames (16 KiB by default),
/// one frame being reassembled (at most `maximumFrameLength`), and the kernel's receive buffer
/// (twice `receiveBufferSize` on Linux). On Linux the connection asks for TCP segments of at
/// most a quarter of `receiveBufferSize`, so that this small window never waits on TCP's probe
/// timer (see ``RemotePipelineConfiguration/receiveBufferSize``).
///
/// **Threads**: values and the completion are delivered on the connection's event loop (a
/// subscriber that blocks there holds up that loop's other connections: move slow work with
/// `receive(on:)` or iterate `values`).
///
/// **Ordering**: the server pipeline's; each value once. **Completion**: the server's; its
/// failure as ``RemotePipelineError/serverFailed(_:)``, after every value sent before it. Every
/// fault is a failure, never a hang: a connection that ends without a completion is
/// ``RemotePipelineError/connectionDropped``; bad bytes are
/// ``RemotePipelineError/malformedFrame(_:)`` or
/// ``RemotePipelineError/frameTooLong(length:limit:)``; a server at its limit is
/// ``RemotePipelineError/refused(_:)``; a server that sends nothing, not even its heartbeat, for
/// `readTimeout` while the client waits for values is ``RemotePipelineError/timedOut(_:)``: a
/// silent peer holds a subscriber at most that long, and time the subscriber spends without
/// demand does not count.
///
/// **Cancellation**: `cancel()` closes the connection; the server sees the close and cancels
/// its subscription to the pipeline.
public struct RemotePipeline<Value: WireCodable>: Publisher, Sendable {
  public typealias Output = Value
  public typealias Failure = RemotePipelineError

  /// Where to connect, and how.
  @usableFromInline let endpoint: RemotePipelineEndpoint

  /// The server's host name or address.
  public var host: String { endpoint.host }
  /// The server's port.
  public var port: Int { endpoint.port }
  /// Limits, timeouts and buffer sizes.
  public var configuration: Configuration { endpoint.configuration }
  /// The event loops the connections run on.
  public var group: any EventLoopGroup { endpoint.group }

  /// A publisher of the values served at `host:port`.
  public init(
    host: String = "127.0.0.1", port: Int, configuration: Configuration = Configuration(),
    group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
  ) {
    configuration.validate()
    endpoint = RemotePipelineEndpoint(
      host: host, port: port, configuration: configuration, group: group)
  }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S)
  where S.Input == Value, S.Failure == RemotePipelineError {
    subscriber.receive(
      subscription: RemoteSubscription<Value, S>(pipeline: endpoint, downstream: subscriber))
  }
}

/// Where a ``RemotePipeline`` connects, and how: makes its connections.
@usableFromInline
struct RemotePipelineEndpoint: Sendable {
  let host: String
  let port: Int
  let configuration: RemotePipelineConfiguration
  let group: any EventLoopGroup

  /// A new connection reporting to `events`, its handlers set up: the read deadline, the
  /// heartbeat, the frame decoder; it reads only when asked.
  @usableFromInline
  func connect(events: any RemoteChannelEvents) -> EventLoopFuture<any Channel> {
    let configuration = configuration
    var bootstrap = ClientBootstrap(group: group)
      .connectTimeout(TimeAmount(configuration.connectTimeout))
      .channelOption(.autoRead, value: false)
      .channelOption(
        .recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: configuration.readSize)
      )
      .channelOption(.maxMessagesPerRead, value: 1)
    if let receiveBufferSize = configuration.receiveBufferSize {
      bootstrap = bootstrap.channelOption(
        .socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBufferSize))
    }
    #if os(Linux)
      // Before connecting: the SYN announces it, so the server's segments fit the window.
      if let segment = configuration.maximumSegmentSize {
        bootstrap = bootstrap.channelOption(
          .tcpOption(.init(rawValue: CInt(TCP_MAXSEG))), value: SocketOptionValue(segment))
      }
    #endif
    return bootstrap.channelInitializer { channel in
      channel.eventLoop.makeCompletedFuture {
        let handlers = channel.pipeline.syncOperations
        try handlers.addHandler(ReadDeadlineHandler(timeout: configuration.readTimeout))
        try handlers.addHandler(
          IdleStateHandler(writeTimeout: TimeAmount(configuration.heartbeatInterval)))
        try handlers.addWireFrameDecoder(maximumFrameLength: configuration.maximumFrameLength)
        try handlers.addHandler(HeartbeatHandler())
        try handlers.addHandler(RemoteSubscriptionHandler(events: events))
      }
    }
    .connect(host: host, port: port)
  }
}
