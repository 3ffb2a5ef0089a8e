public import SluiceCore

extension Publishers {
  /// A publisher that transforms each value with an `async` closure: `asyncMap`.
  ///
  /// ![Marble diagram: asyncMap { await work($0) }   // work takes 2 ticks](asyncMap)
  ///
  /// Each value runs the closure in a task of its own, up to `maxConcurrent` at a time, with
  /// `priority`; the closure keeps its isolation (a `@MainActor` closure runs on the main actor).
  /// **Demand**: values asked of the upstream and not yet delivered never exceed
  /// `maxConcurrent` nor the downstream's outstanding demand. **Ordering**: results come in
  /// upstream order, whichever finishes first. **Completion**: a finish waits for the values in
  /// flight; a failure cancels them. **Cancellation** cancels the running tasks at once.
  public struct AsyncMap<Upstream: Publisher, Output>: Publisher {
    public typealias Failure = Upstream.Failure

    /// The publisher whose values are transformed.
    public let upstream: Upstream
    /// How many transformations may run at once.
    public let maxConcurrent: Int
    /// The priority of the transformations' tasks (`nil`: inherited as `Task` does).
    public let priority: TaskPriority?
    /// The transformation.
    public let transform: @isolated(any) @Sendable (sending Upstream.Output) async -> sending Output

    /// A publisher that transforms `upstream`'s values with `transform`.
    public init(
      upstream: Upstream, maxConcurrent: Int, priority: TaskPriority?,
      transform:
        @escaping @isolated(any) @Sendable (sending Upstream.Output) async -> sending Output
    ) {
      self.upstream = upstream
      self.maxConcurrent = maxConcurrent
      self.priority = priority
      self.transform = transform
    }

    public func receive<S: Subscriber>(subscriber: S)
    where S.Input == Output, S.Failure == Failure {
      let transform = self.transform
      upstream.subscribe(
        AsyncStepSubscription<Upstream.Output, S>(
          name: "AsyncMap", maxConcurrent: maxConcurrent, priority: priority,
          downstream: subscriber
        ) { value in .success(await transform(value)) })
    }
  }

  /// A publisher that transforms each value with an `async` closure that may throw, failing
  /// with what it throws: `tryAsyncMap`. Demand, ordering, completion and cancellation as
  /// ``AsyncMap``; a thrown error fails the publisher in its value's place in the order.
  ///
  /// ![Marble diagram: tryAsyncMap { try await work($0) }   // throws on 0](tryAsyncMap)
  public struct TryAsyncMap<Upstream: Publisher, Output, Failure: Error>: Publisher
  where Upstream.Failure == Failure {
    /// The publisher whose values are transformed (its failure already of this type).
    public let upstream: Upstream
    /// How many transformations may run at once.
    public let maxConcurrent: Int
    /// The priority of the transformations' tasks.
    public let priority: TaskPriority?
    /// The transformation.
    public let transform:
      @isolated(any) @Sendable (sending Upstream.Output) async throws(Failure) -> sending Output

    /// A publisher that transforms `upstream`'s values with `transform`.
    public init(
      upstream: Upstream, maxConcurrent: Int, priority: TaskPriority?,
      transform:
        @escaping @isolated(any) @Sendable (sending Upstream.Output) async throws(Failure) ->
        sending Output
    ) {
      self.upstream = upstream
      self.maxConcurrent = maxConcurrent
      self.priority = priority
      self.transform = transform
    }

    public func receive<S: Subscriber>(subscriber: S)
    where S.Input == Output, S.Failure == Failure {
      let transform = self.transform
      upstream.subscribe(
        AsyncStepSubscription<Upstream.Output, S>(
          name: "TryAsyncMap", maxConcurrent: maxConcurrent, priority: priority,
          downstream: subscriber
        ) { value in
          do throws(Failure) {
            return .success(try await transform(value))
          } catch {
            return .failure(error)
          }
        })
    }
  }

  /// A publisher that keeps the values an `async` predicate accepts: `asyncFilter`. Demand,
  /// ordering, completion and cancellation as ``AsyncMap``; a rejected value uses no demand.
  ///
  /// ![Marble diagram: asyncFilter { await isEven($0) }   // takes 1 tick](asyncFilter)
  public struct AsyncFilter<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher whose values are filtered.
    public let upstream: Upstream
    /// How many predicates may run at once.
    public let maxConcurrent: Int
    /// The priority of the predicates' tasks.
    public let priority: TaskPriority?
    /// The predicate.
    public let isIncluded: @isolated(any) @Sendable (sending Output) async -> Bool

    /// A publisher of `upstream`'s values that `isIncluded` accepts.
    public init(
      upstream: Upstream, maxConcurrent: Int, priority: TaskPriority?,
      isIncluded: @escaping @isolated(any) @Sendable (sending Output) async -> Bool
    ) {
      self.upstream = upstream
      self.maxConcurrent = maxConcurrent
      self.priority = priority
      self.isIncluded = isIncluded
    }

    public func receive<S: Subscriber>(subscriber: S)
    where S.Input == Output, S.Failure == Failure {
      let isIncluded = self.isIncluded
      upstream.subscribe(
        AsyncStepSubscription<Output, S>(
          name: "AsyncFilter", maxConcurrent: maxConcurrent, priority: priority,
          downstream: subscriber
        ) { value in
          // Safety: the value goes back out only if the predicate kept it, once.
          let kept = UncheckedSendable(value)
          return .success(await isIncluded(value) ? kept.value : nil)
        })
    }
  }
}

extension Publisher {
  /// Transforms each value with an `async` closure, up to `maxConcurrent` at a time, delivering
  /// the results in upstream order; see ``SluiceCore/Publishers/AsyncMap``.
  ///
  /// ![Marble diagram: asyncMap { await work($0) }   // work takes 2 ticks](asyncMap)
  /// ![Marble diagram of asyncMap-maxConcurrent, drawn from a run](asyncMap-maxConcurrent)
  ///
  /// ```swift
  /// $query.debounce(for: .milliseconds(300), scheduler: DispatchQueue.main)
  ///   .asyncMap { query in await search(query) }
  /// ```
  public func asyncMap<T>(
    maxConcurrent: Int = 1, priority: TaskPriority? = nil,
    _ transform: @escaping @isolated(any) @Sendable (sending Output) async -> sending T
  ) -> Publishers.AsyncMap<Self, T> {
    Publishers.AsyncMap(
      upstream: self, maxConcurrent: maxConcurrent, priority: priority, transform: transform)
  }

  /// Transforms each value with an `async` closure that throws this publisher's failure type;
  /// see ``SluiceCore/Publishers/TryAsyncMap``.
  ///
  /// ![Marble diagram: tryAsyncMap { try await work($0) }   // throws on 0](tryAsyncMap)
  public func tryAsyncMap<T>(
    maxConcurrent: Int = 1, priority: TaskPriority? = nil,
    _ transform:
      @escaping @isolated(any) @Sendable (sending Output) async throws(Failure) -> sending T
  ) -> Publishers.TryAsyncMap<Self, T, Failure> {
    Publishers.TryAsyncMap(
      upstream: self, maxConcurrent: maxConcurrent, priority: priority, transform: transform)
  }

  /// Transforms each value with an `async` closure that may throw any error, failing with it
  /// (as `tryMap`, the failure becomes `any Error`); see ``SluiceCore/Publishers/TryAsyncMap``.
  ///
  /// ![Marble diagram: tryAsyncMap { try await work($0) }   // throws on 0](tryAsyncMap)
  @_disfavoredOverload
  public func tryAsyncMap<T>(
    maxConcurrent: Int = 1, priority: TaskPriority? = nil,
    _ transform: @escaping @isolated(any) @Sendable (sending Output) async throws -> sending T
  ) -> Publishers.TryAsyncMap<Publishers.MapError<Self, any Error>, T, any Error> {
    Publishers.TryAsyncMap(
      upstream: mapError { $0 }, maxConcurrent: maxConcurrent, priority: priority,
      transform: transform)
  }

  /// Keeps the values an `async` predicate accepts, in upstream order; see
  /// ``SluiceCore/Publishers/AsyncFilter``.
  ///
  /// ![Marble diagram: asyncFilter { await isEven($0) }   // takes 1 tick](asyncFilter)
  public func asyncFilter(
    maxConcurrent: Int = 1, priority: TaskPriority? = nil,
    _ isIncluded: @escaping @isolated(any) @Sendable (sending Output) async -> Bool
  ) -> Publishers.AsyncFilter<Self> {
    Publishers.AsyncFilter(
      upstream: self, maxConcurrent: maxConcurrent, priority: priority, isIncluded: isIncluded)
  }
}

extension Publisher where Failure == Never {
  /// Transforms each value with an `async` closure whose typed error becomes the failure; see
  /// ``SluiceCore/Publishers/TryAsyncMap``.
  ///
  /// ![Marble diagram: tryAsyncMap { try await work($0) }   // throws on 0](tryAsyncMap)
  public func tryAsyncMap<T, E: Error>(
    maxConcurrent: Int = 1, priority: TaskPriority? = nil,
    _ transform: @escaping @isolated(any) @Sendable (sending Output) async throws(E) -> sending T
  ) -> Publishers.TryAsyncMap<Publishers.SetFailureType<Self, E>, T, E> {
    Publishers.TryAsyncMap(
      upstream: setFailureType(to: E.self), maxConcurrent: maxConcurrent, priority: priority,
      transform: transform)
  }
}
