import GRPCCore
import Sluice

extension GRPCClient {
  /// The responses of a server-streaming call as a publisher: each subscriber makes the call
  /// on its first request and its demand drives `next()` on the responses. See
  /// ``RPCResponsePublisher`` for demand, completion and cancellation.
  @inlinable
  public func serverStreamingPublisher<Request: Sendable, Response: Sendable>(
    request: ClientRequest<Request>, descriptor: MethodDescriptor,
    serializer: some MessageSerializer<Request>, deserializer: some MessageDeserializer<Response>,
    options: CallOptions = .defaults
  ) -> RPCResponsePublisher<Response> {
    RPCResponsePublisher(timeout: options.timeout) { onResponse in
      try await self.serverStreaming(
        request: request, descriptor: descriptor, serializer: serializer,
        deserializer: deserializer, options: options, onResponse: onResponse)
    }
  }

  /// The responses of a bidirectional call whose requests are the values of the pipeline
  /// `requests` makes (one per call, so once per subscriber), as a publisher. Requests are
  /// written `prefetch` ahead at most (see `StreamingClientRequest(publishing:)`); the
  /// responses are pulled as the subscriber demands them (see ``RPCResponsePublisher``).
  @inlinable
  public func bidirectionalStreamingPublisher<
    Requests: Publisher, Response: Sendable
  >(
    requests: @escaping @Sendable () -> Requests, metadata: Metadata = [:], prefetch: Int = 16,
    descriptor: MethodDescriptor, serializer: some MessageSerializer<Requests.Output>,
    deserializer: some MessageDeserializer<Response>, options: CallOptions = .defaults,
    errorMapping: RPCErrorMapping = .default
  ) -> RPCResponsePublisher<Response> where Requests.Output: Sendable {
    let pipelines: any PipelineFactory<Requests.Output> = ClosurePipelineFactory(
      makePublisher: requests, prefetch: prefetch)
    return RPCResponsePublisher(timeout: options.timeout) { onResponse in
      try await self.bidirectionalStreaming(
        request: StreamingClientRequest(
          pipelines.make(), metadata: metadata, errorMapping: errorMapping),
        descriptor: descriptor, serializer: serializer, deserializer: deserializer,
        options: options, onResponse: onResponse)
    }
  }

  /// The single response of a client-streaming call whose requests are the values of the
  /// pipeline `requests` makes (one per call), as a publisher of one value.
  @inlinable
  public func clientStreamingPublisher<
    Requests: Publisher, Response: Sendable
  >(
    requests: @escaping @Sendable () -> Requests, metadata: Metadata = [:], prefetch: Int = 16,
    descriptor: MethodDescriptor, serializer: some MessageSerializer<Requests.Output>,
    deserializer: some MessageDeserializer<Response>, options: CallOptions = .defaults,
    errorMapping: RPCErrorMapping = .default
  ) -> RPCResponsePublisher<Response> where Requests.Output: Sendable {
    let pipelines: any PipelineFactory<Requests.Output> = ClosurePipelineFactory(
      makePublisher: requests, prefetch: prefetch)
    return RPCResponsePublisher(
      timeout: options.timeout,
      singleResponseOf: { onResponse in
        try await self.clientStreaming(
          request: StreamingClientRequest(
            pipelines.make(), metadata: metadata, errorMapping: errorMapping),
          descriptor: descriptor, serializer: serializer, deserializer: deserializer,
          options: options, onResponse: onResponse)
      })
  }
}
