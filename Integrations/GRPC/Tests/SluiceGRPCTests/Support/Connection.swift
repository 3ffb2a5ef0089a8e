import GRPCCore
import GRPCNIOTransportHTTP2Posix
import GRPCPipelines
import Testing

/// Runs `body` with a client connected to `127.0.0.1:port` (one HTTP/2 connection), then shuts
/// the client down gracefully and waits (up to 5 s, then cancels) until its connection closed.
func withClient<Result: Sendable>(
  port: Int, settings: TransportSettings = TransportSettings(),
  _ body: (GRPCClient<HTTP2ClientTransport.Posix>) async throws -> Result
) async throws -> Result {
  let client = GRPCClient(transport: try settings.clientTransport(port: port))
  let running = Task { try await client.runConnections() }
  let result: Swift.Result<Result, any Error>
  do { result = .success(try await body(client)) } catch { result = .failure(error) }
  client.beginGracefulShutdown()
  await awaitEnd(of: running, within: .seconds(5))
  return try result.get()
}

/// Serves `service` in this process on an ephemeral port (behind `interceptors`) and runs
/// `body` with a client of it (``withClient(port:settings:_:)``); then the server shuts down
/// gracefully: not cancelled, see `awaitEnd(of:within:)`. A crash of the server fails the run.
func withServerInThisProcess(
  serving service: any RegistrableRPCService, interceptors: [any ServerInterceptor] = [],
  _ body: (GRPCClient<HTTP2ClientTransport.Posix>) async throws -> Void
) async throws {
  let server = GRPCServer(
    transport: TransportSettings().serverTransport(), services: [service],
    interceptors: interceptors)
  let serving = Task { try await server.serve() }
  let result: Result<Void, any Error>
  do {
    let port = try #require(try await server.listeningAddress?.ipv4?.port)
    result = .success(try await withClient(port: port, body))
  } catch {
    result = .failure(error)
  }
  server.beginGracefulShutdown()
  await awaitEnd(of: serving, within: .seconds(5))
  try result.get()
}

/// The options of a call with `timeout`.
func options(timeout: Duration? = nil) -> CallOptions {
  var options = CallOptions.defaults
  options.timeout = timeout
  return options
}
