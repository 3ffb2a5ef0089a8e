/// A failure a pipeline reports to its clients with `message`: a client's subscriber fails with
/// `RemotePipelineError.serverFailed(message)`.
public struct PipelineFailure: Error, Hashable, Sendable, CustomStringConvertible {
  /// What the clients are told.
  public let message: String

  /// A failure saying `message`.
  public init(_ message: String) { self.message = message }

  public var description: String { message }
}
