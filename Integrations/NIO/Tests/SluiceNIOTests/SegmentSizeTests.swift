import NIOCore
import NIOPosix
import Sluice
import SluiceNIO
import Testing

#if os(Linux)
  import Glibc

  /// The segments a server sends a ``RemotePipeline`` fit its receive window several times
  /// over. Over loopback the path's segment is 64 KiB, about the window a 64 KiB receive buffer
  /// allows: the connection then waited on TCP's 200 ms probe timer, rounds at a time.
  @Suite("The client's TCP segment size")
  struct SegmentSizeTests {
    /// The largest segment a server's side of a client's connection sends, once connected
    /// (`TCP_MAXSEG` of a connected socket: the segment in use).
    func serverSegment(receiveBufferSize: Int?) async throws -> Int {
      let (accepted, acceptedContinuation) = AsyncStream<any Channel>.makeStream()
      let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .childChannelOption(.autoRead, value: false)
        .childChannelInitializer { channel in
          acceptedContinuation.yield(channel)
          return channel.eventLoop.makeSucceededVoidFuture()
        }
        .bind(host: "127.0.0.1", port: 0).get()
      let port = try #require(listener.localAddress?.port)
      let subscription = RemotePipeline<Int>(
        port: port, configuration: .init(receiveBufferSize: receiveBufferSize)
      ).sink(receiveCompletion: { _ in }, receiveValue: { _ in })
      var channels = accepted.makeAsyncIterator()
      let channel = try #require(await channels.next())
      let segment = try await channel.getOption(
        .tcpOption(.init(rawValue: CInt(TCP_MAXSEG)))
      ).get()
      subscription.cancel()
      try? await channel.close()
      try await listener.close()
      return segment
    }

    @Test func aClientWithA64KiBReceiveBufferIsSentSegmentsOfAtMost16KiB() async throws {
      let segment = try await serverSegment(receiveBufferSize: 64 * 1024)
      #expect(segment > 0 && segment <= 16 * 1024, "the server's segment: \(segment) bytes")
    }

    @Test func aClientWithA4KiBReceiveBufferIsSentSegmentsOfAtMost1KiB() async throws {
      let segment = try await serverSegment(receiveBufferSize: 4096)
      #expect(segment > 0 && segment <= 1024, "the server's segment: \(segment) bytes")
    }
  }
#endif
