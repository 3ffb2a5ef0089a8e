import GRPCCore
import GRPCNIOTransportHTTP2Posix

/// The settings of the example's HTTP/2 transports that bound what is in flight and how long a
/// silent peer is waited for, in one place for the server, the client, the tests and the
/// benchmark.
public struct TransportSettings: Sendable {
  /// The receiver's HTTP/2 flow-control window, per stream and per connection (the peer sends at
  /// most this many bytes unread); `nil` keeps grpc-swift's default (server 64 KiB, client
  /// 8 MiB).
  public var window: Int?
  /// Keepalive: a ping after this much silence, the connection closed if unanswered within
  /// `keepaliveTimeout`; `nil` keeps it off (grpc-swift's client default).
  public var keepaliveTime: Duration?
  public var keepaliveTimeout: Duration = .seconds(1)
  /// The largest request message the server accepts (4 MiB by default).
  public var maxRequestBytes: Int?
  /// The most concurrent streams a client may open on one connection (server); `nil` keeps
  /// swift-nio-http2's default, 100: a client's further calls wait until a stream of the
  /// connection ends.
  public var maxConcurrentStreams: Int?

  public init(
    window: Int? = nil, keepaliveTime: Duration? = nil, maxRequestBytes: Int? = nil,
    maxConcurrentStreams: Int? = nil
  ) {
    self.window = window
    self.keepaliveTime = keepaliveTime
    self.maxRequestBytes = maxRequestBytes
    self.maxConcurrentStreams = maxConcurrentStreams
  }

  /// A plaintext HTTP/2 server transport on `host:port` (port 0: an ephemeral one).
  public func serverTransport(host: String = "127.0.0.1", port: Int = 0)
    -> HTTP2ServerTransport.Posix
  {
    HTTP2ServerTransport.Posix(
      address: .ipv4(host: host, port: port), transportSecurity: .plaintext,
      config: .defaults { config in
        if let window { config.http2.targetWindowSize = window }
        if let maxConcurrentStreams { config.http2.maxConcurrentStreams = maxConcurrentStreams }
        if let maxRequestBytes { config.rpc.maxRequestPayloadSize = maxRequestBytes }
        if let keepaliveTime {
          config.connection.keepalive.time = keepaliveTime
          config.connection.keepalive.timeout = keepaliveTimeout
        }
      })
  }

  /// A plaintext HTTP/2 client transport to `host:port`.
  public func clientTransport(host: String = "127.0.0.1", port: Int) throws
    -> HTTP2ClientTransport.Posix
  {
    try HTTP2ClientTransport.Posix(
      target: .ipv4(address: host, port: port), transportSecurity: .plaintext,
      config: .defaults { config in
        if let window { config.http2.targetWindowSize = window }
        if let keepaliveTime {
          config.connection.keepalive = .init(
            time: keepaliveTime, timeout: keepaliveTimeout, allowWithoutCalls: true)
        }
      })
  }
}
