import NIOCore
import NIOPosix
import Sluice

/// Serves a pipeline to every client that connects: each connection gets its own subscription to
/// the publisher `makePipeline` returns, whose values are written as ``Frame``s through the
/// channel's outbound writer.
///
/// **Backpressure**: the values are read with `values(bufferingPolicy: .prefetch(prefetch))`, so
/// the pipeline is asked for at most `prefetch` values ahead of what has been written; a write
/// suspends while the channel is not writable (NIO's write-buffer watermarks), which happens when
/// the kernel's send buffer is full, which happens when the client stops reading and its TCP
/// window closes. So a slow client slows the pipeline's demand; nothing buffers without bound. (A
/// hot source that cannot be slowed drops what finds no demand, as with any subscriber: put a
/// `buffer` in the pipeline to choose another policy.)
///
/// **Completion**: `.finished` is written as `.`; a failure as `!` and the error's description.
/// **Cancellation**: when the client closes the connection (or it drops), the writer is cancelled,
/// which cancels the subscription: the pipeline's upstream sees `cancel()`.
public struct PipelineServer<Value: LosslessStringConvertible & Sendable & Equatable>: Sendable {
  /// Makes the pipeline one connection is served from.
  public let makePipeline: @Sendable () -> AnyPublisher<Value, any Error>
  /// How many values are asked for ahead of the writes.
  public let prefetch: Int
  /// The kernel's send buffer size asked for each connection (`SO_SNDBUF`, which Linux
  /// doubles), which bounds how much is in flight; `nil` leaves the system's (auto-tuned, up to
  /// megabytes).
  public let sendBufferSize: Int?
  /// The bytes NIO holds for a connection before the channel turns unwritable and a write
  /// suspends (its write-buffer high watermark; the low one is half).
  public let writeBufferHighWatermark: Int

  public init(
    prefetch: Int = 16, sendBufferSize: Int? = 64 * 1024, writeBufferHighWatermark: Int = 64 * 1024,
    makePipeline: @escaping @Sendable () -> AnyPublisher<Value, any Error>
  ) {
    self.prefetch = prefetch
    self.sendBufferSize = sendBufferSize
    self.writeBufferHighWatermark = writeBufferHighWatermark
    self.makePipeline = makePipeline
  }

  /// Listens on `host:port` (port 0: an ephemeral one), calls `bound` with the port, and serves
  /// every client until the calling task is cancelled.
  public func run(
    host: String = "127.0.0.1", port: Int = 0,
    group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
    bound: @Sendable (Int) -> Void
  ) async throws {
    let sendBufferSize = sendBufferSize
    var bootstrap = ServerBootstrap(group: group)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .childChannelOption(
        .writeBufferWaterMark,
        value: .init(low: writeBufferHighWatermark / 2, high: writeBufferHighWatermark))
    if let sendBufferSize {
      bootstrap = bootstrap.childChannelOption(
        .socketOption(.so_sndbuf), value: SocketOptionValue(sendBufferSize))
    }
    let server = try await bootstrap.bind(host: host, port: port) { channel in
      channel.eventLoop.makeCompletedFuture {
        try channel.pipeline.syncOperations.addLineFraming()
        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
          wrappingChannelSynchronously: channel,
          configuration: .init(isOutboundHalfClosureEnabled: true))
      }
    }
    bound(server.channel.localAddress?.port ?? port)
    try await server.executeThenClose { connections in
      try await withThrowingDiscardingTaskGroup { group in
        for try await connection in connections {
          group.addTask { await serve(connection) }
        }
      }
    }
  }

  /// Serves one connection until the pipeline ends or the client goes away.
  ///
  /// Two tasks: one writes the pipeline, then half-closes the connection (NIO sends what is
  /// buffered, then a FIN: closing at once would drop writes still queued); the other waits for
  /// the client's side to end. The client closes after the completion frame, and then the
  /// connection is closed; if the client's side ends first (it cancelled, or the connection
  /// dropped), the writer is cancelled, which cancels the subscription.
  func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
    let makePipeline = makePipeline
    let prefetch = prefetch
    try? await connection.executeThenClose { inbound, outbound in
      try await withThrowingTaskGroup(of: ServedSide.self) { group in
        group.addTask {
          for try await _ in inbound {}  // the client sends nothing
          return .clientSide
        }
        group.addTask {
          try await Self.write(makePipeline(), prefetch: prefetch, to: outbound)
          outbound.finish()
          return .written
        }
        if try await group.next() == .clientSide { group.cancelAll() }
        _ = try await group.next()
      }
    }
  }

  /// Writes the pipeline's values, then its completion, one frame a line. The pipeline's failure
  /// is written as a frame; a failed write (the connection is gone) is thrown.
  static func write(
    _ pipeline: AnyPublisher<Value, any Error>, prefetch: Int,
    to outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
  ) async throws {
    var buffer = ByteBuffer()
    func send(_ frame: Frame<Value>) async throws {
      buffer.clear()
      frame.write(to: &buffer)
      try await outbound.write(buffer)
    }
    var values = pipeline.values(bufferingPolicy: .prefetch(prefetch)).makeAsyncIterator()
    while true {
      let next: Value?
      do {
        next = try await values.next()
      } catch {
        try await send(.failed(String(describing: error)))
        return
      }
      // `nil` also when the task was cancelled (the client went away): write nothing more.
      guard let value = next else { break }
      try await send(.value(value))
    }
    if Task.isCancelled { return }
    try await send(.finished)
  }
}

/// Which side of a served connection ended first.
enum ServedSide: Sendable { case clientSide, written }

/// A failure a pipeline reports to its clients with `message`.
public struct PipelineFailure: Error, Equatable, CustomStringConvertible {
  public let message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}
