/// A publisher that immediately terminates with the specified error, as in Combine.
///
/// ![Marble diagram: Fail<Int, Boom>(error: Boom())](fail)
///
/// The subscriber receives `Subscriptions.empty`, then `.failure(error)` at once.
public struct Fail<Output, Failure: Error>: Publisher {
  /// The failure to send when terminating the publisher.
  public let error: Failure

  /// Creates a publisher that immediately terminates with `error`.
  public init(error: Failure) {
    self.error = error
  }

  /// Creates a publisher with the given output type that immediately terminates with `failure`.
  public init(outputType: Output.Type, failure: Failure) {
    self.error = failure
  }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S)
  where Output == S.Input, Failure == S.Failure {
    subscriber.receive(subscription: Subscriptions.empty)
    subscriber.receive(completion: .failure(error))
  }
}

extension Fail: Equatable where Failure: Equatable {}
extension Fail: Sendable {}
