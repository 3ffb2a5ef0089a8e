/// A publisher that performs type erasure by wrapping another publisher, as in Combine.
///
/// ![Marble diagram: eraseToAnyPublisher()](eraseToAnyPublisher)
///
/// Subscribing to it subscribes to the wrapped publisher; demand, ordering and cancellation
/// are the wrapped publisher's.
public struct AnyPublisher<Output, Failure: Error>: Publisher, CustomStringConvertible,
  CustomPlaygroundDisplayConvertible
{
  @usableFromInline
  let base: any Publisher<Output, Failure>

  /// Wraps `publisher`; wrapping an `AnyPublisher` again does not nest.
  public init<P: Publisher>(_ publisher: P) where Output == P.Output, Failure == P.Failure {
    if let erased = publisher as? AnyPublisher<Output, Failure> {
      self = erased
    } else {
      base = publisher
    }
  }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S)
  where Output == S.Input, Failure == S.Failure {
    base.receive(subscriber: subscriber)
  }

  public var description: String { "AnyPublisher" }
  public var playgroundDescription: Any { description }
}

extension Publisher {
  /// Wraps this publisher with a type eraser.
  ///
  /// ![Marble diagram: eraseToAnyPublisher()](eraseToAnyPublisher)
  public func eraseToAnyPublisher() -> AnyPublisher<Output, Failure> {
    AnyPublisher(self)
  }
}
