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

  func sum(_ client: GRPCClient<HTTP2ClientTransport.Posix>, twice: Bool) async throws -> Total {
    let pipelines = Sluice_Pipelines_Pipelines.Client(wrapping: client)
    return try await pipelines.sum(
      metadata: twice ? ["twice": "yes"] : [:],
      requestProducer: { writer in
        for value in 1...100 { try await writer.write(Tick.with { $0.value = Int64(value) }) }
      })
  }

  @Test func aSecondPublisherOfOneRequestIsRefusedAndTheServerGoesOn() async throws {
    let settings = TransportSettings()
    let server = GRPCServer(
      transport: settings.serverTransport(), services: [TwiceReadingService()])
    let serving = Task { try await server.serve() }
    defer {
      server.beginGracefulShutdown()
      serving.cancel()
    }
    let port = try #require(try await server.listeningAddress?.ipv4?.port)
    try await withClient(port: port) { client in
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
}
