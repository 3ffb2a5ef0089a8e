extension Publishers {
  /// Republishes the values that satisfy a predicate, as Combine's `filter`.
  ///
  /// ![Marble diagram: filter { $0 % 2 == 0 }](filter)
  ///
  /// **Demand**: the downstream's requests go straight upstream (no subscription of its own, as
  /// in Combine); each rejected value asks upstream for one more.
  /// **Ordering**: the upstream's. **Cancellation**: goes straight upstream.
  public struct Filter<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The closure that decides whether a value is republished.
    public let isIncluded: (Upstream.Output) -> Bool

    /// Creates the publisher over `upstream`, with its `isIncluded`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, isIncluded: @escaping (Upstream.Output) -> Bool) {
      self.upstream = upstream
      self.isIncluded = isIncluded
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: FilterForwarding("Filter", downstream: subscriber) { [isIncluded] in
          isIncluded($0) ? $0 : nil
        })
    }
  }

  /// Republishes the values that satisfy a predicate that can throw, as Combine's `tryFilter`:
  /// an error cancels the upstream and fails the downstream.
  ///
  /// ![Marble diagram: tryFilter { $0 == 0 ? throw : $0 % 2 == 0 }](tryFilter)
  ///
  /// **Demand**: passed upstream; each rejected value asks upstream for one more.
  /// **Ordering**: the upstream's. **Cancellation**: cancels the upstream; so does an error.
  public struct TryFilter<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = any Error

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The closure that decides whether a value is republished.
    public let isIncluded: (Upstream.Output) throws -> Bool

    /// Creates the publisher over `upstream`, with its `isIncluded`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, isIncluded: @escaping (Upstream.Output) throws -> Bool) {
      self.upstream = upstream
      self.isIncluded = isIncluded
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.filtering("TryFilter", failure: anyError) { [isIncluded] value in
            attempt { try isIncluded(value) }.flatMapToOptional { $0 ? value : nil }
          }.early(.trapped).mirroringDownstream()))
    }
  }

  /// Republishes the non-`nil` results of a closure, as Combine's `compactMap`.
  ///
  /// ![Marble diagram: compactMap { $0 % 2 == 0 ? $0 * 10 : nil }](compactMap)
  ///
  /// **Demand**: the downstream's requests go straight upstream (no subscription of its own, as
  /// in Combine); each `nil` result asks upstream for one more.
  /// **Ordering**: the upstream's. **Cancellation**: goes straight upstream.
  public struct CompactMap<Upstream: Publisher, Output>: Publisher {
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The closure that transforms each value.
    public let transform: (Upstream.Output) -> Output?

    /// Creates the publisher over `upstream`, with its `transform`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, transform: @escaping (Upstream.Output) -> Output?) {
      self.upstream = upstream
      self.transform = transform
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: FilterForwarding("CompactMap", downstream: subscriber, transform: transform))
    }
  }

  /// Republishes the non-`nil` results of a closure that can throw, as Combine's
  /// `tryCompactMap`: an error cancels the upstream and fails the downstream.
  ///
  /// ![Marble diagram: tryCompactMap { odd: nil, 0: throw, else $0 * 10 }](tryCompactMap)
  ///
  /// **Demand**: passed upstream; each `nil` result asks upstream for one more.
  /// **Ordering**: the upstream's. **Cancellation**: cancels the upstream; so does an error.
  public struct TryCompactMap<Upstream: Publisher, Output>: Publisher {
    public typealias Failure = any Error

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The closure that transforms each value.
    public let transform: (Upstream.Output) throws -> Output?

    /// Creates the publisher over `upstream`, with its `transform`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, transform: @escaping (Upstream.Output) throws -> Output?) {
      self.upstream = upstream
      self.transform = transform
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.filtering("TryCompactMap", failure: anyError) { [transform] value in
            attempt { try transform(value) }.flatMapToOptional { $0 }
          }.early(.trapped).mirroringDownstream()))
    }
  }
}

extension Publisher {
  /// Republishes the values for which `isIncluded` returns `true`.
  ///
  /// ![Marble diagram: filter { $0 % 2 == 0 }](filter)
  ///
  /// ```swift
  /// (1...6).publisher.filter { $0.isMultiple(of: 2) }   // 2, 4, 6
  /// ```
  @inlinable
  public func filter(_ isIncluded: @escaping (Output) -> Bool) -> Publishers.Filter<Self> {
    Publishers.Filter(upstream: self, isIncluded: isIncluded)
  }

  /// Republishes the values for which `isIncluded` returns `true`; an error it throws cancels
  /// the upstream and fails the downstream.
  ///
  /// ![Marble diagram: tryFilter { $0 == 0 ? throw : $0 % 2 == 0 }](tryFilter)
  @inlinable
  public func tryFilter(
    _ isIncluded: @escaping (Output) throws -> Bool
  ) -> Publishers.TryFilter<Self> {
    Publishers.TryFilter(upstream: self, isIncluded: isIncluded)
  }

  /// Republishes the non-`nil` results of `transform`.
  ///
  /// ![Marble diagram: compactMap { $0 % 2 == 0 ? $0 * 10 : nil }](compactMap)
  ///
  /// ```swift
  /// ["1", "x", "3"].publisher.compactMap { Int($0) }   // 1, 3
  /// ```
  @inlinable
  public func compactMap<T>(
    _ transform: @escaping (Output) -> T?
  ) -> Publishers.CompactMap<Self, T> {
    Publishers.CompactMap(upstream: self, transform: transform)
  }

  /// Republishes the non-`nil` results of `transform`; an error it throws cancels the upstream
  /// and fails the downstream.
  ///
  /// ![Marble diagram: tryCompactMap { odd: nil, 0: throw, else $0 * 10 }](tryCompactMap)
  @inlinable
  public func tryCompactMap<T>(
    _ transform: @escaping (Output) throws -> T?
  ) -> Publishers.TryCompactMap<Self, T> {
    Publishers.TryCompactMap(upstream: self, transform: transform)
  }
}

extension Publishers.Filter {
  /// Fuses two filters into one, as Combine does.
  ///
  /// ![Marble diagram: filter { $0 % 2 == 0 }](filter)
  @inlinable
  public func filter(_ isIncluded: @escaping (Output) -> Bool) -> Publishers.Filter<Upstream> {
    let first = self.isIncluded
    return Publishers.Filter(upstream: upstream) { first($0) && isIncluded($0) }
  }

  /// Fuses a filter and a tryFilter into one tryFilter, as Combine does.
  ///
  /// ![Marble diagram: tryFilter { $0 == 0 ? throw : $0 % 2 == 0 }](tryFilter)
  @inlinable
  public func tryFilter(
    _ isIncluded: @escaping (Output) throws -> Bool
  ) -> Publishers.TryFilter<Upstream> {
    let first = self.isIncluded
    return Publishers.TryFilter(upstream: upstream) { try first($0) && isIncluded($0) }
  }
}

extension Publishers.TryFilter {
  /// Fuses into one tryFilter, as Combine does.
  ///
  /// ![Marble diagram: filter { $0 % 2 == 0 }](filter)
  @inlinable
  public func filter(_ isIncluded: @escaping (Output) -> Bool) -> Publishers.TryFilter<Upstream> {
    let first = self.isIncluded
    return Publishers.TryFilter(upstream: upstream) { try first($0) && isIncluded($0) }
  }

  /// Fuses into one tryFilter, as Combine does.
  ///
  /// ![Marble diagram: tryFilter { $0 == 0 ? throw : $0 % 2 == 0 }](tryFilter)
  @inlinable
  public func tryFilter(
    _ isIncluded: @escaping (Output) throws -> Bool
  ) -> Publishers.TryFilter<Upstream> {
    let first = self.isIncluded
    return Publishers.TryFilter(upstream: upstream) { try first($0) && isIncluded($0) }
  }
}

extension Publishers.CompactMap {
  /// Fuses two compactMaps into one, as Combine does.
  ///
  /// ![Marble diagram: compactMap { $0 % 2 == 0 ? $0 * 10 : nil }](compactMap)
  @inlinable
  public func compactMap<T>(
    _ transform: @escaping (Output) -> T?
  ) -> Publishers.CompactMap<Upstream, T> {
    let first = self.transform
    return Publishers.CompactMap(upstream: upstream) { first($0).flatMap(transform) }
  }

  /// Fuses a compactMap and a map into one compactMap, as Combine does.
  ///
  /// ![Marble diagram: map { $0 * 10 }](map)
  @inlinable
  public func map<T>(_ transform: @escaping (Output) -> T) -> Publishers.CompactMap<Upstream, T> {
    let first = self.transform
    return Publishers.CompactMap(upstream: upstream) { first($0).map(transform) }
  }
}

extension Publishers.TryCompactMap {
  /// Fuses into one tryCompactMap, as Combine does.
  ///
  /// ![Marble diagram: compactMap { $0 % 2 == 0 ? $0 * 10 : nil }](compactMap)
  @inlinable
  public func compactMap<T>(
    _ transform: @escaping (Output) throws -> T?
  ) -> Publishers.TryCompactMap<Upstream, T> {
    let first = self.transform
    return Publishers.TryCompactMap(upstream: upstream) { try first($0).flatMap(transform) }
  }
}
