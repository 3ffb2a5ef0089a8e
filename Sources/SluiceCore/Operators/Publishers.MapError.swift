extension Publishers {
  /// Converts the upstream's failure with a closure, as Combine's `mapError`.
  ///
  /// ![Marble diagram: mapError { _ in URLError(.timedOut) }](mapError)
  ///
  /// **Demand**: passed upstream unchanged. **Ordering**: the upstream's; values pass as they
  /// are. **Cancellation**: straight to the upstream.
  public struct MapError<Upstream: Publisher, Failure: Error>: Publisher {
    public typealias Output = Upstream.Output

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The closure that transforms each failure.
    public let transform: (Upstream.Failure) -> Failure

    /// Creates the publisher over `upstream`, with its `transform`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, transform: @escaping (Upstream.Failure) -> Failure) {
      self.upstream = upstream
      self.transform = transform
    }

    /// Creates the publisher over `upstream`, with its `_`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, _ map: @escaping (Upstream.Failure) -> Failure) {
      self.init(upstream: upstream, transform: map)
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: Forwarding(
          "MapError", downstream: subscriber, value: { $0 }, failure: transform))
    }
  }

  /// Gives a publisher that cannot fail another failure type, as Combine's
  /// `setFailureType(to:)`, so it can be combined with publishers that can.
  ///
  /// ![Marble diagram: setFailureType(to: Boom.self)](setFailureType)
  ///
  /// **Demand**: passed upstream unchanged. **Ordering**: the upstream's. **Cancellation**:
  /// straight to the upstream.
  public struct SetFailureType<Upstream: Publisher, Failure: Error>: Publisher
  where Upstream.Failure == Never {
    public typealias Output = Upstream.Output

    /// The publisher this publisher receives values from.
    public let upstream: Upstream

    /// Creates the publisher over `upstream`.
    @inlinable
    public init(upstream: Upstream) { self.upstream = upstream }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: Forwarding(
          "SetFailureType", downstream: subscriber, value: { $0 }, failure: absurd))
    }

    /// Another failure type for the same upstream.
    @inlinable
    public func setFailureType<E: Error>(to failure: E.Type) -> SetFailureType<Upstream, E> {
      SetFailureType<Upstream, E>(upstream: upstream)
    }
  }
}

/// The conversion from `Never`: it cannot be called.
@inlinable
func absurd<T>(_ never: Never) -> T {}

extension Publishers.SetFailureType: Equatable where Upstream: Equatable {}

extension Publisher {
  /// Converts the failure with `transform`.
  ///
  /// ![Marble diagram: mapError { _ in URLError(.timedOut) }](mapError)
  ///
  /// ```swift
  /// Fail<Int, MyError>(error: .boom).mapError { _ in OtherError() }
  /// ```
  @inlinable
  public func mapError<E: Error>(
    _ transform: @escaping (Failure) -> E
  ) -> Publishers.MapError<Self, E> {
    Publishers.MapError(upstream: self, transform: transform)
  }
}

extension Publisher where Failure == Never {
  /// Declares that this publisher, which cannot fail, has failure type `E`.
  ///
  /// ![Marble diagram: setFailureType(to: Boom.self)](setFailureType)
  @inlinable
  public func setFailureType<E: Error>(to failureType: E.Type) -> Publishers.SetFailureType<Self, E>
  {
    Publishers.SetFailureType(upstream: self)
  }
}
