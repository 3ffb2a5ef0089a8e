import GRPCCore
import GRPCNIOTransportHTTP2Posix
import GRPCPipelines
import Sluice
import SluiceGRPC
import Testing

/// A handler that reads its request stream through two accesses to `request.publisher` (two
/// publishers of one stream, as a pipeline with two branches would) gets `.failedPrecondition`
/// for the second, and the server goes on serving; before, both read the stream and
/// grpc-swift stopped the process ("Only one iterator can be made"). In this process, so
/// that a crash fails the run.
@Suite("Request stream claims")
struct RequestStreamClaimTests {
  /// `Sum` reads its requests twice, through two publishers of the same request, or once.
  struct TwiceReadingService: Sluice_Pipelines_Pipelines.ServiceProtocol {
    func count(request: ServerRequest<CountRequest>, context: ServerContext) async throws
      -> StreamingServerResponse<Tick>
    {
      throw RPCError(code: .unimplemented, message: "not in this test")
    }

    func sum(request: StreamingServerRequest<Tick>, context: ServerContext) async throws
      -> ServerResponse<Total>
    {
      let twice = request.metadata["twice"].contains { $0 == .string("yes") }
      let requests =
        twice
        ? request.publisher.merge(with: request.publisher).eraseToAnyPublisher()
        : request.publisher.eraseToAnyPublisher()
      return await ServerResponse(
        singleValueOf: requests.reduce(Total()) { $0.adding($1) })
    }

    func square(request: StreamingServerRequest<Tick>, context: ServerContext) async throws
      -> StreamingServerResponse<Tick>
    {
      throw RPCError(code: .unimplemented, message: "not in this test")
    }
  }

  /// Wraps the request stream before the handler sees it, as interceptors that transform the
  /// messages do.
  struct WrappingInterceptor: ServerInterceptor {
    enum Wrapping: String, CaseIterable {
      /// Two interceptors' worth: `map` twice, then `map` and `filter`.
      case twice
      /// Sixteen `map`s (eight interceptors' worth, about 35 levels of wrappers: past the
      /// claim's first depth of 24, which crashed the server at 11).
      case deep
      /// A sequence class of the interceptor's own holding its base (the claim looked only
      /// through value types, and the server crashed).
      case boxed
      /// A wrapper holding 2,000 bytes (a signature, a token, a trace context) before its base:
      /// the claim's search spent its budget of 1,024 values on the bytes, found nothing, and
      /// let the second publisher read the stream: the server crashed (the fourth adversary
      /// round).
      case tagged
    }

    struct Tagged<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable
    where Base.Element: Sendable {
      typealias Element = Base.Element
      let tag: [UInt8]
      let base: Base
      func makeAsyncIterator() -> Base.AsyncIterator { base.makeAsyncIterator() }
    }

    final class Box<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable
    where Base.Element: Sendable {
      typealias Element = Base.Element
      let base: Base
      init(_ base: Base) { self.base = base }
      func makeAsyncIterator() -> Base.AsyncIterator { base.makeAsyncIterator() }
    }

    let wrapping: Wrapping

    func intercept<Input: Sendable, Output: Sendable>(
      request: StreamingServerRequest<Input>, context: ServerContext,
      next:
        @Sendable (StreamingServerRequest<Input>, ServerContext) async throws
        -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
      var request = request
      switch wrapping {
      case .twice:
        let once = RPCAsyncSequence(wrapping: request.messages.map { $0 })
        let twice = RPCAsyncSequence(wrapping: once.map { $0 })
        request.messages = RPCAsyncSequence(wrapping: twice.map { $0 }.filter { _ in true })
      case .deep:
        for _ in 0..<16 {
          request.messages = RPCAsyncSequence(wrapping: request.messages.map { $0 })
        }
      case .boxed:
        request.messages = RPCAsyncSequence(wrapping: Box(request.messages))
      case .tagged:
        request.messages = RPCAsyncSequence(
          wrapping: Tagged(tag: Array(repeating: 7, count: 2_000), base: request.messages))
      }
      return try await next(request, context)
    }
  }

  /// Serves ``TwiceReadingService`` in this process (behind `interceptors`) and runs `body`
  /// with a client of it.
  func withServer(
    interceptors: [any ServerInterceptor] = [],
    _ body: (GRPCClient<HTTP2ClientTransport.Posix>) async throws -> Void
  ) async throws {
    try await withServerInThisProcess(
      serving: TwiceReadingService(), interceptors: interceptors, body)
  }

  func sum(_ client: GRPCClient<HTTP2ClientTransport.Posix>, twice: Bool) async throws -> Total {
    let pipelines = Sluice_Pipelines_Pipelines.Client(wrapping: client)
    return try await pipelines.sum(
      metadata: twice ? ["twice": "yes"] : [:],
      requestProducer: { writer in
        for value in 1...100 { try await writer.write(Tick.with { $0.value = Int64(value) }) }
      })
  }

  @Test(arguments: [nil] + WrappingInterceptor.Wrapping.allCases)
  func aSecondPublisherOfOneRequestIsRefusedAndTheServerGoesOn(
    wrapping: WrappingInterceptor.Wrapping?
  ) async throws {
    let interceptors: [any ServerInterceptor] =
      wrapping.map { [WrappingInterceptor(wrapping: $0)] } ?? []
    try await withServer(interceptors: interceptors) { client in
      for _ in 0..<3 {
        await #expect {
          _ = try await sum(client, twice: true)
        } throws: { error in
          (error as? RPCError)?.code == .failedPrecondition
        }
        // The server is alive and serves the next call.
        let total = try await sum(client, twice: false)
        #expect(total.sum == 5_050 && total.count == 100)
      }
    }
  }

  /// On the client, a request publisher that sends beyond its demand is cancelled and the call
  /// fails with the bridge's `.internalError`, not with the stream reset that follows.
  @Test func aRequestPublisherSendingBeyondItsDemandFailsTheCallWithInternalError() async throws {
    try await withServer { client in
      let cancelled = Observed(false)
      let call = client.sum {
        AdapterTests.Flooding(cancelled: cancelled).map { value in
          Tick.with { $0.value = Int64(value) }
        }
      }
      await #expect {
        for try await _ in call.values {}
      } throws: { error in
        guard let error = error as? RPCError else { return false }
        return error.code == .internalError && error.message.hasPrefix("API Violation:")
      }
      #expect(cancelled.value, "the request publisher saw cancel()")
    }
  }
}
