extension Optional {
  /// A publisher that publishes an optional value to each subscriber exactly once, if the
  /// optional has a value, as in Combine.
  ///
  /// ![Marble diagram: Optional("a").publisher](optional-publisher)
  ///
  /// **Demand**: a value is delivered on the first request, followed by `.finished`;
  /// `request(.none)` traps. `nil` sends `Subscriptions.empty` and `.finished` at once.
  public struct Publisher: SluiceCore.Publisher {
    public typealias Output = Wrapped
    public typealias Failure = Never

    /// The output to deliver to each subscriber, if any.
    public let output: Wrapped?

    /// Creates a publisher that emits `output` once, if it is not `nil`, and finishes.
    public init(_ output: Output?) {
      self.output = output
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where S.Input == Wrapped, S.Failure == Never {
      if let output {
        SingleValueSubscription<Wrapped, OptionalLabel, S, S?>.subscribe(subscriber, to: output)
      } else {
        subscriber.receive(subscription: Subscriptions.empty)
        subscriber.receive(completion: .finished)
      }
    }
  }

  /// A publisher that emits this optional's value, if any, and finishes.
  ///
  /// ![Marble diagram: Optional("a").publisher](optional-publisher)
  public var publisher: Publisher { Publisher(self) }
}

extension Optional.Publisher: Equatable where Wrapped: Equatable {}
extension Optional.Publisher: Sendable where Wrapped: Sendable {}

/// Names `Optional.Publisher`'s subscription.
@usableFromInline
enum OptionalLabel: SingleValueLabel {
  @usableFromInline static var label: String { "Optional" }
}
