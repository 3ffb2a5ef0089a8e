/// A publisher that performs type erasure by wrapping another publisher, as in Combine.
///
/// ![Marble diagram: eraseToAnyPublisher()](eraseToAnyPublisher)
///
/// Subscribing to it subscribes to the wrapped publisher; demand, ordering and cancellation
/// are the wrapped publisher's.
///
/// **Cost.** Erasure keeps the wrapped publisher's fast paths. The wrapped publisher sees the
/// subscriber as an ``AnySubscriber`` (a type it knows when it is erased), so its subscription
/// is built in code specialised where `eraseToAnyPublisher()` was called; the subscriber behind
/// it is reached by one indirect call per value, specialised where `sink` (or any subscriber)
/// was attached. A `sink` — the usual end of an erased pipeline — is passed as itself (as Combine
/// passes every subscriber; an `AnySubscriber` the caller made stays one), to the
/// wrapped publisher's `receive(subscriber:)` specialised for `Subscribers.Sink` where it was
/// erased: no `AnySubscriber` box, and the pipeline's subscriptions call the sink directly, as
/// they do unerased. Calling the wrapped publisher's `receive(subscriber:)` through an existential
/// instead would build its subscription in unspecialised code, paying runtime generic metadata
/// lookups on every value (20–30× the cost of the value, measured in `Benchmarks/Shapes`).
public struct AnyPublisher<Output, Failure: Error>: Publisher, CustomStringConvertible,
  CustomPlaygroundDisplayConvertible
{
  /// The wrapped publisher, with its `receive(subscriber:)` specialised for `AnySubscriber`.
  @usableFromInline
  let box: AnyPublisherBox<Output, Failure>

  /// Wraps `publisher`; wrapping an `AnyPublisher` again does not nest.
  @inlinable
  public init<P: Publisher>(_ publisher: P) where Output == P.Output, Failure == P.Failure {
    if let erased = publisher as? AnyPublisher<Output, Failure> {
      self = erased
    } else {
      box = PublisherBox(publisher)
    }
  }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S)
  where Output == S.Input, Failure == S.Failure {
    // A sink itself only (decided where `S` is known): an `AnySubscriber` the caller made
    // stays what the wrapped publisher sees, as it would unerased.
    if S.self == Subscribers.Sink<Output, Failure>.self {
      typealias Sink = Subscribers.Sink<Output, Failure>
      box.subscribeSink(box, Sink.reinterpret(subscriber, as: Sink.self))
    } else {
      box.subscribe(box, AnySubscriber(subscriber))
    }
  }

  /// The wrapped publisher (for checks that look through erasure; not on a per-value path).
  package var base: any Publisher<Output, Failure> { box.base }

  public var description: String { "AnyPublisher" }
  public var playgroundDescription: Any { description }
}

/// The wrapped publisher of an ``AnyPublisher``, whatever its type: a function made where it was
/// erased, in code specialised for its type. ``PublisherBox`` is the only subclass.
///
/// (A class holding a non-capturing function rather than a closure capturing the publisher or
/// an overridden method, for the reasons ``AnyConduit`` gives: an overridden method of a generic
/// class is reached through a vtable holding its unspecialised implementation.)
@usableFromInline
class AnyPublisherBox<Output, Failure: Error>: @unchecked Sendable {
  // Safety: immutable; the wrapped publisher is only used to call `receive(subscriber:)`, which
  // every publisher allows from any thread.
  /// ``PublisherBox/publisher``'s `receive(subscriber:)`, for this box (passed in).
  @usableFromInline let subscribe: (AnyPublisherBox, AnySubscriber<Output, Failure>) -> Void
  /// The same for a sink, specialised for `Subscribers.Sink`.
  @usableFromInline let subscribeSink: (AnyPublisherBox, Subscribers.Sink<Output, Failure>) -> Void

  @inlinable
  init(
    subscribe: @escaping (AnyPublisherBox, AnySubscriber<Output, Failure>) -> Void,
    subscribeSink: @escaping (AnyPublisherBox, Subscribers.Sink<Output, Failure>) -> Void
  ) {
    self.subscribe = subscribe
    self.subscribeSink = subscribeSink
  }

  /// The wrapped publisher, as an existential (cold paths only).
  @usableFromInline var base: any Publisher<Output, Failure> {
    Violation.internalInconsistency("AnyPublisherBox without a publisher")
  }
}

@usableFromInline
final class PublisherBox<Wrapped: Publisher>: AnyPublisherBox<Wrapped.Output, Wrapped.Failure>,
  @unchecked Sendable
{
  // Safety: see the base class.
  @usableFromInline let publisher: Wrapped

  @inlinable
  init(_ publisher: Wrapped) {
    self.publisher = publisher
    // Non-capturing, so made without a context here, where `Wrapped` is known.
    super.init(
      subscribe: { box, subscriber in
        unsafeDowncast(box, to: PublisherBox.self).publisher.receive(subscriber: subscriber)
      },
      subscribeSink: { box, sink in
        unsafeDowncast(box, to: PublisherBox.self).publisher.receive(subscriber: sink)
      })
  }

  @usableFromInline override var base: any Publisher<Wrapped.Output, Wrapped.Failure> {
    publisher
  }
}

extension Publisher {
  /// Wraps this publisher with a type eraser.
  ///
  /// ![Marble diagram: eraseToAnyPublisher()](eraseToAnyPublisher)
  @inlinable
  public func eraseToAnyPublisher() -> AnyPublisher<Output, Failure> {
    AnyPublisher(self)
  }
}
