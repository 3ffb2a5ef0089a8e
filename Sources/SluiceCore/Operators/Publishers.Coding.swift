public import Foundation

/// A type that encodes a value into one top-level output (`JSONEncoder`, `PropertyListEncoder`),
/// as in Combine: what `encode(encoder:)` works with.
public protocol TopLevelEncoder {
  /// The type values are encoded to (`Data` for `JSONEncoder`).
  associatedtype Output
  /// Encodes `value`; throws the encoder's error if it cannot.
  func encode<T: Encodable>(_ value: T) throws -> Output
}

/// A type that decodes a value from one top-level input (`JSONDecoder`, `PropertyListDecoder`),
/// as in Combine: what `decode(type:decoder:)` works with.
public protocol TopLevelDecoder {
  /// The type values are decoded from (`Data` for `JSONDecoder`).
  associatedtype Input
  /// Decodes a value of `type` from `from`; throws the decoder's error if it cannot.
  func decode<T: Decodable>(_ type: T.Type, from: Input) throws -> T
}

extension JSONEncoder: TopLevelEncoder {}
extension JSONDecoder: TopLevelDecoder {}
extension PropertyListEncoder: TopLevelEncoder {}
extension PropertyListDecoder: TopLevelDecoder {}

extension Publishers {
  /// Encodes each value with an encoder, as Combine's `encode(encoder:)`: an encoding error
  /// cancels the upstream and fails the downstream.
  ///
  /// ![Marble diagram: encode(encoder: JSONEncoder())](encode)
  ///
  /// **Demand**: passed upstream unchanged. **Ordering**: the upstream's. **Cancellation**:
  /// cancels the upstream; so does an encoding error.
  public struct Encode<Upstream: Publisher, Coder: TopLevelEncoder>: Publisher
  where Upstream.Output: Encodable {
    public typealias Output = Coder.Output
    public typealias Failure = any Error

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The encoder every value is encoded with.
    public let encoder: Coder

    /// Creates the publisher over `upstream`, with its `encoder`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, encoder: Coder) {
      self.upstream = upstream
      self.encoder = encoder
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let encoder = self.encoder
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.filtering("Encode", failure: anyError) { value in
            attempt { try encoder.encode(value) }
          }.early(.processed).mirror { _, reflection in
            [
              ("downstream", reflection.downstream), ("finished", reflection.finished),
              ("upstreamSubscription", reflection.upstream),
            ]
          }))
    }
  }

  /// Decodes each value with a decoder, as Combine's `decode(type:decoder:)`: a decoding error
  /// cancels the upstream and fails the downstream.
  ///
  /// ![Marble diagram: decode(type: Int.self, decoder: JSONDecoder())](decode)
  ///
  /// **Demand**: passed upstream unchanged. **Ordering**: the upstream's. **Cancellation**:
  /// cancels the upstream; so does a decoding error.
  public struct Decode<Upstream: Publisher, Output: Decodable, Coder: TopLevelDecoder>: Publisher
  where Upstream.Output == Coder.Input {
    public typealias Failure = any Error

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The decoder every value is decoded with.
    public let decoder: Coder

    /// Creates the publisher over `upstream`, with its `decoder`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, decoder: Coder) {
      self.upstream = upstream
      self.decoder = decoder
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let decoder = self.decoder
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.filtering("Decode", failure: anyError) { value in
            attempt { try decoder.decode(Output.self, from: value) }
          }.early(.processed).mirror { _, reflection in
            [
              ("downstream", reflection.downstream), ("finished", reflection.finished),
              ("upstreamSubscription", reflection.upstream),
            ]
          }))
    }
  }
}

extension Publisher where Output: Encodable {
  /// Encodes each value with `encoder`.
  ///
  /// ![Marble diagram: encode(encoder: JSONEncoder())](encode)
  ///
  /// ```swift
  /// Just(point).encode(encoder: JSONEncoder())   // Data
  /// ```
  @inlinable
  public func encode<Coder: TopLevelEncoder>(encoder: Coder) -> Publishers.Encode<Self, Coder> {
    Publishers.Encode(upstream: self, encoder: encoder)
  }
}

extension Publisher {
  /// Decodes each value as `type` with `decoder`.
  ///
  /// ![Marble diagram: decode(type: Int.self, decoder: JSONDecoder())](decode)
  @inlinable
  public func decode<Item: Decodable, Coder: TopLevelDecoder>(
    type: Item.Type, decoder: Coder
  ) -> Publishers.Decode<Self, Item, Coder> where Output == Coder.Input {
    Publishers.Decode(upstream: self, decoder: decoder)
  }
}
