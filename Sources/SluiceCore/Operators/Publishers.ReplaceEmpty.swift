extension Publishers {
  /// Publishes `output` if the upstream finishes without publishing anything, as Combine's
  /// `replaceEmpty(with:)`.
  ///
  /// ![Marble diagram: replaceEmpty(with: "z")](replaceEmpty)
  ///
  /// **Demand**: passed upstream; `output` waits for the downstream's demand. **Ordering**: the
  /// upstream's values, or `output` then `.finished`. **Cancellation**: cancels the upstream and
  /// drops a waiting `output`. A failure passes on as it is.
  public struct ReplaceEmpty<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The value published if the upstream finishes without publishing one.
    public let output: Output
    /// The publisher this publisher receives values from.
    public let upstream: Upstream

    /// Creates the publisher over `upstream`, with its `output`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, output: Output) {
      self.upstream = upstream
      self.output = output
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let output = self.output
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep(
            "ReplaceEmpty", state: false,
            onValue: { (published: inout Bool, value: Output) in
              published = true
              return .emit(value)
            },
            onCompletion: { published, completion in
              if case .finished = completion, !published {
                return .complete(final: output, .finished)
              }
              return .complete(final: nil, completion)
            })))
    }
  }

  /// Replaces a failure with `output` and `.finished`, as Combine's `replaceError(with:)`.
  ///
  /// ![Marble diagram: replaceError(with: 0)](replaceError)
  ///
  /// **Demand**: passed upstream; `output` waits for the downstream's remaining demand.
  /// **Ordering**: the upstream's values, then `output` on failure. **Cancellation**: cancels
  /// the upstream and drops a waiting `output`. A value beyond the outstanding demand traps
  /// (`API Violation`), as in Combine.
  public struct ReplaceError<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Never

    /// The value published in place of a failure.
    public let output: Output
    /// The publisher this publisher receives values from.
    public let upstream: Upstream

    /// Creates the publisher over `upstream`, with its `output`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, output: Output) {
      self.upstream = upstream
      self.output = output
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let output = self.output
      upstream.receive(
        subscriber: StepSubscription(
          subscriber,
          through: ClosureStep<Output, Upstream.Failure, Void, Output, Never>(
            "ReplaceError", countsDeliveries: true, state: (),
            onValue: { _, value in .emit(value) },
            onCompletion: { _, completion in
              if case .failure = completion { return .complete(final: output, .finished) }
              return .complete(final: nil, .finished)
            }
          ).trappingUnrequestedValues()))
    }
  }
}

extension Publisher {
  /// Publishes `output` if this publisher finishes without publishing a value.
  ///
  /// ![Marble diagram: replaceEmpty(with: "z")](replaceEmpty)
  ///
  /// ```swift
  /// Empty<Int, Never>().replaceEmpty(with: 0)   // 0
  /// ```
  @inlinable
  public func replaceEmpty(with output: Output) -> Publishers.ReplaceEmpty<Self> {
    Publishers.ReplaceEmpty(upstream: self, output: output)
  }

  /// Replaces a failure with `output`, then finishes.
  ///
  /// ![Marble diagram: replaceError(with: 0)](replaceError)
  ///
  /// ```swift
  /// Fail<Int, MyError>(error: .boom).replaceError(with: -1)   // -1
  /// ```
  @inlinable
  public func replaceError(with output: Output) -> Publishers.ReplaceError<Self> {
    Publishers.ReplaceError(upstream: self, output: output)
  }
}
