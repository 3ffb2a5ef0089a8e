extension Publishers {
  /// Transforms every value from the upstream with a closure, as Combine's `map`.
  ///
  /// ![Marble diagram: map { $0 * 10 }](map)
  ///
  /// **Demand**: passed upstream unchanged (the downstream receives the upstream's own
  /// subscription). **Ordering**: the upstream's. **Cancellation**: straight to the upstream.
  public struct Map<Upstream: Publisher, Output>: Publisher {
    public typealias Failure = Upstream.Failure

    /// The publisher this one transforms.
    public let upstream: Upstream
    /// The closure applied to each value.
    public let transform: (Upstream.Output) -> Output

    /// Creates the publisher over `upstream`, with its `transform`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, transform: @escaping (Upstream.Output) -> Output) {
      self.upstream = upstream
      self.transform = transform
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(subscriber: Forwarding("Map", downstream: subscriber, value: transform))
    }
  }

  /// Transforms every value with a closure that can throw, as Combine's `tryMap`: an error
  /// cancels the upstream and fails the downstream.
  ///
  /// ![Marble diagram: tryMap { 12 / $0 }  // throws on 0](tryMap)
  ///
  /// **Demand**: passed upstream unchanged. **Ordering**: the upstream's. **Cancellation**:
  /// cancels the upstream; so does an error thrown by `transform`, before the failure is sent.
  public struct TryMap<Upstream: Publisher, Output>: Publisher {
    public typealias Failure = any Error

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The closure that transforms each value.
    public let transform: (Upstream.Output) throws -> Output

    /// Creates the publisher over `upstream`, with its `transform`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, transform: @escaping (Upstream.Output) throws -> Output) {
      self.upstream = upstream
      self.transform = transform
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.filtering("TryMap", failure: anyError) { [transform] value in
            attempt { try transform(value) }
          }.early(.valuesProcessed)))
    }
  }
}

extension Publisher {
  /// Transforms each value with `transform`.
  ///
  /// ![Marble diagram: map { $0 * 10 }](map)
  ///
  /// ```swift
  /// [1, 2, 3].publisher.map { $0 * 10 }   // 10, 20, 30
  /// ```
  @inlinable
  public func map<T>(_ transform: @escaping (Output) -> T) -> Publishers.Map<Self, T> {
    Publishers.Map(upstream: self, transform: transform)
  }

  /// Transforms each value with `transform`, which may throw; an error cancels the upstream
  /// and fails the downstream.
  ///
  /// ![Marble diagram: tryMap { 12 / $0 }  // throws on 0](tryMap)
  @inlinable
  public func tryMap<T>(_ transform: @escaping (Output) throws -> T) -> Publishers.TryMap<Self, T> {
    Publishers.TryMap(upstream: self, transform: transform)
  }

  /// Replaces `nil` values with `output`.
  ///
  /// ![Marble diagram: replaceNil(with: 0)](replaceNil)
  ///
  /// ```swift
  /// [1, nil, 3].publisher.replaceNil(with: 0)   // 1, 0, 3
  /// ```
  @inlinable
  public func replaceNil<T>(with output: T) -> Publishers.Map<Self, T> where Output == T? {
    Publishers.Map(upstream: self) { $0 ?? output }
  }
}

extension Publishers.Map {
  /// Fuses two maps into one, as Combine does.
  ///
  /// ![Marble diagram: map { $0 * 10 }](map)
  @inlinable
  public func map<T>(_ transform: @escaping (Output) -> T) -> Publishers.Map<Upstream, T> {
    let first = self.transform
    return Publishers.Map(upstream: upstream) { transform(first($0)) }
  }

  /// Fuses a map and a tryMap into one tryMap, as Combine does.
  ///
  /// ![Marble diagram: tryMap { 12 / $0 }  // throws on 0](tryMap)
  @inlinable
  public func tryMap<T>(
    _ transform: @escaping (Output) throws -> T
  ) -> Publishers.TryMap<Upstream, T> {
    let first = self.transform
    return Publishers.TryMap(upstream: upstream) { try transform(first($0)) }
  }
}

extension Publishers.TryMap {
  /// Fuses into one tryMap, as Combine does.
  ///
  /// ![Marble diagram: map { $0 * 10 }](map)
  @inlinable
  public func map<T>(_ transform: @escaping (Output) -> T) -> Publishers.TryMap<Upstream, T> {
    let first = self.transform
    return Publishers.TryMap(upstream: upstream) { transform(try first($0)) }
  }

  /// Fuses into one tryMap, as Combine does.
  ///
  /// ![Marble diagram: tryMap { 12 / $0 }  // throws on 0](tryMap)
  @inlinable
  public func tryMap<T>(
    _ transform: @escaping (Output) throws -> T
  ) -> Publishers.TryMap<Upstream, T> {
    let first = self.transform
    return Publishers.TryMap(upstream: upstream) { try transform(try first($0)) }
  }
}
