import GRPCCore
import GRPCProtobuf
import Sluice
import SluiceGRPC

extension GRPCClient {
  /// The `Count` RPC's ticks as a publisher: made from the generated stub's call, whose response
  /// handler the publisher supplies.
  public func count(_ request: CountRequest, options: CallOptions = .defaults)
    -> RPCResponsePublisher<Tick>
  {
    let pipelines = Sluice_Pipelines_Pipelines.Client(wrapping: self)
    return RPCResponsePublisher(timeout: options.timeout) { onResponse in
      try await pipelines.count(
        request: ClientRequest(message: request), options: options, onResponse: onResponse)
    }
  }

  /// The `Square` RPC: the values of the pipeline `requests` makes (one per subscription) go
  /// to the server, their squares come back as a publisher.
  public func square<Requests: Publisher>(
    _ requests: @escaping @Sendable () -> Requests, prefetch: Int = 16,
    options: CallOptions = .defaults
  ) -> RPCResponsePublisher<Tick> where Requests.Output == Tick {
    bidirectionalStreamingPublisher(
      requests: requests, prefetch: prefetch,
      descriptor: Sluice_Pipelines_Pipelines.Method.Square.descriptor,
      serializer: ProtobufSerializer<Tick>(), deserializer: ProtobufDeserializer<Tick>(),
      options: options)
  }

  /// The `Sum` RPC: the values of the pipeline `requests` makes go to the server; its total
  /// comes back as a publisher of one value.
  public func sum<Requests: Publisher>(
    _ requests: @escaping @Sendable () -> Requests, prefetch: Int = 16,
    options: CallOptions = .defaults
  ) -> RPCResponsePublisher<Total> where Requests.Output == Tick {
    clientStreamingPublisher(
      requests: requests, prefetch: prefetch,
      descriptor: Sluice_Pipelines_Pipelines.Method.Sum.descriptor,
      serializer: ProtobufSerializer<Tick>(), deserializer: ProtobufDeserializer<Total>(),
      options: options)
  }
}
