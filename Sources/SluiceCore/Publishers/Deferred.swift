/// A publisher that awaits subscription before running the supplied closure to create a
/// publisher for the new subscriber, as in Combine.
///
/// ![Marble diagram: Deferred { makeInput() }](deferred)
///
/// Each subscriber gets a fresh publisher from `createPublisher`, called on the subscribing
/// thread at subscription time.
public struct Deferred<DeferredPublisher: Publisher>: Publisher {
  public typealias Output = DeferredPublisher.Output
  public typealias Failure = DeferredPublisher.Failure

  /// The closure to run to create the publisher for each subscriber.
  public let createPublisher: () -> DeferredPublisher

  /// Creates a deferred publisher.
  public init(createPublisher: @escaping () -> DeferredPublisher) {
    self.createPublisher = createPublisher
  }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S)
  where Output == S.Input, Failure == S.Failure {
    createPublisher().receive(subscriber: subscriber)
  }
}
