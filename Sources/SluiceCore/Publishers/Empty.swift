/// A publisher that never publishes any values, and optionally finishes immediately, as in
/// Combine.
///
/// ![Marble diagram: Empty<Int, Never>()](empty)
///
/// The subscriber receives `Subscriptions.empty` and, if `completeImmediately`, `.finished` at
/// once; otherwise nothing more, ever (useful as a never-ending placeholder).
public struct Empty<Output, Failure: Error>: Publisher, Equatable {
  /// Whether the publisher finishes as soon as it is subscribed to.
  public let completeImmediately: Bool

  /// Creates an empty publisher.
  public init(completeImmediately: Bool = true) {
    self.completeImmediately = completeImmediately
  }

  /// Creates an empty publisher with the given completion behaviour and types.
  public init(completeImmediately: Bool = true, outputType: Output.Type, failureType: Failure.Type)
  {
    self.init(completeImmediately: completeImmediately)
  }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S)
  where Output == S.Input, Failure == S.Failure {
    subscriber.receive(subscription: Subscriptions.empty)
    if completeImmediately { subscriber.receive(completion: .finished) }
  }

  public static func == (lhs: Empty, rhs: Empty) -> Bool {
    lhs.completeImmediately == rhs.completeImmediately
  }
}

extension Empty: Sendable {}
