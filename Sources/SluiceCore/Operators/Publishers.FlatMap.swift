extension Publishers {
  /// Transforms each upstream value into a publisher and merges their values, as Combine's
  /// `flatMap(maxPublishers:_:)`.
  ///
  /// ![Marble diagram: outer.flatMap { inner($0) }](flatMap)
  ///
  /// **Demand**: asks the upstream for `maxPublishers` values, and for one more each time an
  /// inner publisher finishes; each inner publisher is asked for one value at a time (all it
  /// has, once the downstream's demand is unlimited), and a value beyond the downstream's demand
  /// waits, at most one per inner publisher. **Ordering**: values from one inner publisher keep
  /// their order; signals reach the downstream one at a time, whatever threads the publishers
  /// send from. Finishes when the upstream and every inner publisher have finished; the first
  /// failure cancels the rest and fails. **Cancellation**: cancels the upstream and every inner
  /// publisher and releases the downstream.
  public struct FlatMap<NewPublisher: Publisher, Upstream: Publisher>: Publisher
  where NewPublisher.Failure == Upstream.Failure {
    public typealias Output = NewPublisher.Output
    public typealias Failure = Upstream.Failure

    /// The publisher from which this publisher receives elements.
    public let upstream: Upstream
    /// The maximum number of concurrent publisher subscriptions.
    public let maxPublishers: Subscribers.Demand
    /// A closure that takes an element as a parameter and returns a publisher.
    public let transform: (Upstream.Output) -> NewPublisher

    /// Creates a publisher that merges the publishers `transform` makes of `upstream`'s values.
    public init(
      upstream: Upstream, maxPublishers: Subscribers.Demand,
      transform: @escaping (Upstream.Output) -> NewPublisher
    ) {
      self.upstream = upstream
      self.maxPublishers = maxPublishers
      self.transform = transform
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let core = MergeCore<Output, Failure, S>(
        name: "FlatMap", downstream: subscriber, maxPublishers: maxPublishers, hasOuter: true)
      subscriber.receive(subscription: core)
      upstream.receive(subscriber: FlatMapOuter(core: core, transform: transform))
    }
  }
}

/// What `flatMap` subscribes to its upstream: each value becomes an inner publisher of the core.
@usableFromInline
struct FlatMapOuter<Input, Failure: Error, NewPublisher: Publisher, Downstream: Subscriber>:
  Subscriber, CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible
where
  NewPublisher.Failure == Failure, Downstream.Input == NewPublisher.Output,
  Downstream.Failure == Failure
{
  @usableFromInline
  let core: MergeCore<NewPublisher.Output, Failure, Downstream>
  @usableFromInline
  let transform: (Input) -> NewPublisher

  @inlinable
  init(
    core: MergeCore<NewPublisher.Output, Failure, Downstream>,
    transform: @escaping (Input) -> NewPublisher
  ) {
    self.core = core
    self.transform = transform
  }
  @inlinable
  var combineIdentifier: CombineIdentifier { core.combineIdentifier }

  @inlinable
  func receive(subscription: any Subscription) { _ = core.receiveOuter(subscription: subscription) }
  @inlinable
  func receive(_ input: Input) -> Subscribers.Demand {
    core.subscribe(transform(input))
    return .none
  }
  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    core.receiveOuter(completion: completion)
  }

  @inlinable
  var description: String { core.description }
  @inlinable
  var customMirror: Mirror { core.customMirror }
  @inlinable
  var playgroundDescription: Any { description }
}

extension Publisher {
  /// Transforms each value into a publisher and merges their values, with at most
  /// `maxPublishers` subscribed at once.
  ///
  /// ![Marble diagram: outer.flatMap { inner($0) }](flatMap)
  /// ![Marble diagram: outer.flatMap(maxPublishers: .max(1)) { inner($0) }](flatMap-maxPublishers)
  ///
  /// ```swift
  /// ids.flatMap(maxPublishers: .max(4)) { id in AsyncFuture { try await api.item(id) } }
  /// ```
  public func flatMap<T, P: Publisher>(
    maxPublishers: Subscribers.Demand = .unlimited, _ transform: @escaping (Output) -> P
  ) -> Publishers.FlatMap<P, Self> where T == P.Output, Failure == P.Failure {
    Publishers.FlatMap(upstream: self, maxPublishers: maxPublishers, transform: transform)
  }

  /// `flatMap` into publishers that cannot fail.
  ///
  /// ![Marble diagram: outer.flatMap { inner($0) }](flatMap)
  /// ![Marble diagram: outer.flatMap(maxPublishers: .max(1)) { inner($0) }](flatMap-maxPublishers)
  public func flatMap<P: Publisher>(
    maxPublishers: Subscribers.Demand = .unlimited, _ transform: @escaping (Output) -> P
  ) -> Publishers.FlatMap<Publishers.SetFailureType<P, Failure>, Self> where P.Failure == Never {
    Publishers.FlatMap(upstream: self, maxPublishers: maxPublishers) {
      transform($0).setFailureType(to: Failure.self)
    }
  }
}

extension Publisher where Failure == Never {
  /// `flatMap` from a publisher that cannot fail into publishers that can.
  ///
  /// ![Marble diagram: outer.flatMap { inner($0) }](flatMap)
  /// ![Marble diagram: outer.flatMap(maxPublishers: .max(1)) { inner($0) }](flatMap-maxPublishers)
  public func flatMap<P: Publisher>(
    maxPublishers: Subscribers.Demand = .unlimited, _ transform: @escaping (Output) -> P
  ) -> Publishers.FlatMap<P, Publishers.SetFailureType<Self, P.Failure>> {
    Publishers.FlatMap(
      upstream: setFailureType(to: P.Failure.self), maxPublishers: maxPublishers,
      transform: transform)
  }

  /// `flatMap` when neither side can fail.
  ///
  /// ![Marble diagram: outer.flatMap { inner($0) }](flatMap)
  /// ![Marble diagram: outer.flatMap(maxPublishers: .max(1)) { inner($0) }](flatMap-maxPublishers)
  public func flatMap<P: Publisher>(
    maxPublishers: Subscribers.Demand = .unlimited, _ transform: @escaping (Output) -> P
  ) -> Publishers.FlatMap<P, Self> where P.Failure == Never {
    Publishers.FlatMap(upstream: self, maxPublishers: maxPublishers, transform: transform)
  }
}
