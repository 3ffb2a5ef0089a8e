extension Publishers {
  /// Replaces a failing upstream with another publisher, as Combine's `catch`.
  ///
  /// ![Marble diagram: input.catch { _ in fallback }](catch)
  ///
  /// **Demand**: what the downstream requested and has not received carries over to the new
  /// publisher. **Ordering**: the upstream's values, then the new publisher's.
  /// **Cancellation**: cancels whichever publisher is current. **Violations** (trap, as in
  /// Combine): a value before the upstream subscription or beyond the outstanding demand, and a
  /// completion from the failed upstream after it failed (also re-entrantly, from the handler).
  public struct Catch<Upstream: Publisher, NewPublisher: Publisher>: Publisher
  where Upstream.Output == NewPublisher.Output {
    public typealias Output = Upstream.Output
    public typealias Failure = NewPublisher.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The closure that makes the publisher to continue with from a failure.
    public let handler: (Upstream.Failure) -> NewPublisher

    /// Creates the publisher over `upstream`, with its `handler`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, handler: @escaping (Upstream.Failure) -> NewPublisher) {
      self.upstream = upstream
      self.handler = handler
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let handler = self.handler
      RelaySubscription<Upstream, NewPublisher, S>(
        "Catch", downstream: subscriber, movesOnFailure: true, mapTailFailure: { $0 },
        next: { completion in
          switch completion {
          case .finished: .end(.finished)
          case .failure(let error): .subscribe(handler(error))
          }
        }
      ).subscribe(to: upstream)
    }
  }

  /// `catch` with a handler that can throw, as Combine's `tryCatch`: its error fails the
  /// downstream.
  ///
  /// ![Marble diagram: input.tryCatch { _ in fallback }](tryCatch)
  ///
  /// **Demand**: carries over to the new publisher. **Ordering**: the upstream's values, then
  /// the new publisher's. **Cancellation**: cancels whichever publisher is current.
  public struct TryCatch<Upstream: Publisher, NewPublisher: Publisher>: Publisher
  where Upstream.Output == NewPublisher.Output {
    public typealias Output = Upstream.Output
    public typealias Failure = any Error

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The closure that makes the publisher to continue with from a failure.
    public let handler: (Upstream.Failure) throws -> NewPublisher

    /// Creates the publisher over `upstream`, with its `handler`, as the operator method does.
    @inlinable
    public init(upstream: Upstream, handler: @escaping (Upstream.Failure) throws -> NewPublisher) {
      self.upstream = upstream
      self.handler = handler
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let handler = self.handler
      // The new publisher is subscribed to directly (its subscriber is described "TryCatch",
      // as in Combine); its failure reaches the downstream as `any Error`.
      RelaySubscription<Upstream, NewPublisher, S>(
        "TryCatch", downstream: subscriber, movesOnFailure: true, mapTailFailure: anyError,
        next: { completion in
          switch completion {
          case .finished: .end(.finished)
          case .failure(let error):
            switch attempt({ try handler(error) }) {
            case .success(let publisher): .subscribe(publisher)
            case .failure(let error): .end(.failure(error))
            }
          }
        }
      ).subscribe(to: upstream)
    }
  }
}

extension Publisher {
  /// Replaces this publisher with `handler(error)` when it fails.
  ///
  /// ![Marble diagram: input.catch { _ in fallback }](catch)
  ///
  /// ```swift
  /// request.catch { _ in Just(fallback) }
  /// ```
  @inlinable
  public func `catch`<P: Publisher>(
    _ handler: @escaping (Failure) -> P
  ) -> Publishers.Catch<Self, P> where Output == P.Output {
    Publishers.Catch(upstream: self, handler: handler)
  }

  /// `catch` with a handler that can throw; its error fails the downstream.
  ///
  /// ![Marble diagram: input.tryCatch { _ in fallback }](tryCatch)
  @inlinable
  public func tryCatch<P: Publisher>(
    _ handler: @escaping (Failure) throws -> P
  ) -> Publishers.TryCatch<Self, P> where Output == P.Output {
    Publishers.TryCatch(upstream: self, handler: handler)
  }
}
