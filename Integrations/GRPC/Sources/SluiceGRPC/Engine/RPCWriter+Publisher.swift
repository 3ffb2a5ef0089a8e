import GRPCCore
import Sluice

extension RPCWriterProtocol {
  /// Writes every value of `publisher` through this writer, in order, as fast as the peer takes
  /// them, and returns when the publisher finishes.
  ///
  /// **Demand**: the values are read with `values(bufferingPolicy: .prefetch(prefetch))`, so the
  /// publisher is asked for at most `prefetch` values ahead of what the writer accepted; the
  /// writer suspends while the HTTP/2 stream is not writable (its peer's flow-control window is
  /// spent and the stream's outbound buffer is full), which stops the demand. A hot source that
  /// cannot be slowed drops what finds no demand, as with any subscriber: put a `buffer` in the
  /// pipeline to choose another policy.
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
  @inlinable
  static func write<P: Publisher>(
    _ publisher: sending P, prefetch: Int, to writer: some RPCWriterProtocol<P.Output>
  ) async throws -> Subscribers.Completion<P.Failure>? {
    // `.prefetch` traps for a count below 1, with a message.
    let values = publisher.values(bufferingPolicy: .prefetch(prefetch)).makeAsyncIterator()
    // The task sees neither `P` nor the writer's type: only the moved iterator and an
    // `RPCWriter`, so it captures no metatype of the caller's.
    let moved = MovedIterator(values)
    let writer = RPCWriter(wrapping: writer)
    let loop = Task { try await drain(moved, to: writer) }
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

  /// The loop: one value written per value read, then the completion.
  @inlinable
  static func drain<Output, Failure: Error>(
    _ values: MovedIterator<Output, Failure>, to writer: RPCWriter<Output>
  ) async throws -> Subscribers.Completion<Failure>? {
    while true {
      let next: Output?
      do throws(Failure) {
        next = try await values.next()
      } catch {
        return .failure(error)
      }
      // `nil` also when the task was cancelled: write nothing more.
      guard let value = next else { break }
      try await writer.write(value)
    }
    return Task.isCancelled ? nil : .finished
  }
}

/// An async iterator made in one task and moved to another, its only user from then on.
@usableFromInline
final class MovedIterator<Output, Failure: Error>: @unchecked Sendable {
  // Safety: the maker hands the iterator over and never touches it again; the receiving task
  // calls `next()` one call at a time. A transfer, not sharing (`sending` cannot express a
  // value that crosses into a `Task` through a class).
  @usableFromInline let nextValue: () async throws(Failure) -> Output?

  @inlinable
  init<Iterator: AsyncIteratorProtocol>(_ iterator: sending Iterator)
  where Iterator.Element == Output, Iterator.Failure == Failure {
    var iterator = iterator
    nextValue = { () async throws(Failure) -> Output? in try await iterator.next(isolation: nil) }
  }

  @inlinable
  func next() async throws(Failure) -> Output? {
    try await nextValue()
  }
}
