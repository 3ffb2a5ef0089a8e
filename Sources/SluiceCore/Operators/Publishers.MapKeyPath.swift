extension Publishers {
  /// Publishes the value of a key path of each upstream value (`map(\.name)`).
  ///
  /// ![Marble diagram: map(.count)](map-keypath)
  ///
  /// **Demand**: passed upstream unchanged. **Ordering**: the upstream's. **Cancellation**:
  /// straight to the upstream.
  public struct MapKeyPath<Upstream: Publisher, Output>: Publisher {
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The key path of the property read from each value.
    public let keyPath: KeyPath<Upstream.Output, Output>

    /// Creates the publisher over `upstream`, with its `keyPath`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, keyPath: KeyPath<Upstream.Output, Output>) {
      self.upstream = upstream
      self.keyPath = keyPath
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let keyPath = self.keyPath
      upstream.receive(
        subscriber: Forwarding(
          "ValueForKey", downstream: subscriber, children: [("keyPath", keyPath)]
        ) { $0[keyPath: keyPath] })
    }
  }

  /// Publishes the values of two key paths of each upstream value, as a tuple.
  ///
  /// ![Marble diagram: map(.count)](map-keypath)
  ///
  /// **Demand**: passed upstream unchanged. **Ordering**: the upstream's. **Cancellation**:
  /// straight to the upstream.
  public struct MapKeyPath2<Upstream: Publisher, Output0, Output1>: Publisher {
    public typealias Output = (Output0, Output1)
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The key path of the first property read from each value.
    public let keyPath0: KeyPath<Upstream.Output, Output0>
    /// The key path of the second property read from each value.
    public let keyPath1: KeyPath<Upstream.Output, Output1>

    /// Creates the publisher over `upstream`, with its `keyPath0`, `keyPath1`, as the operator
    /// method does.
    @inlinable
    public init(
      upstream: Upstream, keyPath0: KeyPath<Upstream.Output, Output0>,
      keyPath1: KeyPath<Upstream.Output, Output1>
    ) {
      self.upstream = upstream
      self.keyPath0 = keyPath0
      self.keyPath1 = keyPath1
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let (keyPath0, keyPath1) = (self.keyPath0, self.keyPath1)
      upstream.receive(
        subscriber: Forwarding(
          "ValueForKeys", downstream: subscriber,
          children: [("keyPath0", keyPath0), ("keyPath1", keyPath1)]
        ) {
          ($0[keyPath: keyPath0], $0[keyPath: keyPath1])
        })
    }
  }

  /// Publishes the values of three key paths of each upstream value, as a tuple.
  ///
  /// ![Marble diagram: map(.count)](map-keypath)
  ///
  /// **Demand**: passed upstream unchanged. **Ordering**: the upstream's. **Cancellation**:
  /// straight to the upstream.
  public struct MapKeyPath3<Upstream: Publisher, Output0, Output1, Output2>: Publisher {
    public typealias Output = (Output0, Output1, Output2)
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The key path of the first property read from each value.
    public let keyPath0: KeyPath<Upstream.Output, Output0>
    /// The key path of the second property read from each value.
    public let keyPath1: KeyPath<Upstream.Output, Output1>
    /// The key path of the third property read from each value.
    public let keyPath2: KeyPath<Upstream.Output, Output2>

    /// Creates the publisher over `upstream`, with its `keyPath0`, `keyPath1`, `keyPath2`, as the
    /// operator method does.
    @inlinable
    public init(
      upstream: Upstream, keyPath0: KeyPath<Upstream.Output, Output0>,
      keyPath1: KeyPath<Upstream.Output, Output1>, keyPath2: KeyPath<Upstream.Output, Output2>
    ) {
      self.upstream = upstream
      self.keyPath0 = keyPath0
      self.keyPath1 = keyPath1
      self.keyPath2 = keyPath2
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let (keyPath0, keyPath1, keyPath2) = (self.keyPath0, self.keyPath1, self.keyPath2)
      upstream.receive(
        subscriber: Forwarding(
          "ValueForKeys", downstream: subscriber,
          children: [("keyPath0", keyPath0), ("keyPath1", keyPath1), ("keyPath2", keyPath2)]
        ) {
          ($0[keyPath: keyPath0], $0[keyPath: keyPath1], $0[keyPath: keyPath2])
        })
    }
  }
}

extension Publisher {
  /// Publishes the value of `keyPath` of each value.
  ///
  /// ![Marble diagram: map(.count)](map-keypath)
  ///
  /// ```swift
  /// ["a", "bcd"].publisher.map(\.count)   // 1, 3
  /// ```
  @inlinable
  public func map<T>(_ keyPath: KeyPath<Output, T>) -> Publishers.MapKeyPath<Self, T> {
    Publishers.MapKeyPath(upstream: self, keyPath: keyPath)
  }

  /// Publishes the values of two key paths of each value, as a tuple.
  ///
  /// ![Marble diagram: map(.count)](map-keypath)
  @inlinable
  public func map<T0, T1>(
    _ keyPath0: KeyPath<Output, T0>, _ keyPath1: KeyPath<Output, T1>
  ) -> Publishers.MapKeyPath2<Self, T0, T1> {
    Publishers.MapKeyPath2(upstream: self, keyPath0: keyPath0, keyPath1: keyPath1)
  }

  /// Publishes the values of three key paths of each value, as a tuple.
  ///
  /// ![Marble diagram: map(.count)](map-keypath)
  @inlinable
  public func map<T0, T1, T2>(
    _ keyPath0: KeyPath<Output, T0>, _ keyPath1: KeyPath<Output, T1>,
    _ keyPath2: KeyPath<Output, T2>
  ) -> Publishers.MapKeyPath3<Self, T0, T1, T2> {
    Publishers.MapKeyPath3(
      upstream: self, keyPath0: keyPath0, keyPath1: keyPath1, keyPath2: keyPath2)
  }
}
