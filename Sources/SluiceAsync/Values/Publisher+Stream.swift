extension Publisher where Failure == Never {
  /// The publisher's values as an `AsyncStream`, driven by the same demand-aware bridge as
  /// ``values``: the stream's consumer sets the pace (backpressure), cancelling the consuming
  /// task or dropping the stream cancels the subscription. The stream subscribes when it is
  /// created, so a subject's values sent before consumption starts are kept.
  ///
  /// ![Marble diagram of stream, drawn from a run](stream)
  ///
  /// - Parameter bufferingPolicy: how values are demanded and buffered; by default as
  ///   ``values`` (one value per `next()`, lossless `.unbounded` for hot publishers).
  public func stream(bufferingPolicy: AsyncBufferingPolicy? = nil) -> AsyncStream<Output> {
    let iterator = SharedIterator(
      values(bufferingPolicy: bufferingPolicy ?? defaultBufferingPolicy).subscribe())
    return AsyncStream(unfolding: { await iterator.next() }, onCancel: { iterator.cancel() })
  }
}

extension Publisher {
  /// The publisher's values as an `AsyncThrowingStream` that ends with the publisher's failure;
  /// demand, backpressure and cancellation as in ``stream(bufferingPolicy:)``.
  ///
  /// ![Marble diagram of stream, drawn from a run](stream)
  public func stream(bufferingPolicy: AsyncBufferingPolicy? = nil)
    -> AsyncThrowingStream<Output, any Error>
  {
    let iterator = SharedIterator(
      values(bufferingPolicy: bufferingPolicy ?? defaultBufferingPolicy).subscribe())
    // The consuming task's cancellation reaches the bridge through `next()`; dropping the
    // stream releases the iterator, which cancels the subscription.
    return AsyncThrowingStream(unfolding: { try await iterator.next() })
  }
}

/// An ``AsyncPublisher`` iterator shared with the closures of an `AsyncStream`.
private final class SharedIterator<Output, Failure: Error>: Sendable {
  // The bridge is thread-safe; `AsyncStream(unfolding:)` calls `next()` from its one consumer,
  // one call at a time (a second concurrent call traps in the bridge: one iterator, one
  // consumer). Dropping this drops the owner, which cancels the subscription.
  private let owner: IteratorOwner<Output, Failure>

  init(_ owner: IteratorOwner<Output, Failure>) {
    self.owner = owner
  }

  func next() async throws(Failure) -> Output? {
    try await owner.bridge.next(isolation: nil)
  }

  func cancel() { owner.bridge.cancel() }
}
