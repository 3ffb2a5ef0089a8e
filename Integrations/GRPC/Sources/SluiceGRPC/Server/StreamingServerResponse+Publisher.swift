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
  /// **Write stall**: `writeStallTimeout` bounds how long a silent client can hold the RPC and
  /// the pipeline. A write that stays suspended longer (the client took nothing meanwhile: a
  /// stopped process, a network that drops everything, or a subscriber that held no demand that
  /// long) ends the RPC: the publisher sees `cancel()`, the RPC ends with
  /// `RPCError(.deadlineExceeded)` ("Write stall: …", what server interceptors see), and the
  /// stream is reset (the status cannot reach a client that takes nothing; one that wakes
  /// sees the reset). Only a suspended write is timed, from its call to its return, and a write
  /// resumes when the client reopens its flow-control window (after reading about half of
  /// it): a publisher slow to deliver is not a stall, and a slow client whose window reopens
  /// within every `writeStallTimeout` is never cut. Choose it longer than the longest pause your clients
  /// may make in their demand. `nil` (the default) waits without bound: demand that stops for
  /// any length of time is part of the contract, and grpc-swift-nio-transport's keepalive does
  /// not end the wait for a silent client (see <doc:DemandAcrossGRPC>).
  ///
  /// The publisher is handed over (`sending`) and subscribed to once, when gRPC runs the
  /// response's producer.
  @inlinable
  public init<P: Publisher>(
    publishing publisher: sending P, metadata: Metadata = [:], trailingMetadata: Metadata = [:],
    prefetch: Int = 16, writeStallTimeout: Duration? = nil,
    errorMapping: RPCErrorMapping = .default
  ) where P.Output == Message {
    let pipeline: any HandedOverPipeline<Message> = OneShotPipeline(
      publisher, prefetch: prefetch, writeStallTimeout: writeStallTimeout)
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
