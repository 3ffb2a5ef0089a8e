import GRPCCore
import GRPCPipelines
import SwiftProtobuf

/// The anchor: the example service written as plain grpc-swift loops (no Sluice), same messages,
/// same transport.
struct PlainPipelinesService: Sluice_Pipelines_Pipelines.ServiceProtocol {
  let events: ServiceEvents

  func count(request: ServerRequest<CountRequest>, context: ServerContext) async throws
    -> StreamingServerResponse<Tick>
  {
    events.rpc("Count", context.remotePeer)
    let request = request.message
    return StreamingServerResponse { writer in
      var value = request.start
      while request.count == 0 || value - request.start < request.count {
        if request.intervalMicros > 0 {
          try await Task.sleep(for: .microseconds(request.intervalMicros))
        }
        try await writer.write(Tick.with { $0.value = value })
        value += 1
      }
      return [:]
    }
  }

  func sum(request: StreamingServerRequest<Tick>, context: ServerContext) async throws
    -> ServerResponse<Total>
  {
    var total = Total()
    for try await tick in request.messages {
      total.sum += tick.value
      total.count += 1
    }
    return ServerResponse(message: total)
  }

  func square(request: StreamingServerRequest<Tick>, context: ServerContext) async throws
    -> StreamingServerResponse<Tick>
  {
    StreamingServerResponse { writer in
      for try await tick in request.messages {
        try await writer.write(Tick.with { $0.value = tick.value * tick.value })
      }
      return [:]
    }
  }
}
