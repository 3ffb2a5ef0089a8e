extension Publishers {
  /// Prints a line for every event of each subscription, as Combine's `print(_:to:)`, in
  /// Combine's format: `"prefix: receive value: (1)"`, `"prefix: request max: (1)"`, …
  ///
  /// **Demand**: passed upstream unchanged. **Ordering**: each line is written just before the
  /// event is passed on. **Cancellation**: prints `receive cancel`, then cancels the upstream.
  public struct Print<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    public let prefix: String
    public let upstream: Upstream
    public let stream: (any TextOutputStream)?

    @inlinable
    public init(upstream: Upstream, prefix: String, to stream: (any TextOutputStream)? = nil) {
      self.upstream = upstream
      self.prefix = prefix
      self.stream = stream
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let log = PrintLog(prefix: prefix, stream: stream)
      upstream.subscribe(
        HookedSubscription(
          "Print", downstream: subscriber,
          hooks: EventHooks(
            subscription: { log.write("receive subscription: (\($0))") },
            value: { log.write("receive value: (\($0))") },
            returnedDemand: { log.write("request \(PrintLog.describe($0)) (synchronous)") },
            completion: { completion in
              switch completion {
              case .finished: log.write("receive finished")
              case .failure(let error): log.write("receive error: (\(error))")
              }
            },
            cancel: { log.write("receive cancel") },
            request: { log.write("request \(PrintLog.describe($0))") })))
    }
  }
}

/// Where `print` writes: a stream (serialized by a lock) or standard output.
@usableFromInline
final class PrintLog: @unchecked Sendable {
  // Safety: the stream is only touched inside `stream`'s lock.
  @usableFromInline let prefix: String
  @usableFromInline let stream: Lock<(any TextOutputStream)?>

  @inlinable init(prefix: String, stream: (any TextOutputStream)?) {
    self.prefix = prefix.isEmpty ? "" : "\(prefix): "
    self.stream = Lock(stream)
  }

  @usableFromInline func write(_ line: String) {
    let text = prefix + line
    let written = stream.withLock { stream -> Bool in
      guard stream != nil else { return false }
      stream!.write(text + "\n")
      return true
    }
    if !written { Swift.print(text) }
  }

  @usableFromInline static func describe(_ demand: Subscribers.Demand) -> String {
    demand.max.map { "max: (\($0))" } ?? "unlimited"
  }
}

extension Publisher {
  /// Prints every event, prefixed with `prefix`, to `stream` or standard output.
  ///
  /// ```swift
  /// Just(1).print("just").sink { _ in }
  /// // just: receive subscription: (Just)
  /// // just: request unlimited
  /// // just: receive value: (1)
  /// // just: receive finished
  /// ```
  @inlinable
  public func print(
    _ prefix: String = "", to stream: (any TextOutputStream)? = nil
  ) -> Publishers.Print<Self> {
    Publishers.Print(upstream: self, prefix: prefix, to: stream)
  }
}
