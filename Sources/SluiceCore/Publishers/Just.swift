/// A publisher that emits an output to each subscriber just once, and then finishes, as in
/// Combine.
///
/// ![Marble diagram: Just("a")](just)
///
/// **Demand**: the value is delivered on the first request of at least `.max(1)`, followed at
/// once by `.finished`; `request(.none)` traps. **Cancellation**: nothing is delivered after
/// `cancel()`.
///
/// ```swift
/// _ = Just(42).sink { print($0) }   // prints "42"
/// ```
public struct Just<Output>: Publisher {
  public typealias Failure = Never

  /// The one element that the publisher emits.
  public let output: Output

  /// Creates a publisher that emits `output` once and finishes.
  public init(_ output: Output) {
    self.output = output
  }

  @inlinable
  public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Never {
    SingleValueSubscription<Output, JustLabel, S, S?>.subscribe(subscriber, to: output)
  }
}

extension Just: Equatable where Output: Equatable {}
extension Just: Sendable where Output: Sendable {}

/// Names `Just`'s subscription.
@usableFromInline
enum JustLabel: SingleValueLabel {
  @usableFromInline static var label: String { "Just" }
}
