extension Publishers {
  /// Prints a line for every event of each subscription, as Combine's `print(_:to:)`, in
  /// Combine's format: `"prefix: receive value: (1)"`, `"prefix: request max: (1)"`, …
  ///
  /// ![Marble diagram: print("input")](print)
  ///
  /// **Demand**: passed upstream unchanged. **Ordering**: each line is written just before the
  /// event is passed on. **Cancellation**: prints `receive cancel` (on every `cancel()`, also after
  /// the completion, as Combine's), then cancels the upstream.
  public struct Print<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The text at the start of every line printed.
    public let prefix: String
    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// Where the lines are written; standard output when `nil`.
    public let stream: (any TextOutputStream)?

    /// Creates the publisher over `upstream`, printing with `prefix` to `to` (standard output when `nil`).
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
      upstream.receive(
        subscriber: HookedSubscription(
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
            request: { log.write("request \(PrintLog.describe($0))") }),
          hooksEveryCancel: true))
    }
  }
}

/// Where `print` writes: a stream or standard output.
///
/// Lines from several threads are written one at a time, in the order they arrived, and never
/// under the lock: the thread that finds nobody writing takes the stream out of the lock,
/// writes every pending line, and puts it back (the drain pattern; a stream whose `write` prints
/// through the same pipeline just queues its line).
@usableFromInline
final class PrintLog: @unchecked Sendable {
  // Safety: `state` is lock-protected; the stream is written only by the one thread that took
  // it out of the lock (`writing`), and is put back before another can take it.
  @usableFromInline struct State {
    @usableFromInline var stream: (any TextOutputStream)?
    @usableFromInline var pending: [String] = []
    @usableFromInline var writing = false

    @inlinable init(stream: (any TextOutputStream)?) { self.stream = stream }
  }

  @usableFromInline let prefix: String
  @usableFromInline let hasStream: Bool
  @usableFromInline let state: Lock<State>

  @inlinable init(prefix: String, stream: (any TextOutputStream)?) {
    self.prefix = prefix.isEmpty ? "" : "\(prefix): "
    hasStream = stream != nil
    state = Lock(State(stream: stream))
  }

  @usableFromInline func write(_ line: String) {
    let text = prefix + line
    guard hasStream else {
      Swift.print(text)
      return
    }
    // Queue the line; become the writer if nobody is (taking the stream out of the lock).
    let taken = state.withLock { state -> (any TextOutputStream)?? in
      state.pending.append(text)
      guard !state.writing else { return .none }
      state.writing = true
      defer { state.stream = nil }
      return .some(state.stream)
    }
    guard case .some(var stream) = taken else { return }
    while true {
      // Take what is pending; with nothing left, put the stream back and stop writing.
      let lines = state.withLock { state in
        defer { state.pending = [] }
        if state.pending.isEmpty {
          state.stream = stream
          state.writing = false
        }
        return state.pending
      }
      if lines.isEmpty { return }
      // The writes `Swift.print(_:to:)` makes: an empty string, the text, the line break.
      for each in lines {
        stream?.write("")
        stream?.write(each)
        stream?.write("\n")
      }
    }
  }

  @usableFromInline static func describe(_ demand: Subscribers.Demand) -> String {
    demand.max.map { "max: (\($0))" } ?? "unlimited"
  }
}

extension Publisher {
  /// Prints every event, prefixed with `prefix`, to `stream` or standard output.
  ///
  /// ![Marble diagram: print("input")](print)
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
