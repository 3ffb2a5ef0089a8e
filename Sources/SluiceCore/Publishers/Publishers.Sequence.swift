extension Publishers {
  /// A publisher that publishes a given sequence of elements, as in Combine.
  ///
  /// ![Marble diagram: (1, 2, 3).publisher](sequence-publisher)
  ///
  /// **Demand**: exactly as requested, e.g. `.max(3)` then `.max(2)` delivers 5 elements;
  /// `.finished` follows the last element at once. An empty sequence sends
  /// `Subscriptions.empty` and `.finished`. **Ordering**: the sequence's order; each subscriber
  /// iterates the sequence afresh. **Cancellation**: iteration stops and the iterator is
  /// released; nothing is delivered after `cancel()` returns.
  ///
  /// ```swift
  /// _ = [1, 2, 3].publisher.sink { print($0) }   // prints 1, 2, 3
  /// ```
  public struct Sequence<Elements: Swift.Sequence, Failure: Error>: Publisher {
    public typealias Output = Elements.Element

    /// The sequence of elements to publish.
    public let sequence: Elements

    /// Creates a publisher for `sequence`.
    public init(sequence: Elements) {
      self.sequence = sequence
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Failure == S.Failure, Elements.Element == S.Input {
      SequenceSource<Elements, Failure>(sequence: sequence).subscribe(subscriber)
    }
  }
}

extension Publishers.Sequence: Equatable where Elements: Equatable {}
extension Publishers.Sequence: Sendable where Elements: Sendable {}

extension Sequence {
  /// A publisher of this sequence's elements that cannot fail.
  ///
  /// ![Marble diagram: (1, 2, 3).publisher](sequence-publisher)
  public var publisher: Publishers.Sequence<Self, Never> {
    Publishers.Sequence(sequence: self)
  }
}

/// A sequence's elements, then `.finished`; described by the sequence itself.
@usableFromInline
struct SequenceSource<Elements: Sequence, Failure: Error>: EmissionSource {
  @usableFromInline let sequence: Elements
  @usableFromInline var iterator: Elements.Iterator

  @inlinable init(sequence: Elements) {
    self.sequence = sequence
    iterator = sequence.makeIterator()
  }

  @inlinable mutating func next() -> Elements.Element? { iterator.next() }
  @inlinable var completion: Subscribers.Completion<Failure> { .finished }
  @usableFromInline var liveDescription: String { String(describing: sequence) }
  @usableFromInline static var finishedDescription: String { "Sequence" }
  /// Combine's child: the sequence, an empty array once the subscription has ended.
  @usableFromInline func reflectedChildren(finished: Bool) -> [Mirror.Child] {
    [("sequence", finished ? [Elements.Element]() as Any : sequence)]
  }
}
