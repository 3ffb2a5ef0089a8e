import GRPCCore
import SwiftProtobuf

/// The anchor the benchmark and the tests compare the adapters with: the example service written
/// as plain grpc-swift loops (no Sluice), the same messages over the same transport. `Count`
/// reports what it wrote (`produced`) and when it was cancelled, as ``PipelinesService`` does.
///
/// `counting: false` leaves the counting out (the benchmark's plain loops do nothing but write).
public struct PlainPipelinesService: Sluice_Pipelines_Pipelines.ServiceProtocol {
  public let events: ServiceEvents
  public let counting: Bool

  public init(events: ServiceEvents = ServiceEvents(), counting: Bool = true) {
    self.events = events
    self.counting = counting
  }

  public func count(request: ServerRequest<CountRequest>, context: ServerContext) async throws
    -> StreamingServerResponse<Tick>
  {
    events.rpc("Count", context.remotePeer)
    let request = request.message
    guard counting else {
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
    let events = events
    return StreamingServerResponse { writer in
      // The RPC's cancellation (the client's reset, read by the server's event loop) reported
      // as it happens: the plain loop itself notices only when a write fails.
      try await withRPCCancellationHandler {
        var value = request.start
        while request.count == 0 || value - request.start < request.count {
          if request.intervalMicros > 0 {
            try await Task.sleep(for: .microseconds(request.intervalMicros))
          }
          try await writer.write(Tick.with { $0.value = value })
          events.produced.add(1, ordering: .relaxed)
          value += 1
        }
        return [:]
      } onCancelRPC: {
        events.cancelled()
      }
    }
  }

  public func sum(request: StreamingServerRequest<Tick>, context: ServerContext) async throws
    -> ServerResponse<Total>
  {
    var total = Total()
    for try await tick in request.messages { total = total.adding(tick) }
    return ServerResponse(message: total)
  }

  public func square(request: StreamingServerRequest<Tick>, context: ServerContext) async throws
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
