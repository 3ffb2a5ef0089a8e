import NIOCore
import NIOPosix
import Sluice

/// Why a ``RemotePipeline`` failed.
public enum RemotePipelineError: Error, Equatable, Sendable, CustomStringConvertible {
  /// The connection could not be made.
  case connectionFailed(String)
  /// The server's pipeline failed, with its error's description.
  case serverFailed(String)
  /// The connection ended before the server's pipeline completed.
  case connectionDropped
  /// The server sent a line that is not a ``Frame`` of the expected value type.
  case malformedFrame(String)

  public var description: String {
    switch self {
    case .connectionFailed(let reason): "connection failed: \(reason)"
    case .serverFailed(let message): "the server's pipeline failed: \(message)"
    case .connectionDropped: "the connection dropped before the pipeline completed"
    case .malformedFrame(let line): "malformed frame: \(line)"
    }
  }
}

/// A publisher of the values a ``PipelineServer`` serves, over a TCP connection made for each
/// subscriber on its first request.
///
/// **Demand**: the values come from an `AsyncProducer` whose `send` suspends while the subscriber
/// has no demand; meanwhile the connection's inbound sequence is not pulled, so NIO's
/// `NIOAsyncChannel` stops reading once `inboundBuffer` frames wait (its high watermark), the
/// kernel's receive buffer (`receiveBufferSize`) fills, the TCP window closes and the server's
/// writes suspend — which stops the server pipeline's demand. Nothing buffers without bound.
/// **Ordering**: the server pipeline's, each value once. **Completion**: the server's
/// completion; a failure as ``RemotePipelineError/serverFailed(_:)``; a connection that ends
/// without one as ``RemotePipelineError/connectionDropped``. **Cancellation**: `cancel()`
/// cancels the task, which closes the connection; the server then cancels its pipeline.
public struct RemotePipeline<Value: LosslessStringConvertible & Sendable & Equatable>: Publisher,
  Sendable
{
  public typealias Output = Value
  public typealias Failure = RemotePipelineError

  public let host: String
  public let port: Int
  /// Frames the client's NIO channel holds before it stops reading (its high watermark).
  public let inboundBuffer: Int
  /// The kernel's receive buffer asked for (`SO_RCVBUF`, which Linux doubles); `nil` leaves the
  /// system's (auto-tuned, up to megabytes).
  public let receiveBufferSize: Int?
  /// The most bytes one read takes from the socket: every frame in them is decoded at once, so
  /// the inbound buffer can pass its high watermark by one read's frames.
  public let readSize: Int
  let group: any EventLoopGroup

  public init(
    host: String = "127.0.0.1", port: Int, inboundBuffer: Int = 64,
    receiveBufferSize: Int? = 64 * 1024, readSize: Int = 16 * 1024,
    group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
  ) {
    self.host = host
    self.port = port
    self.inboundBuffer = inboundBuffer
    self.receiveBufferSize = receiveBufferSize
    self.readSize = readSize
    self.group = group
  }

  public func receive<S: Subscriber>(subscriber: S)
  where S.Input == Value, S.Failure == RemotePipelineError {
    AsyncProducer<Value, RemotePipelineError> { [self] sender throws(RemotePipelineError) in
      try await self.produce(into: sender)
    }
    .receive(subscriber: subscriber)
  }

  func produce(into sender: AsyncProducer<Value, RemotePipelineError>.Sender)
    async throws(RemotePipelineError)
  {
    let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
    do {
      var bootstrap = ClientBootstrap(group: group)
        .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: readSize))
      if let receiveBufferSize {
        bootstrap = bootstrap.channelOption(
          .socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBufferSize))
      }
      let inboundBuffer = inboundBuffer
      channel = try await bootstrap.connect(host: host, port: port) { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addLineFraming()
          return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
            wrappingChannelSynchronously: channel,
            configuration: .init(
              backPressureStrategy: .init(
                lowWatermark: Swift.max(1, inboundBuffer / 2), highWatermark: inboundBuffer)))
        }
      }
    } catch {
      throw .connectionFailed(String(describing: error))
    }
    do {
      try await channel.executeThenClose { inbound, _ in
        for try await line in inbound {
          guard let frame = Frame<Value>(line: line) else {
            throw RemotePipelineError.malformedFrame(String(buffer: line))
          }
          switch frame {
          case .value(let value):
            guard await sender.send(value) else { return }  // cancelled: close
          case .finished: return
          case .failed(let message): throw RemotePipelineError.serverFailed(message)
          }
        }
        if Task.isCancelled { return }
        throw RemotePipelineError.connectionDropped
      }
    } catch let error as RemotePipelineError {
      throw error
    } catch {
      // A reset or other I/O error before the pipeline completed.
      throw .connectionDropped
    }
  }
}
