import GRPCCore
import Sluice

extension RPCWriterProtocol {
  /// Writes every value of `publisher` through this writer, in order, as fast as the peer takes
  /// them, and returns when the publisher finishes.
  ///
  /// **Demand**: `prefetch` values at the subscription, then as many more as each write
  /// accepted: the publisher is never more than `prefetch` values ahead of what the writer
  /// accepted. The writer suspends while the HTTP/2 stream is not writable (its
  /// peer's flow-control window is spent and the stream's outbound buffer is full), which stops
  /// the demand. A hot source that cannot be slowed drops what finds no demand, as with any
  /// subscriber: put a `buffer` in the pipeline to choose another policy.
  ///
  /// **Batches**: each write takes everything the publisher delivered since the last one (at
  /// most `prefetch` values) with one `write(contentsOf:)`. grpc-swift's writer hands each call
  /// to the stream's event loop as a task of its own; one task per batch rather than per value
  /// keeps the event loop from falling as far behind a fast publisher, which would delay
  /// everything it reads, a client's reset included (see <doc:DemandAcrossGRPC>).
  ///
  /// **Cancellation**: cancelling the calling task, or the RPC being cancelled on a server (the
  /// client cancelled or its deadline passed: gRPC signals it through the RPC's cancellation
  /// handle, not the task), cancels the subscription: the publisher sees `cancel()`. The
  /// writing runs in a task of its own so that either can stop it.
  ///
  /// - Throws: the publisher's failure as `errorMapping` maps it; `RPCError(.cancelled)` when
  ///   cancelled first; the writer's own error (the stream is gone) as it is.
  @inlinable
  public func write<P: Publisher>(
    _ publisher: sending P, prefetch: Int = 16, errorMapping: RPCErrorMapping = .default
  ) async throws where P.Output == Element {
    let completion = try await PipelineWriting.write(publisher, prefetch: prefetch, to: self)
    switch completion {
    case .finished?: return
    case .failure(let failure)?: throw errorMapping.rpcError(for: failure)
    case nil:
      throw RPCError(code: .cancelled, message: "The RPC was cancelled before the pipeline ended.")
    }
  }
}

@usableFromInline
enum PipelineWriting {
  /// Subscribes to `publisher` here, then writes its values from a task of its own, which the
  /// calling task's cancellation and the RPC's cancellation (on a server) cancel; returns how the
  /// publisher completed, or `nil` if cancelled first. Throws only the writer's errors.
  ///
  /// The values go to the writer in batches (``WriteBatches``): each `write(contentsOf:)` takes
  /// what the publisher delivered since the last one, at most `prefetch` values, so that the
  /// stream's event loop gets one task and one flush per batch rather than per message.
  @inlinable
  static func write<P: Publisher>(
    _ publisher: sending P, prefetch: Int, to writer: some RPCWriterProtocol<P.Output>
  ) async throws -> Subscribers.Completion<P.Failure>? {
    // Traps for a `prefetch` below 1, with a message.
    let batches = WriteBatches<P.Output, P.Failure>(prefetch: prefetch)
    publisher.subscribe(batches)
    // The task sees neither `P` nor the writer's type: only the batches and an `RPCWriter`, so
    // it captures no metatype of the caller's.
    let writer = RPCWriter(wrapping: writer)
    let loop = Task { try await drain(batches, to: writer) }
    do {
      return try await withTaskCancellationHandler {
        try await withRPCCancellationHandler {
          try await loop.value
        } onCancelRPC: {
          loop.cancel()
        }
      } onCancel: {
        loop.cancel()
      }
    } catch is CancellationError {
      return nil  // a write suspended when the loop was cancelled (gRPC's writers throw this)
    }
  }

  /// The loop: each batch written, then the completion; `nil` once the task is cancelled.
  /// However it ends, the publisher's subscription is cancelled unless it completed.
  @inlinable
  static func drain<Output, Failure: Error>(
    _ batches: WriteBatches<Output, Failure>, to writer: RPCWriter<Output>
  ) async throws -> Subscribers.Completion<Failure>? {
    defer { batches.cancel() }
    while true {
      // A write to a writable stream returns without suspending, and so without noticing that
      // the task was cancelled (the RPC was, or the caller): look before each batch, or a
      // synchronous publisher would be written until the stream's window is spent.
      if Task.isCancelled { return nil }
      switch await batches.nextBatch() {
      case .values(let batch):
        if batch.count == 1 {
          try await writer.write(batch[0])
        } else {
          try await writer.write(contentsOf: batch)
        }
        batches.written(batch.count)
      case .end(let completion):
        return completion
      }
    }
  }
}
