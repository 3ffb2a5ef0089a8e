import Foundation
import GRPCCore
import Sluice
import SluiceGRPC
import SwiftProtobuf
import Synchronization

public typealias CountRequest = Sluice_Pipelines_CountRequest
public typealias Tick = Sluice_Pipelines_Tick
public typealias Total = Sluice_Pipelines_Total

/// The example service: each RPC is a Sluice pipeline on the server's side of a gRPC stream.
///
/// - `Count` serves a counting publisher as the response stream
///   (`StreamingServerResponse(publishing:)`);
/// - `Sum` reads the request stream as a publisher and answers with its reduction
///   (`ServerResponse(singleValueOf:)`);
/// - `Square` serves the request stream's publisher, mapped, as the response stream.
public struct PipelinesService: Sluice_Pipelines_Pipelines.ServiceProtocol {
  /// What the service reports (the server process prints it).
  public let events: ServiceEvents
  /// Values asked for ahead of the response writer.
  public let prefetch: Int
  /// How long a response write may wait for a client that takes nothing before the RPC ends
  /// (`StreamingServerResponse(publishing:writeStallTimeout:)`); `nil`: without bound.
  public let writeStallTimeout: Duration?

  public init(
    events: ServiceEvents = ServiceEvents(), prefetch: Int = 16, writeStallTimeout: Duration? = nil
  ) {
    self.events = events
    self.prefetch = prefetch
    self.writeStallTimeout = writeStallTimeout
  }

  public func count(request: ServerRequest<CountRequest>, context: ServerContext) async throws
    -> StreamingServerResponse<Tick>
  {
    events.rpc("Count", context.remotePeer)
    return StreamingServerResponse(
      publishing: Self.ticks(for: request.message, events: events), prefetch: prefetch,
      writeStallTimeout: writeStallTimeout)
  }

  public func sum(request: StreamingServerRequest<Tick>, context: ServerContext) async throws
    -> ServerResponse<Total>
  {
    events.rpc("Sum", context.remotePeer)
    let events = events
    return await ServerResponse(
      singleValueOf: request.publisher
        .handleEvents(receiveOutput: { _ in events.requestsRead.add(1, ordering: .relaxed) })
        .reduce(Total()) { $0.adding($1) })
  }

  public func square(request: StreamingServerRequest<Tick>, context: ServerContext) async throws
    -> StreamingServerResponse<Tick>
  {
    events.rpc("Square", context.remotePeer)
    let events = events
    return StreamingServerResponse(
      publishing: request.publisher
        .handleEvents(
          receiveOutput: { _ in events.requestsRead.add(1, ordering: .relaxed) },
          receiveCancel: { events.cancelled() }
        )
        .map { tick in Tick.with { $0.value = tick.value * tick.value } },
      prefetch: prefetch, writeStallTimeout: writeStallTimeout)
  }

  /// The counting pipeline of a `Count` request: `start`, `start + 1`, … (`count` of them, or
  /// without end), each `interval_micros` after the last if set, with `payload_bytes` of
  /// payload; failing at tick number `fail_after` if set.
  static func ticks(for request: CountRequest, events: ServiceEvents)
    -> AnyPublisher<Tick, any Error>
  {
    let start = request.start
    let values: AnyPublisher<Int64, Never>
    switch (request.count, request.intervalMicros) {
    case (let count, let interval) where interval > 0:
      values = AsyncProducer<Int64, Never> { sender in
        for value in start... {
          if count > 0, value - start >= count { return }
          do { try await Task.sleep(for: .microseconds(interval)) } catch { return }
          guard await sender.send(value) else { return }
        }
      }.eraseToAnyPublisher()
    case (0, _): values = (start...).publisher.eraseToAnyPublisher()
    case (let count, _): values = (start..<(start + count)).publisher.eraseToAnyPublisher()
    }
    let payload = Data(repeating: UInt8(ascii: "x"), count: Int(request.payloadBytes))
    let failAfter = request.failAfter
    let failCode = request.failCode
    return
      values
      .handleEvents(
        receiveOutput: { _ in events.produced.add(1, ordering: .relaxed) },
        receiveCancel: { events.cancelled() }
      )
      .tryMap { value in
        if failAfter > 0, value - start == failAfter {
          if failCode == 0 { throw PlainFailure(tick: failAfter) }
          throw CountFailure(code: Int(failCode), tick: failAfter)
        }
        return Tick.with {
          $0.value = value
          $0.payload = payload
        }
      }
      .eraseToAnyPublisher()
  }
}

/// A failure the `Count` pipeline reports with a status of its choosing: `RPCErrorConvertible`,
/// so its code and message reach the client.
public struct CountFailure: Error, RPCErrorConvertible {
  public let code: Int
  public let tick: Int64

  public var rpcErrorCode: RPCError.Code {
    Status.Code(rawValue: code).flatMap { RPCError.Code($0) } ?? .unknown
  }
  public var rpcErrorMessage: String { "the pipeline failed at tick \(tick)" }
}

/// A failure the `Count` pipeline reports without saying how: the default mapping sends
/// `.unknown` without its description.
public struct PlainFailure: Error {
  public let tick: Int64
}

/// What the service reports: values its `Count` sources emitted, requests its handlers read,
/// sources that saw `cancel()`, and each RPC as it starts.
public final class ServiceEvents: Sendable {
  /// Values the `Count` sources emitted.
  public let produced = Atomic<Int>(0)
  /// Request messages the `Sum` and `Square` handlers read.
  public let requestsRead = Atomic<Int>(0)
  /// Sources that saw `cancel()`.
  public let cancellations = Atomic<Int>(0)
  /// RPCs started.
  public let rpcsStarted = Atomic<Int>(0)
  private let onCancel: @Sendable () -> Void
  private let onRPC: @Sendable (_ method: String, _ peer: String) -> Void

  public init(
    onCancel: @escaping @Sendable () -> Void = {},
    onRPC: @escaping @Sendable (_ method: String, _ peer: String) -> Void = { _, _ in }
  ) {
    self.onCancel = onCancel
    self.onRPC = onRPC
  }

  /// A source saw `cancel()` (or, in the plain service, the RPC was cancelled).
  public func cancelled() {
    cancellations.add(1, ordering: .relaxed)
    onCancel()
  }

  public func rpc(_ method: String, _ peer: String) {
    rpcsStarted.add(1, ordering: .relaxed)
    onRPC(method, peer)
  }
}

extension Total {
  /// This total with `tick` added: what `Sum` does for each request, in each service.
  public func adding(_ tick: Tick) -> Total {
    var total = self
    total.sum += tick.value
    total.count += 1
    return total
  }
}
