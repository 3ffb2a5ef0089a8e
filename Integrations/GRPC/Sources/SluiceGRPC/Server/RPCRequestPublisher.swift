import GRPCCore
import Sluice
import Synchronization

/// The request stream of a client-streaming or bidirectional RPC, on the server, as a publisher
/// whose subscriber's demand drives `next()` on the stream (`request.publisher`).
///
/// ```swift
/// func square(request: StreamingServerRequest<Tick>, context: ServerContext) async throws
///   -> StreamingServerResponse<Tick>
/// {
///   StreamingServerResponse(publishing: request.publisher.map { Tick(value: $0.value * $0.value) })
/// }
/// ```
///
/// **Demand**: each message is delivered against one unit of demand, and the request stream is
/// read one message ahead of it (after each delivery, and before the first), so the client's
/// half-close or the stream's failure reaches the subscriber as soon as it arrives, whatever its
/// demand (a completion needs none, as in Combine); while the subscriber has no demand nothing
/// more is read, the stream's HTTP/2 window closes, and the client's writer suspends. **In
/// flight**, at most: the server's HTTP/2 stream window
/// (`HTTP2ServerTransport.Config.HTTP2.targetWindowSize`, 64 KiB by default) twice over, plus
/// the message read ahead, plus what the client holds. **Ordering**: the client's, each message once. **Completion**:
/// `.finished` when the client closes its request stream; `.failure` with the stream's
/// `RPCError` (the client cancelled or went away, a message over the server's
/// `maxRequestPayloadSize` is `.resourceExhausted`). **Cancellation**: `cancel()` stops
/// reading; the RPC goes on until the handler's response ends it.
///
/// gRPC lets a request stream be read once, while the handler runs: one subscriber, subscribed
/// before the handler's response ends. A second subscription to the same publisher fails with
/// `.failedPrecondition` instead of reading the stream twice, and so does a subscription to a
/// second publisher of the same request (each access to `request.publisher` makes one): the
/// stream is claimed by its identity (``RequestStreamClaims``). To use the requests twice in
/// one pipeline, take the publisher once and share it (`share()`, `multicast`).
public struct RPCRequestPublisher<Message: Sendable>: Publisher, Sendable {
  public typealias Output = Message
  public typealias Failure = RPCError

  /// The request stream.
  public let messages: RPCAsyncSequence<Message, any Error>
  @usableFromInline let claim = Claim()

  /// The publisher of `messages`.
  public init(_ messages: RPCAsyncSequence<Message, any Error>) {
    self.messages = messages
  }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S)
  where S.Input == Message, S.Failure == RPCError {
    // This publisher's claim, and the stream's (another publisher of the same request may
    // have claimed it: each access to `request.publisher` makes a new one).
    guard claim.take(), RequestStreamClaims.take(messages) else {
      Fail(
        error: RPCError(
          code: .failedPrecondition,
          message: "The request stream of an RPC can be read once: subscribe to its publisher once."
        )
      ).receive(subscriber: subscriber)
      return
    }
    let messages = messages
    subscriber.receive(
      subscription: RPCPullSubscription(
        description: "RPCRequestPublisher", downstream: subscriber,
        errorMapping: RPCErrorMapping.requestStream.map,
        body: { feed in
          var iterator = messages.makeAsyncIterator()
          // Read one message ahead of the demand: the stream's end is seen without demand.
          while let message = try await iterator.next(isolation: nil) {
            guard await feed.demand(), feed.deliver(message) else { return }
          }
        }))
  }

  /// Whether the publisher was subscribed to; shared by its copies.
  @usableFromInline
  final class Claim: Sendable {
    @usableFromInline let taken = Atomic(false)
    @usableFromInline init() {}
    /// `true` the first time.
    @inlinable func take() -> Bool { !taken.exchange(true, ordering: .acquiringAndReleasing) }
  }
}

extension StreamingServerRequest {
  /// The request stream as a publisher whose subscriber's demand drives `next()` on it: see
  /// ``RPCRequestPublisher``. Subscribe to it once.
  public var publisher: RPCRequestPublisher<Message> {
    RPCRequestPublisher(messages)
  }
}

extension RPCErrorMapping {
  /// How the request stream's errors reach a server's subscriber.
  @usableFromInline static let requestStream = RPCErrorMapping { error in
    switch error {
    case let error as RPCError: error
    case let error as any RPCErrorConvertible: RPCError(error)
    case is CancellationError:
      RPCError(code: .cancelled, message: "Reading the request stream was cancelled.")
    default: RPCError(code: .unknown, message: "The request stream failed.", cause: error)
    }
  }
}
