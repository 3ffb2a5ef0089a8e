/// Why a ``RemotePipeline`` failed. Each fault of the connection or of the bytes on it ends the
/// subscription with one of these; none is a hang or a silent loss.
public enum RemotePipelineError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The connection could not be made (nothing listens, the connect timeout passed, …).
  case connectionFailed(String)
  /// The server is at its connection limit and refused this one, saying why.
  case refused(String)
  /// The server's pipeline failed, with its error's description.
  case serverFailed(String)
  /// The connection ended (closed, reset, or inside a frame) before the server's pipeline
  /// completed.
  case connectionDropped
  /// The server sent bytes that are not a frame, or a value frame whose payload is not a value
  /// of the expected type.
  case malformedFrame(String)
  /// The server announced a frame longer than the client's `maximumFrameLength`; nothing of it
  /// was buffered.
  case frameTooLong(length: Int, limit: Int)
  /// Nothing arrived from the server, not even a heartbeat, for this long while the client was
  /// waiting for values (time the subscriber spends without demand does not count).
  case timedOut(Duration)

  public var description: String {
    switch self {
    case .connectionFailed(let reason): "connection failed: \(reason)"
    case .refused(let reason): "the server refused the connection: \(reason)"
    case .serverFailed(let message): "the server's pipeline failed: \(message)"
    case .connectionDropped: "the connection dropped before the pipeline completed"
    case .malformedFrame(let reason): "malformed frame: \(reason)"
    case .frameTooLong(let length, let limit):
      "the server sent a frame of \(length) bytes, longer than the limit of \(limit) bytes"
    case .timedOut(let timeout): "nothing arrived from the server for \(timeout)"
    }
  }
}
