import GRPCCore
import GRPCNIOTransportHTTP2Posix
import GRPCPipelines

/// Runs `body` with a client connected to `127.0.0.1:port` (one HTTP/2 connection), then shuts
/// the client down.
func withClient<Result: Sendable>(
  port: Int, settings: TransportSettings = TransportSettings(),
  _ body: (GRPCClient<HTTP2ClientTransport.Posix>) async throws -> Result
) async throws -> Result {
  let client = GRPCClient(transport: try settings.clientTransport(port: port))
  let running = Task { try await client.runConnections() }
  defer {
    client.beginGracefulShutdown()
    running.cancel()
  }
  return try await body(client)
}

/// The options of a call with `timeout`.
func options(timeout: Duration? = nil) -> CallOptions {
  var options = CallOptions.defaults
  options.timeout = timeout
  return options
}
