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
  /// **Write stall**: with a `writeStallTimeout`, a write that stays suspended longer than that
  /// (the peer took nothing meanwhile: a stopped process, a network that drops everything, or a
  /// subscriber that has held no demand that long) ends the writing: the publisher sees
  /// `cancel()`, the calling task is cancelled, and this throws
  /// `RPCError(.deadlineExceeded)` naming the stall. The calling task is cancelled because on
  /// a server it is the RPC's task, and gRPC would otherwise wait to write the RPC's status to
  /// a peer that takes nothing, holding the stream until the connection closes; cancelled, the
  /// transport resets the stream (`RST_STREAM`) at once. Only a suspended write is timed, and a
  /// write resumes when the peer reopens its flow-control window: a publisher slow to deliver
  /// is not a stall, and a slow peer whose window reopens within every `writeStallTimeout` is
  /// never cut (HTTP/2 receivers reopen it after reading about half of it). `nil` (the default) waits for the peer without bound, as
  /// demand that stops for any length of time is part of the contract; keepalive does not end
  /// the wait either (see <doc:DemandAcrossGRPC>).
  ///
  /// - Throws: the publisher's failure as `errorMapping` maps it; `RPCError(.cancelled)` when
  ///   cancelled first; `RPCError(.deadlineExceeded)` when a write stalled; the writer's own
  ///   error (the stream is gone) as it is.
  @inlinable
  public func write<P: Publisher>(
    _ publisher: sending P, prefetch: Int = 16, writeStallTimeout: Duration? = nil,
    errorMapping: RPCErrorMapping = .default
  ) async throws where P.Output == Element {
    let completion = try await PipelineWriting.write(
      publisher, prefetch: prefetch, writeStallTimeout: writeStallTimeout, to: self)
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
  /// publisher completed, or `nil` if cancelled first. Throws the writer's errors, and
  /// ``WriteStall/error(timeout:)`` when a write stayed suspended longer than
  /// `writeStallTimeout` (the calling task is then cancelled: see
  /// `RPCWriterProtocol/write(_:prefetch:writeStallTimeout:errorMapping:)`).
  ///
  /// The values go to the writer in batches (``WriteBatches``): each `write(contentsOf:)` takes
  /// what the publisher delivered since the last one, at most `prefetch` values, so that the
  /// stream's event loop gets one task and one flush per batch rather than per message.
  @inlinable
  static func write<P: Publisher>(
    _ publisher: sending P, prefetch: Int, writeStallTimeout: Duration? = nil,
    to writer: some RPCWriterProtocol<P.Output>
  ) async throws -> Subscribers.Completion<P.Failure>? {
    if let writeStallTimeout, writeStallTimeout <= .zero {
      GRPCViolation.writeStallTimeout(writeStallTimeout)
    }
    // Traps for a `prefetch` below 1, with a message.
    let batches = WriteBatches<P.Output, P.Failure>(prefetch: prefetch)
    publisher.subscribe(batches)
    // The task sees neither `P` nor the writer's type: only the batches and an `RPCWriter`, so
    // it captures no metatype of the caller's.
    let writer = RPCWriter(wrapping: writer)
    let stalls = writeStallTimeout.map(WriteStallWatch.init(timeout:))
    let loop = Task { try await drain(batches, to: writer, timing: stalls) }
    // The watch cancels the pipeline itself, not only the loop: the pipeline is released even
    // while the write ignores its task's cancellation.
    let watchdog = stalls.map { stalls in
      Task {
        if await stalls.watch() {
          batches.cancel()
          loop.cancel()
        }
      }
    }
    let result: Result<Subscribers.Completion<P.Failure>?, any Error>
    do {
      result = .success(
        try await withTaskCancellationHandler {
          try await withRPCCancellationHandler {
            try await loop.value
          } onCancelRPC: {
            loop.cancel()
          }
        } onCancel: {
          loop.cancel()
        })
    } catch is CancellationError {
      result = .success(nil)  // a write suspended when the loop was cancelled (gRPC's writers)
    } catch {
      result = .failure(error)
    }
    watchdog?.cancel()
    // After `loopEnded()` the watch no longer fires. A completion that reached the loop stands
    // even if the watch fired meanwhile (the pipeline ended, its values were accepted); an end
    // by cancellation or a write's error after the watch fired is the stall.
    if let stalls, stalls.loopEnded() {
      if case .success(let completion?) = result { return completion }
      withUnsafeCurrentTask { $0?.cancel() }
      throw WriteStall.error(timeout: stalls.timeout)
    }
    return try result.get()
  }

  /// The loop: each batch written, then the completion; `nil` once the task is cancelled.
  /// However it ends, the publisher's subscription is cancelled unless it completed. Each write
  /// is reported to `stalls`, if set.
  @inlinable
  static func drain<Output, Failure: Error>(
    _ batches: WriteBatches<Output, Failure>, to writer: RPCWriter<Output>,
    timing stalls: WriteStallWatch?
  ) async throws -> Subscribers.Completion<Failure>? {
    defer { batches.cancel() }
    while true {
      // A write to a writable stream returns without suspending, and so without noticing that
      // the task was cancelled (the RPC was, or the caller): look before each batch, or a
      // synchronous publisher would be written until the stream's window is spent.
      if Task.isCancelled { return nil }
      switch await batches.nextBatch() {
      case .values(let batch):
        stalls?.writeStarted()
        if batch.count == 1 {
          try await writer.write(batch[0])
        } else {
          try await writer.write(contentsOf: batch)
        }
        stalls?.writeEnded()
        batches.written(batch.count)
      case .end(let completion):
        return completion
      case .overDemand:
        throw OverDemand.error
      }
    }
  }
}

/// The error that ends an RPC whose written publisher sent more values than it was asked for
/// (see ``WriteBatchState``): it breaks the subscriber rules, so it is cancelled and the RPC
/// fails with `.internalError`, rather than buffering its values without bound.
@usableFromInline
enum OverDemand {
  @usableFromInline
  static let message = """
    API Violation: the publisher written to this gRPC stream (StreamingServerResponse\
    (publishing:), StreamingClientRequest(publishing:) or RPCWriter.write) sent a value \
    beyond its subscriber's demand; it was cancelled and the RPC ended.
    """

  @usableFromInline
  static var error: RPCError { RPCError(code: .internalError, message: message) }

  /// Whether `error` is ``error``.
  @usableFromInline
  static func matches(_ error: RPCError) -> Bool {
    error.code == .internalError && error.message == message
  }
}

/// The error of a write that stayed suspended longer than the write-stall timeout.
@usableFromInline
enum WriteStall {
  /// `.deadlineExceeded`: a time limit passed, as for a deadline; not `.unavailable`, which
  /// tells a client to retry a service that may be down, nor `.cancelled`, which says someone
  /// asked.
  @usableFromInline
  static func error(timeout: Duration) -> RPCError {
    RPCError(
      code: .deadlineExceeded,
      message: """
        Write stall: the peer took no response message for \(timeout) (the write-stall \
        timeout); the RPC ended and its pipeline was cancelled.
        """)
  }
}
