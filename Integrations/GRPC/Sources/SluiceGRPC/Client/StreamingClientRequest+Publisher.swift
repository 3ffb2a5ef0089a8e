import GRPCCore
import Sluice

extension StreamingClientRequest {
  /// A client-streaming or bidirectional request stream that writes `publisher`'s values, then
  /// closes the stream when it finishes.
  ///
  /// **Demand**: at most `prefetch` values ahead of what the request writer accepted (see
  /// `RPCWriterProtocol/write(_:prefetch:errorMapping:)`): the server's pace reaches the
  /// publisher through HTTP/2 flow control. **Failure**: the publisher's failure, mapped by
  /// `errorMapping`, cancels the call (gRPC resets the stream); a call made through an
  /// ``RPCResponsePublisher`` fails with that error. **Cancellation**: when the call ends first
  /// (cancelled, deadline, the server answered and closed), the publisher sees `cancel()`.
  ///
  /// The publisher is handed over (`sending`) and subscribed to once: make a request for each
  /// call (the `GRPCClient` publisher shortcuts take a closure that makes the pipeline).
  @inlinable
  public init<P: Publisher>(
    publishing publisher: sending P, metadata: Metadata = [:], prefetch: Int = 16,
    errorMapping: RPCErrorMapping = .default
  ) where P.Output == Message {
    let pipeline: any HandedOverPipeline<Message> = OneShotPipeline(publisher, prefetch: prefetch)
    self.init(pipeline, metadata: metadata, errorMapping: errorMapping)
  }

  /// The request stream that writes `pipeline`.
  @usableFromInline
  init(
    _ pipeline: any HandedOverPipeline<Message>, metadata: Metadata, errorMapping: RPCErrorMapping
  ) {
    self.init(metadata: metadata) { writer in
      let completion: Subscribers.Completion<any Error>?
      do {
        completion = try await pipeline.write(to: writer)
      } catch let error as RPCError where OverDemand.matches(error) {
        // The bridge's own verdict on the publisher (it sent beyond its demand): the call
        // fails with it, not with the reset that throwing causes (`.unavailable`).
        RequestPipelineFailure.current?.record(error)
        throw error
      }
      switch completion {
      case .finished?: return
      case .failure(let failure)?:
        let error = errorMapping.rpcError(for: failure)
        RequestPipelineFailure.current?.record(error)
        throw error
      case nil: throw CancellationError()
      }
    }
  }
}
