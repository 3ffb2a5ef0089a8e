import GRPCCore
import Sluice
import Synchronization

extension ServerResponse {
  /// The single response of a unary or client-streaming RPC: the one value `publisher` sends
  /// before it finishes, or the status its failure maps to.
  ///
  /// ```swift
  /// func sum(request: StreamingServerRequest<Tick>, context: ServerContext) async throws
  ///   -> ServerResponse<Total>
  /// {
  ///   await ServerResponse(
  ///     singleValueOf: request.publisher.reduce(0) { $0 + $1.value }.map(Total.init))
  /// }
  /// ```
  ///
  /// **Demand**: `.max(1)` at a time. A publisher that finishes without a value answers
  /// `.internalError`, one that sends a second value `.internalError` too (and is cancelled);
  /// a failure answers with the status `errorMapping` gives. **Cancellation**: when the RPC is
  /// cancelled, or the calling task is, the publisher sees `cancel()` and the response is
  /// `.cancelled`.
  public init<P: Publisher>(
    singleValueOf publisher: sending P, metadata: Metadata = [:],
    trailingMetadata: Metadata = [:], errorMapping: RPCErrorMapping = .default
  ) async where P.Output == Message {
    let one = SingleValueWriter<Message>()
    var error: RPCError?
    do {
      switch try await PipelineWriting.write(publisher, prefetch: 1, to: one) {
      case .finished?:
        error =
          one.value == nil
          ? RPCError(code: .internalError, message: "The pipeline finished without a response.")
          : nil
      case .failure(let failure)?: error = errorMapping.rpcError(for: failure)
      case nil: error = RPCError(code: .cancelled, message: "The RPC was cancelled.")
      }
    } catch let writeError {
      error = errorMapping.rpcError(for: writeError)
    }
    if let error {
      self.init(of: Message.self, error: error)
    } else {
      self.init(message: one.value!, metadata: metadata, trailingMetadata: trailingMetadata)
    }
  }
}

/// Keeps the one value written; a second write throws, which ends the writing (and cancels the
/// publisher).
private final class SingleValueWriter<Message: Sendable>: RPCWriterProtocol, Sendable {
  private let stored = Mutex<Message?>(nil)

  var value: Message? { stored.withLock { $0 } }

  func write(_ element: Message) async throws {
    try stored.withLock { value throws(RPCError) in
      guard value == nil else {
        throw RPCError(code: .internalError, message: "The pipeline sent more than one response.")
      }
      value = element
    }
  }

  func write(contentsOf elements: some Sequence<Message>) async throws {
    for element in elements { try await write(element) }
  }
}
