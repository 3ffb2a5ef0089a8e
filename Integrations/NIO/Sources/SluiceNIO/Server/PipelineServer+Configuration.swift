extension PipelineServer {
  /// How a server admits connections, batches its writes, and how long it waits.
  public typealias Configuration = PipelineServerConfiguration
}

/// How a ``PipelineServer`` admits connections, batches its writes, and how long it waits (one
/// type for every value type: ``PipelineServer/Configuration``).
public struct PipelineServerConfiguration: Sendable, Hashable {
  /// Connections served at once. One more is accepted, sent a
  /// ``WireFrame/Tag/refused`` frame and closed (its client fails with
  /// ``RemotePipelineError/refused(_:)``); it is never queued. 1,024 by default.
  public var maximumConnections: Int
  /// The longest frame written (tag and payload). A value whose encoding is longer ends that
  /// connection's pipeline: it is cancelled, and the client gets a failure frame saying why.
  /// 1 MiB by default (the client's default limit).
  public var maximumFrameLength: Int
  /// The bytes of frames gathered for one write: a full batch is written at once when the
  /// socket is idle, and two waiting behind a busy socket stop the pipeline's demand (see
  /// ``PipelineServer`` for the bound this gives). 16 KiB by default.
  public var batchBytes: Int
  /// Values asked of a connection's pipeline at a time: it has at most this many demanded and
  /// not yet sent, so when a batch stalls, at most this many minus one more arrive behind it.
  /// 16 by default.
  public var prefetch: Int
  /// How long a client may send nothing (it sends a heartbeat every `heartbeatInterval` of
  /// its own, 10 s by default) before the server closes the connection and cancels its
  /// pipeline, logging it as timed out. 30 s by default.
  public var readTimeout: Duration
  /// After this long without a write, the server sends a heartbeat frame (unless a write is
  /// still waiting for the client: then the client has bytes to read). 10 s by default.
  public var heartbeatInterval: Duration
  /// The kernel's send buffer asked for each connection (`SO_SNDBUF`, which Linux doubles);
  /// `nil` leaves the system's, which is auto-tuned up to megabytes. 64 KiB by default.
  public var sendBufferSize: Int?
  /// Connections waiting to be accepted (the listen backlog). 256 by default.
  public var backlog: Int

  /// A configuration; every parameter has the default its property describes.
  public init(
    maximumConnections: Int = 1024,
    maximumFrameLength: Int = 1 << 20,
    batchBytes: Int = 16 * 1024,
    prefetch: Int = 16,
    readTimeout: Duration = .seconds(30),
    heartbeatInterval: Duration = .seconds(10),
    sendBufferSize: Int? = 64 * 1024,
    backlog: Int = 256
  ) {
    self.maximumConnections = maximumConnections
    self.maximumFrameLength = maximumFrameLength
    self.batchBytes = batchBytes
    self.prefetch = prefetch
    self.readTimeout = readTimeout
    self.heartbeatInterval = heartbeatInterval
    self.sendBufferSize = sendBufferSize
    self.backlog = backlog
  }

  /// Traps, naming the value, on a configuration that cannot work.
  @usableFromInline
  func validate() {
    let name = "PipelineServer.Configuration"
    require(
      maximumConnections >= 1,
      "\(name).maximumConnections \(maximumConnections): must be at least 1")
    require(
      (1...Int(UInt32.max)).contains(maximumFrameLength),
      "\(name).maximumFrameLength \(maximumFrameLength): must be between 1 and \(UInt32.max)")
    require(batchBytes >= 1, "\(name).batchBytes \(batchBytes): must be at least 1")
    require(prefetch >= 1, "\(name).prefetch \(prefetch): must be at least 1")
    require(readTimeout > .zero, "\(name).readTimeout \(readTimeout): must be positive")
    require(
      heartbeatInterval > .zero,
      "\(name).heartbeatInterval \(heartbeatInterval): must be positive")
    require(
      (sendBufferSize ?? 1) >= 1,
      "\(name).sendBufferSize \(sendBufferSize ?? 0): must be positive")
    require(backlog >= 1, "\(name).backlog \(backlog): must be at least 1")
  }
}
