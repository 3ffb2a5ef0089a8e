extension Result {
  /// A publisher that publishes an output to each subscriber exactly once then finishes, or
  /// fails immediately without producing any elements, as in Combine.
  ///
  /// ![Marble diagram: Result<Int, Boom>.failure(Boom()).publisher](result-publisher)
  ///
  /// **Demand**: on success, the value is delivered on the first request, followed by
  /// `.finished`; `request(.none)` traps. On failure, the subscriber receives
  /// `Subscriptions.empty` and the failure at once, without any demand.
  public struct Publisher: SluiceCore.Publisher {
    public typealias Output = Success

    /// The result to deliver to each subscriber.
    public let result: Result<Success, Failure>

    /// Creates a publisher that delivers `result`.
    public init(_ result: Result<Success, Failure>) {
      self.result = result
    }

    /// Creates a publisher that sends `output` once and finishes.
    public init(_ output: Success) {
      self.init(.success(output))
    }

    /// Creates a publisher that fails immediately with `failure`.
    public init(_ failure: Failure) {
      self.init(.failure(failure))
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where S.Input == Success, S.Failure == Failure {
      switch result {
      case .success(let value):
        SingleValueSubscription<Success, OnceLabel, S, S?>.subscribe(subscriber, to: value)
      case .failure(let error):
        subscriber.receive(subscription: Subscriptions.empty)
        subscriber.receive(completion: .failure(error))
      }
    }
  }

  /// A publisher that delivers this result.
  ///
  /// ![Marble diagram: Result<Int, Boom>.failure(Boom()).publisher](result-publisher)
  public var publisher: Publisher { Publisher(self) }
}

extension Result.Publisher: Equatable where Success: Equatable, Failure: Equatable {}
extension Result.Publisher: Sendable where Success: Sendable {}

/// Names `Result.Publisher`'s subscription `"Once"`, Combine's name for it.
@usableFromInline
enum OnceLabel: SingleValueLabel { @usableFromInline static var label: String { "Once" } }
