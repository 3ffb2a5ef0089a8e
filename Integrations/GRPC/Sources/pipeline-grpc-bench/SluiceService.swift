import GRPCCore
import GRPCPipelines
import Sluice
import SluiceGRPC
import SwiftProtobuf

/// The Sluice side of the benchmark: the same RPCs as ``PlainPipelinesService``, doing the same
/// work per message, through the adapters (the example's `PipelinesService` also counts and can
/// fail, which the plain loops do not).
struct SluicePipelinesService: Sluice_Pipelines_Pipelines.ServiceProtocol {
  let events: ServiceEvents

  func count(request: ServerRequest<CountRequest>, context: ServerContext) async throws
    -> StreamingServerResponse<Tick>
  {
    events.rpc("Count", context.remotePeer)
    let request = request.message
    guard request.intervalMicros == 0 else {
      let interval = request.intervalMicros
      return StreamingServerResponse(
        publishing: AsyncProducer<Tick, any Error> { sender in
          var value = request.start
          while request.count == 0 || value - request.start < request.count {
            try await Task.sleep(for: .microseconds(interval))
            guard await sender.send(Tick.with { $0.value = value }) else { return }
            value += 1
          }
        })
    }
    return StreamingServerResponse(
      publishing: (request.start..<(request.start + request.count)).publisher.map { value in
        Tick.with { $0.value = value }
      })
  }

  func sum(request: StreamingServerRequest<Tick>, context: ServerContext) async throws
    -> ServerResponse<Total>
  {
    await ServerResponse(
      singleValueOf: request.publisher.reduce(Total()) { $0.adding($1) })
  }

  func square(request: StreamingServerRequest<Tick>, context: ServerContext) async throws
    -> StreamingServerResponse<Tick>
  {
    StreamingServerResponse(
      publishing: request.publisher.map { tick in Tick.with { $0.value = tick.value * tick.value } }
    )
  }
}
