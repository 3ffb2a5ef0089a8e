import NIOCore
import NIOPosix

/// Connections that never read and never write (a hostile or stuck client): the server's writes
/// fill the kernel's buffers and stay there.
final class NonReadingClients: Sendable {
  let channels: [any Channel]

  /// Opens `count` connections to `port`, one after the other; `receiveBufferSize` asks the
  /// kernel for that much receive buffer (`SO_RCVBUF`; `nil`: the system's).
  init(count: Int, port: Int, receiveBufferSize: Int? = nil) async throws {
    var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .channelOption(.autoRead, value: false)
    if let receiveBufferSize {
      bootstrap = bootstrap.channelOption(
        .socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBufferSize))
    }
    var channels: [any Channel] = []
    for _ in 0..<count {
      channels.append(try await bootstrap.connect(host: "127.0.0.1", port: port).get())
    }
    self.channels = channels
  }

  /// Whether every connection was closed by the server.
  var allClosed: Bool { channels.allSatisfy { !$0.isActive } }

  func close() async {
    for channel in channels where channel.isActive {
      do { try await channel.close() } catch {}  // closed meanwhile by the server: fine
    }
  }
}
