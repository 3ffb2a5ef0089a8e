import GRPCCore
import Sluice

/// The responses of a gRPC call as a publisher, whose subscriber's demand drives `next()` on
/// the call's response stream. Each subscriber starts a call of its own, on its first request.
///
/// Make one from any call, generated stubs included, by handing its response handler to the
/// call; or use the `GRPCClient` shortcuts (`serverStreamingPublisher`,
/// `bidirectionalStreamingPublisher`, `clientStreamingPublisher`).
///
/// ```swift
/// let ticks = RPCResponsePublisher<Tick> { onResponse in
///   try await pipelines.count(CountRequest.with { $0.count = 3 }, onResponse: onResponse)
/// }
/// let cancellable = ticks.map(\.value).sink(
///   receiveCompletion: { print($0) }, receiveValue: { print($0) })
/// // 0, 1, 2, finished
/// ```
///
/// **Demand**: the call starts on the first request; each message is delivered against one unit
/// of demand, and the response stream is read one part ahead of it: after each delivery (and
/// before the first) the next message or the stream's end is read, and a message waits there
/// until the subscriber asks for it. So the end of the stream — `.finished` or a failure —
/// reaches the subscriber as soon as it arrives, whatever its demand (a completion needs none,
/// as in Combine), and a message is taken off the stream only when the one before it was
/// delivered. While the subscriber has no demand nothing more is read: grpc-swift's HTTP/2
/// stream stops reading, no `WINDOW_UPDATE` is sent, and the server's writer suspends once the
/// stream's window is spent. **In flight**, per call, at most: the client's HTTP/2 stream window
/// (`HTTP2ClientTransport.Config.HTTP2.targetWindowSize`, 8 MiB by default) twice over (one
/// window read into the stream's inbound buffer, one more received and held unread), plus what
/// the server holds (see <doc:DemandAcrossGRPC>); this side holds one message of its own, the
/// one read ahead. **Ordering**: the server's, each message once.
///
/// **Completion**: the call's end: `.finished` when the server's status is OK; otherwise
/// `.failure` with the call's `RPCError` (the server's status and message, `.deadlineExceeded`
/// when `CallOptions.timeout` passes, `.unavailable` when the connection fails,
/// `.resourceExhausted` for a message over the size limit). When the call's request stream is a
/// `StreamingClientRequest(publishing:)` whose pipeline failed, the subscriber fails with that
/// pipeline's error (mapped to an `RPCError`) rather than with the reset the transport reports.
/// A failure that arrives behind a message waiting for demand is seen once that message is
/// delivered; give calls whose subscribers may hold back demand a `timeout`.
///
/// **Cancellation**: `cancel()` cancels the call's task: gRPC resets the HTTP/2 stream
/// (`RST_STREAM`), and the server sees the RPC cancelled; nothing reaches the subscriber
/// afterwards. The deadline wakes a task waiting for demand.
public struct RPCResponsePublisher<Response: Sendable>: Publisher, Sendable {
  public typealias Output = Response
  public typealias Failure = RPCError

  /// Runs the call, pulling its responses into the feed.
  @usableFromInline let body: @Sendable (any PullFeed<Response>) async throws -> Void
  @usableFromInline let kind: String
  /// The call's `CallOptions.timeout`, if it has one (see ``init(timeout:_:)``).
  @usableFromInline let timeout: Duration?

  /// The responses of a server-streaming or bidirectional call: `call` starts the call with
  /// the response handler it is given, and returns when the call is over.
  ///
  /// Pass the call's `CallOptions.timeout` as `timeout`: a call that the server ends with
  /// `.cancelled` once that time has passed (a server cancels the RPC at its deadline, which
  /// starts when it receives the call, so after the client's; its status can arrive before
  /// grpc-swift's own deadline task has run) then fails with `.deadlineExceeded`, what the call's
  /// own deadline reports, rather than with the server's `.cancelled`.
  public init(
    timeout: Duration? = nil,
    _ call:
      @escaping @Sendable (
        _ onResponse: @escaping @Sendable (StreamingClientResponse<Response>) async throws -> Void
      ) async throws -> Void
  ) {
    kind = "RPCResponsePublisher"
    self.timeout = timeout
    body = { feed in
      try await call { response in
        let contents = try response.accepted.get()
        var parts = contents.bodyParts.makeAsyncIterator()
        while true {
          // The next message, read ahead of the demand (the trailing metadata is not one): the
          // stream's end is seen without demand.
          var message: Response?
          while message == nil {
            guard let part = try await parts.next(isolation: nil) else { return }
            if case .message(let value) = part { message = value }
          }
          // The subscriber cancelled, or the deadline passed.
          guard await feed.demand() else { throw CancellationError() }
          guard feed.deliver(message!) else { return }
        }
      }
    }
  }

  /// The single response of a unary or client-streaming call, as a publisher of one value:
  /// `call` starts the call with the response handler it is given. `timeout`: as for
  /// ``init(timeout:_:)``.
  @inlinable
  public init(
    timeout: Duration? = nil,
    singleResponseOf call:
      @escaping @Sendable (
        _ onResponse: @escaping @Sendable (ClientResponse<Response>) async throws -> Void
      ) async throws -> Void
  ) {
    kind = "RPCResponsePublisher(single)"
    self.timeout = timeout
    body = { feed in
      try await call { response in
        guard await feed.demand() else { throw CancellationError() }
        feed.deliver(try response.message)
      }
    }
  }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S)
  where S.Input == Response, S.Failure == RPCError {
    let requestFailure = RequestPipelineFailure()
    let body = body
    subscriber.receive(
      subscription: RPCPullSubscription(
        description: kind, downstream: subscriber,
        errorMapping: { error in
          requestFailure.recorded ?? RPCErrorMapping.call.rpcError(for: error)
        },
        body: { [timeout] feed in
          let started = ContinuousClock.now
          do {
            try await requestFailure.bound { try await body(feed) }
          } catch let error as RPCError {
            throw RPCErrorMapping.endedAtItsDeadline(
              error, timeout: timeout, elapsed: ContinuousClock.now - started) ?? error
          }
        }))
  }
}

extension RPCErrorMapping {
  /// How a client's call failure reaches its subscriber: as ``default``, with a message that
  /// names the call rather than a pipeline, and a response over the client's size limit as
  /// `.resourceExhausted` (see ``oversizedResponse(_:)``).
  @usableFromInline static let call = RPCErrorMapping { error in
    switch error {
    case let error as RPCError: oversizedResponse(error) ?? error
    case let error as any RPCErrorConvertible: RPCError(error)
    case is CancellationError: RPCError(code: .cancelled, message: "The call was cancelled.")
    default: RPCError(code: .unknown, message: "The call failed.", cause: error)
    }
  }

  /// A call that the server ended with `.cancelled` after the call's `timeout` passed, as the
  /// `.deadlineExceeded` its own deadline reports (the server's status as `cause`); `nil` for
  /// anything else (kept as it is). A server cancels an RPC at its deadline, timed from when
  /// it received the call, so after the client's: a `.cancelled` status then is that deadline.
  @usableFromInline static func endedAtItsDeadline(
    _ error: RPCError, timeout: Duration?, elapsed: Duration
  ) -> RPCError? {
    guard let timeout, error.code == .cancelled, elapsed >= timeout else { return nil }
    return RPCError(
      code: .deadlineExceeded,
      message: "The call's deadline (\(timeout)) passed; the server ended it: \(error.message)",
      metadata: error.metadata, cause: error)
  }

  /// grpc-swift-nio-transport (2.9.2) rejects a received message over the size limit with its
  /// deframer's `.resourceExhausted` error, then reports the call as `.internalError` "Failed
  /// to decode message <that error>", without a cause to unwrap. The gRPC specification wants
  /// `RESOURCE_EXHAUSTED` there, so a client's subscriber gets that code, the transport's
  /// message and the original error as `cause`; any other error is `nil` (kept as it is).
  @usableFromInline static func oversizedResponse(_ error: RPCError) -> RPCError? {
    guard error.code == .internalError,
      error.message.contains("exceeded the configured maximum payload size")
    else { return nil }
    return RPCError(
      code: .resourceExhausted, message: error.message, metadata: error.metadata, cause: error)
  }
}
