extension RemotePipeline {
  /// How a client connects, what it accepts, and how long it waits.
  public typealias Configuration = RemotePipelineConfiguration
}

/// How a ``RemotePipeline`` connects, what it accepts, and how long it waits (one type for every
/// value type: ``RemotePipeline/Configuration``).
public struct RemotePipelineConfiguration: Sendable, Hashable {
  /// The longest frame accepted (tag and payload, as ``WireFrame`` counts); a longer one
  /// fails the subscription with ``RemotePipelineError/frameTooLong(length:limit:)`` before
  /// any of it is buffered. 1 MiB by default.
  public var maximumFrameLength: Int
  /// How long the client waits for the server's next bytes, while it is reading, before it
  /// fails with ``RemotePipelineError/timedOut(_:)``. The server sends a heartbeat after each
  /// quiet `heartbeatInterval` of its own (10 s by default), so this should be a few of
  /// those: 30 s by default.
  public var readTimeout: Duration
  /// How often the client sends a heartbeat when it has sent nothing else (it sends nothing
  /// else): the server closes a connection that stays silent for its `readTimeout`. 10 s by
  /// default.
  public var heartbeatInterval: Duration
  /// How long connecting may take. 10 s by default.
  public var connectTimeout: Duration
  /// The most bytes one socket read takes: the client holds at most one read's frames. 16 KiB
  /// by default.
  public var readSize: Int
  /// The kernel's receive buffer asked for (`SO_RCVBUF`, which Linux doubles); `nil` leaves
  /// the system's, which is auto-tuned up to megabytes. 64 KiB by default. On Linux the
  /// connection's TCP segments are then limited to a quarter of it (`TCP_MAXSEG`), so that the
  /// receive window it allows is always several segments wide: a window about one loopback
  /// segment wide would stall on TCP's 200 ms probe timer.
  public var receiveBufferSize: Int?

  /// A configuration; every parameter has the default its property describes.
  public init(
    maximumFrameLength: Int = 1 << 20,
    readTimeout: Duration = .seconds(30),
    heartbeatInterval: Duration = .seconds(10),
    connectTimeout: Duration = .seconds(10),
    readSize: Int = 16 * 1024,
    receiveBufferSize: Int? = 64 * 1024
  ) {
    self.maximumFrameLength = maximumFrameLength
    self.readTimeout = readTimeout
    self.heartbeatInterval = heartbeatInterval
    self.connectTimeout = connectTimeout
    self.readSize = readSize
    self.receiveBufferSize = receiveBufferSize
  }

  /// The largest TCP segment the connection accepts (`TCP_MAXSEG`, asked before connecting, so
  /// that the server never sends larger ones), or `nil` to leave the path's: a quarter of
  /// `receiveBufferSize`, between 536 bytes (TCP's default) and 32,767 bytes (Linux's limit).
  ///
  /// Why: over loopback the path's segment is 64 KiB, about as large as the receive window a
  /// 64 KiB buffer allows. Linux sends nothing into a window smaller than one segment (unless
  /// the rest of the data is smaller), and the receiver announces a window that opens again
  /// only when it would at least double — so a window left between half a segment and one
  /// segment stays there while the client waits on an empty buffer and the server on a full
  /// one, until the server's zero-window probe timer fires (200 ms, `TCP_RTO_MIN`). Measured
  /// with `pipeline-bench --round sluice`: up to 9 such waits a round (2.3 s instead of
  /// 0.4 s). With segments at most a quarter of the buffer, a drained window is always at
  /// least twice the segment, so it is announced and filled at once. Elsewhere than over
  /// loopback the path's segment (1,460 bytes on Ethernet) is already smaller.
  var maximumSegmentSize: Int? {
    receiveBufferSize.map { min(max($0 / 4, 536), 32767) }
  }

  /// Traps, naming the value, on a configuration that cannot work.
  @usableFromInline
  func validate() {
    let name = "RemotePipeline.Configuration"
    require(
      (1...Int(UInt32.max)).contains(maximumFrameLength),
      "\(name).maximumFrameLength \(maximumFrameLength): must be between 1 and \(UInt32.max)")
    require(readTimeout > .zero, "\(name).readTimeout \(readTimeout): must be positive")
    require(
      heartbeatInterval > .zero,
      "\(name).heartbeatInterval \(heartbeatInterval): must be positive")
    require(
      connectTimeout > .zero, "\(name).connectTimeout \(connectTimeout): must be positive")
    require(readSize >= 64, "\(name).readSize \(readSize): must be at least 64 bytes")
    require(
      (receiveBufferSize ?? 1) >= 1,
      "\(name).receiveBufferSize \(receiveBufferSize ?? 0): must be positive")
  }
}
