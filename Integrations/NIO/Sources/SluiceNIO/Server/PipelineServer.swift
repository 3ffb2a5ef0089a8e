public import Logging
public import NIOCore
public import NIOPosix
public import Sluice
import Synchronization

/// Serves a pipeline to every client that connects: each connection gets its own subscription
/// to the publisher `makePipeline` returns, whose values are written as ``WireFrame``s.
///
/// ```swift
/// let server = PipelineServer<Reading> { sensor.readings.eraseToAnyPublisher() }
/// try await server.run(port: 7000)   // until the task is cancelled
/// ```
///
/// **Demand**: a connection asks its pipeline for `prefetch` values at a time, encodes them into
/// batches of `batchBytes`, and keeps one write in flight; two full batches waiting behind a
/// busy socket stop the demand until a write completes. So a client that stops reading stops its
/// pipeline once the kernel's send buffer, the write in flight and the waiting frames are full.
/// **In flight** per connection, at most: the write in flight and the frames waiting behind it
/// (each under three batches plus one frame, and up to `prefetch` values demanded before the
/// demand stopped), and the batch being filled, in buffers that can grow to twice their contents — under 256 KiB with the
/// defaults and short values — plus the kernel's send buffer (twice `sendBufferSize` on Linux,
/// kernel memory). The package README gives what a connection costs in all, measured.
///
/// **Threads**: the pipeline is made, subscribed to and asked for values in tasks of the
/// cooperative pool, never on an event loop, each request call producing at most 16 batches
/// before it yields (a connection's first call, `prefetch` values); the writes run on the
/// connection's event loop.
///
/// **Completion**: written as a frame, then the server half-closes the connection and waits for
/// the client to close it. A failure is written with the error's description (and logged at
/// `notice`). A value whose encoding throws or is longer than `maximumFrameLength` cancels the
/// pipeline and sends a failure frame saying so (logged at `error`).
///
/// **Cancellation**: when the client closes the connection, or it drops or times out, the
/// pipeline's subscription is cancelled.
///
/// **Admission and time**: at most `maximumConnections` are served; one more is sent a refusal
/// frame and closed (never queued). A client that sends nothing (its heartbeats included) for
/// `readTimeout` is closed; a connection with nothing written for `heartbeatInterval` gets a
/// heartbeat. Every fault of a connection is logged with `logger`, with the client's address;
/// none is dropped.
public struct PipelineServer<Value: WireCodable>: Sendable {
  /// Makes a connection's writer, and what starts its pipeline (subscribes the writer to a new
  /// pipeline, in a task).
  @usableFromInline let open:
    @Sendable (any Channel, PipelineServerConfiguration, Logger) -> (
      connection: any PipelineConnection, start: @Sendable () -> Void
    )
  /// Limits, timeouts and buffer sizes.
  public let configuration: Configuration
  /// Where the server reports connections and their faults.
  public let logger: Logger

  /// A server of the pipelines `makePipeline` makes, one for each connection.
  ///
  /// `@inlinable`, so that the pipeline's subscription is specialised for its type in the
  /// caller's module (a type-erased pipeline costs the generic runtime's lookups on every
  /// value).
  @inlinable
  public init<Pipeline: Publisher<Value, Failure> & SendableMetatype, Failure: Error>(
    configuration: Configuration = Configuration(),
    logger: Logger = Logger(label: "SluiceNIO.PipelineServer"),
    makePipeline: @escaping @Sendable () -> Pipeline
  ) {
    configuration.validate()
    self.configuration = configuration
    self.logger = logger
    self.open = { channel, configuration, logger in
      let writer = PipelineWriter<Value, Failure>(
        channel: channel, configuration: configuration, logger: logger)
      return (writer, { Task(priority: .high) { makePipeline().subscribe(writer) } })
    }
  }

  /// Listens on `host:port` (port 0: an ephemeral one), calls `bound` with the port, and serves
  /// every client until the calling task is cancelled; then closes every connection (their
  /// pipelines are cancelled) and returns.
  public func run(
    host: String = "127.0.0.1", port: Int = 0,
    group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
    bound: @Sendable (Int) -> Void = { _ in }
  ) async throws {
    let registry = ConnectionRegistry(limit: configuration.maximumConnections)
    let server = try await bootstrap(group: group, registry: registry)
      .bind(host: host, port: port).get()
    let port = server.localAddress?.port ?? port
    logger.info("listening", metadata: ["port": "\(port)"])
    bound(port)
    await withTaskCancellationHandler {
      await wait(for: server)
    } onCancel: {
      server.close(promise: nil)
    }
    let open = registry.shutDown()
    for connection in open { connection.close(promise: nil) }
    for connection in open { await wait(for: connection) }
    logger.info("stopped", metadata: ["port": "\(port)"])
  }

  /// The bootstrap: the listening socket's options, and each connection's handlers.
  func bootstrap(group: any EventLoopGroup, registry: ConnectionRegistry) -> ServerBootstrap {
    let (configuration, logger, open) = (configuration, logger, open)
    var bootstrap = ServerBootstrap(group: group)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .serverChannelOption(.backlog, value: Int32(clamping: configuration.backlog))
      .serverChannelOption(.maxMessagesPerRead, value: 16)
    if let sendBufferSize = configuration.sendBufferSize {
      bootstrap = bootstrap.childChannelOption(
        .socketOption(.so_sndbuf), value: SocketOptionValue(sendBufferSize))
    }
    return bootstrap.childChannelInitializer { channel in
      channel.eventLoop.makeCompletedFuture {
        var logger = logger
        logger[metadataKey: "client"] = "\(channel.remoteAddress.map { "\($0)" } ?? "?")"
        let handlers = channel.pipeline.syncOperations
        guard registry.admit(channel) else {
          let reason =
            "the server is at its limit of \(configuration.maximumConnections) connections"
          logger.warning("refused a connection: \(reason)")
          try handlers.addHandler(RefusalHandler(reason: reason, logger: logger))
          return
        }
        channel.closeFuture.whenComplete { _ in registry.remove(channel) }
        let (connection, start) = open(channel, configuration, logger)
        try handlers.addHandler(
          IdleStateHandler(
            readTimeout: TimeAmount(configuration.readTimeout),
            writeTimeout: TimeAmount(configuration.heartbeatInterval)))
        // A client sends only heartbeats (one byte of frame): anything longer is hostile.
        try handlers.addWireFrameDecoder(maximumFrameLength: 16)
        try handlers.addHandler(
          ServerConnectionHandler(
            connection: connection, start: start, readTimeout: configuration.readTimeout,
            logger: logger))
      }
    }
  }

  /// Waits until `channel` has closed.
  private func wait(for channel: any Channel) async {
    do {
      try await channel.closeFuture.get()
    } catch {
      logger.debug("closing a channel failed", metadata: ["error": "\(error)"])
    }
  }
}
