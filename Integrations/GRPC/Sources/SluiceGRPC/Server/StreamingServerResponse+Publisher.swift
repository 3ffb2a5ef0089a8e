import GRPCCore
import Sluice

extension StreamingServerResponse {
  /// A server-streaming or bidirectional response that serves `publisher`: its values are the
  /// response messages, its completion the RPC's status.
  ///
  /// ```swift
  /// func count(request: ServerRequest<CountRequest>, context: ServerContext) async throws
  ///   -> StreamingServerResponse<Tick>
  /// {
  ///   StreamingServerResponse(publishing: (0..<request.message.count).publisher.map(Tick.init))
  /// }
  /// ```
  ///
  /// **Demand**: at most `prefetch` values ahead of what the response writer accepted (see
  /// `RPCWriterProtocol/write(_:prefetch:errorMapping:)`): the client's demand reaches the
  /// publisher through HTTP/2 flow control. **Completion**: `.finished` ends the RPC with
  /// status OK and `trailingMetadata`; a failure ends it with the status `errorMapping` gives
  /// (``RPCErrorMapping/default``: `RPCError`s and `RPCErrorConvertible`s as they say,
  /// anything else `.unknown`). **Cancellation**: when the RPC is cancelled (the client
  /// cancelled or went away, its deadline passed, the server is shutting down), the publisher
  /// sees `cancel()`.
  ///
  /// The publisher is handed over (`sending`) and subscribed to once, when gRPC runs the
  /// response's producer.
  @inlinable
  public init<P: Publisher>(
    publishing publisher: sending P, metadata: Metadata = [:], trailingMetadata: Metadata = [:],
    prefetch: Int = 16, errorMapping: RPCErrorMapping = .default
  ) where P.Output == Message {
    let pipeline: any HandedOverPipeline<Message> = OneShotPipeline(publisher, prefetch: prefetch)
    self.init(metadata: metadata) { writer in
      switch try await pipeline.write(to: writer) {
      case .finished?: return trailingMetadata
      case .failure(let failure)?: throw errorMapping.rpcError(for: failure)
      case nil:
        throw RPCError(
          code: .cancelled, message: "The RPC was cancelled before the pipeline ended.")
      }
    }
  }
}
