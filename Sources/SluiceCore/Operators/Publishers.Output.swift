extension Publishers {
  /// Republishes the values at the given positions, as Combine's `output(in:)`, `output(at:)`
  /// and `prefix(_:)`.
  ///
  /// ![Marble diagram: output(in: 1...2)](output-in)
  ///
  /// **Demand**: passed upstream; each value before the range asks upstream for one more.
  /// **Ordering**: the upstream's. **Cancellation**: cancels the upstream; so does the last
  /// value of the range, right after it is delivered, before `.finished`.
  public struct Output<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The positions (0-based) to republish.
    public let range: CountableRange<Int>

    /// Traps unless `range.lowerBound` is at least 0.
    @inlinable
    public init(upstream: Upstream, range: CountableRange<Int>) {
      if range.lowerBound < 0 { Violation.negativeIndex(range.lowerBound, operator: "output(in:)") }
      self.upstream = upstream
      self.range = range
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let range = self.range
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep.passing("Output", state: 0, failure: same) {
            (index: inout Int, value: Output) in
            defer { index += 1 }
            if index < range.lowerBound { return .drop(requesting: .max(1)) }
            if index + 1 < range.upperBound { return .emit(value) }
            return index + 1 == range.upperBound ? .emitAndFinish(value) : .finish(final: nil)
          }.early(.valuesProcessed)))
    }
  }
}

extension Publisher {
  /// Republishes the value at position `index` (0-based), then finishes.
  ///
  /// ![Marble diagram: output(at: 1)](output-at)
  ///
  /// ```swift
  /// ["a", "b", "c"].publisher.output(at: 1)   // "b"
  /// ```
  /// Traps if `index` is negative.
  @inlinable
  public func output(at index: Int) -> Publishers.Output<Self> {
    if index < 0 { Violation.negativeIndex(index, operator: "output(at:)") }
    return Publishers.Output(upstream: self, range: index..<(index + 1))
  }

  /// Republishes the values at the positions in `range` (0-based), then finishes.
  ///
  /// ![Marble diagram: output(in: 1...2)](output-in)
  ///
  /// ```swift
  /// (10...20).publisher.output(in: 2...4)   // 12, 13, 14
  /// ```
  @inlinable
  public func output<R: RangeExpression>(in range: R) -> Publishers.Output<Self>
  where R.Bound == Int {
    let bounds = range.relative(to: 0..<Int.max)
    return Publishers.Output(upstream: self, range: bounds.lowerBound..<bounds.upperBound)
  }

  /// Republishes the first `maxLength` values, then finishes.
  ///
  /// ![Marble diagram: prefix(2)](prefix)
  ///
  /// ```swift
  /// (1...).publisher.prefix(3)   // 1, 2, 3
  /// ```
  /// Traps if `maxLength` is negative.
  @inlinable
  public func prefix(_ maxLength: Int) -> Publishers.Output<Self> {
    if maxLength < 0 { Violation.negativeCount(maxLength, operator: "prefix(_:)") }
    return Publishers.Output(upstream: self, range: 0..<maxLength)
  }
}

extension Publishers {
  /// Omits the first values of the upstream, as Combine's `dropFirst(_:)`.
  ///
  /// ![Marble diagram: dropFirst(2)](dropFirst)
  ///
  /// **Demand**: the downstream receives the subscription at once (as in Combine); what it
  /// requests before the upstream subscribes is summed and sent with `count` added when it does,
  /// later requests go straight upstream, so dropping needs no extra round trips.
  /// **Ordering**: the upstream's. **Cancellation**: cancels the upstream.
  public struct Drop<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// How many values to omit.
    public let count: Int

    /// Creates the publisher over `upstream`, with its `count`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, count: Int) {
      self.upstream = upstream
      self.count = count
    }

    /// Traps if `count` is negative (when subscribed, as in Combine).
    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      if count < 0 { Violation.negativeCount(count, operator: "dropFirst(_:)") }
      let subscription = DropFirstSubscription(downstream: subscriber, count: count)
      subscription.start()
      upstream.receive(subscriber: subscription)
    }
  }
}

extension Publisher {
  /// Omits the first `count` values.
  ///
  /// ![Marble diagram: dropFirst(2)](dropFirst)
  ///
  /// ```swift
  /// [1, 2, 3].publisher.dropFirst()   // 2, 3
  /// ```
  @inlinable
  public func dropFirst(_ count: Int = 1) -> Publishers.Drop<Self> {
    Publishers.Drop(upstream: self, count: count)
  }
}
