extension Publishers {
  /// Publishes the greatest value by an ordering when the upstream finishes (`max`, and `min`
  /// with the ordering reversed), as Combine's `Comparison`. Of equal values, the first wins.
  ///
  /// ![Marble diagram: max()](max)
  ///
  /// **Demand**: `.unlimited` upstream; the result waits for the downstream's demand.
  /// **Ordering**: at most one value, then `.finished`. **Cancellation**: cancels the upstream.
  public struct Comparison<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// `true` when the first argument comes before the second.
    public let areInIncreasingOrder: (Upstream.Output, Upstream.Output) -> Bool

    /// Creates the publisher over `upstream`, with its `areInIncreasingOrder`, as the operator
    /// method does.
    @inlinable
    public init(
      upstream: Upstream,
      areInIncreasingOrder: @escaping (Upstream.Output, Upstream.Output) -> Bool
    ) {
      self.upstream = upstream
      self.areInIncreasingOrder = areInIncreasingOrder
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.reducing(
            "Comparison", initial: Output?.none, failure: same,
            next: { [areInIncreasingOrder] (best: inout Output?, value: Output) in
              if let current = best, !areInIncreasingOrder(current, value) {
                return .success(false)
              }
              best = value
              return .success(false)
            },
            result: { $0 })))
    }
  }

  /// ``Comparison`` with an ordering that can throw, as Combine's `TryComparison`.
  ///
  /// ![Marble diagram: tryMax { $1 == 0 ? throw : $0 < $1 }](tryMax)
  ///
  /// **Demand**: `.unlimited` upstream. **Ordering**: at most one value, then `.finished`.
  /// **Cancellation**: cancels the upstream; so does an error.
  public struct TryComparison<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = any Error

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The closure that says whether two values are in increasing order.
    public let areInIncreasingOrder: (Upstream.Output, Upstream.Output) throws -> Bool

    /// Creates the publisher over `upstream`, with its `areInIncreasingOrder`, as the operator
    /// method does.
    @inlinable
    public init(
      upstream: Upstream,
      areInIncreasingOrder: @escaping (Upstream.Output, Upstream.Output) throws -> Bool
    ) {
      self.upstream = upstream
      self.areInIncreasingOrder = areInIncreasingOrder
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.reducing(
            "TryComparison", initial: Output?.none, failure: anyError,
            next: { [areInIncreasingOrder] (best: inout Output?, value: Output) in
              guard let current = best else {
                best = value
                return .success(false)
              }
              return attempt { try areInIncreasingOrder(current, value) }.map { replace in
                if replace { best = value }
                return false
              }
            },
            result: { $0 })))
    }
  }
}

extension Publisher where Output: Comparable {
  /// Publishes the smallest value when this publisher finishes.
  ///
  /// ![Marble diagram: min()](min)
  ///
  /// ```swift
  /// [3, 1, 2].publisher.min()   // 1
  /// ```
  @inlinable
  public func min() -> Publishers.Comparison<Self> { min(by: <) }

  /// Publishes the greatest value when this publisher finishes.
  ///
  /// ![Marble diagram: max()](max)
  @inlinable
  public func max() -> Publishers.Comparison<Self> { max(by: <) }
}

extension Publisher {
  /// Publishes the smallest value by `areInIncreasingOrder` when this publisher finishes.
  ///
  /// ![Marble diagram: min { $0 % 5 < $1 % 5 }](min-by)
  @inlinable
  public func min(
    by areInIncreasingOrder: @escaping (Output, Output) -> Bool
  ) -> Publishers.Comparison<Self> {
    Publishers.Comparison(upstream: self) { areInIncreasingOrder($1, $0) }
  }

  /// Publishes the greatest value by `areInIncreasingOrder` when this publisher finishes.
  ///
  /// ![Marble diagram: max { $0 % 5 < $1 % 5 }](max-by)
  @inlinable
  public func max(
    by areInIncreasingOrder: @escaping (Output, Output) -> Bool
  ) -> Publishers.Comparison<Self> {
    Publishers.Comparison(upstream: self, areInIncreasingOrder: areInIncreasingOrder)
  }

  /// `min(by:)` with an ordering that can throw.
  ///
  /// ![Marble diagram: tryMin { $1 == 0 ? throw : $0 < $1 }](tryMin)
  @inlinable
  public func tryMin(
    by areInIncreasingOrder: @escaping (Output, Output) throws -> Bool
  ) -> Publishers.TryComparison<Self> {
    Publishers.TryComparison(upstream: self) { try areInIncreasingOrder($1, $0) }
  }

  /// `max(by:)` with an ordering that can throw.
  ///
  /// ![Marble diagram: tryMax { $1 == 0 ? throw : $0 < $1 }](tryMax)
  @inlinable
  public func tryMax(
    by areInIncreasingOrder: @escaping (Output, Output) throws -> Bool
  ) -> Publishers.TryComparison<Self> {
    Publishers.TryComparison(upstream: self, areInIncreasingOrder: areInIncreasingOrder)
  }
}
