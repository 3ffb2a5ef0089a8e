/// Why awaiting a publisher's value did not produce one.
public enum PublisherValueError: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
  /// The publisher finished without sending a value.
  case noValue
  /// ``SluiceCore/Publisher/singleValue(isolation:)`` received a second value.
  case moreThanOneValue

  public var description: String {
    switch self {
    case .noValue: "the publisher finished without a value"
    case .moreThanOneValue: "the publisher sent more than one value where one was expected"
    }
  }
}

extension Publisher {
  /// The first value the publisher sends; the subscription is cancelled as soon as it arrives.
  ///
  /// ![Marble diagram: try await input.firstValue()](firstValue)
  ///
  /// **Demand**: `.max(1)`. Throws the publisher's failure, ``PublisherValueError/noValue`` if it
  /// finishes first, or `CancellationError` if the awaiting task is cancelled (which cancels
  /// the subscription).
  ///
  /// **Isolation**: runs in the caller's isolation (`isolation` defaults to it), so a chain
  /// built on the main actor or in an actor is awaited there without crossing an isolation
  /// boundary; its operators' closures run where the upstream sends, as with `sink`.
  public func firstValue(isolation: isolated (any Actor)? = #isolation) async throws -> Output {
    var iterator = values(bufferingPolicy: .demandOne).makeAsyncIterator()
    guard let value = try await iterator.next(isolation: isolation) else {
      throw Self.noValueError()
    }
    return value
  }

  /// The last value the publisher sends before it finishes.
  ///
  /// ![Marble diagram: try await input.lastValue()](lastValue)
  ///
  /// **Demand**: `.unlimited`, keeping only the newest value (constant memory). Throws as
  /// ``firstValue(isolation:)``, in the caller's isolation.
  public func lastValue(isolation: isolated (any Actor)? = #isolation) async throws -> Output {
    var iterator = values(bufferingPolicy: .bufferingNewest(1)).makeAsyncIterator()
    var last: Output?
    while let value = try await iterator.next(isolation: isolation) { last = value }
    try Self.throwIfCancelled()
    guard let last else { throw PublisherValueError.noValue }
    return last
  }

  /// The one value the publisher sends before it finishes.
  ///
  /// ![Marble diagram: try await input.singleValue()](singleValue)
  ///
  /// **Demand**: `.max(1)` at a time. Throws ``PublisherValueError/moreThanOneValue`` (and
  /// cancels the subscription) as soon as a second value arrives, and otherwise as
  /// ``firstValue(isolation:)``, in the caller's isolation.
  public func singleValue(isolation: isolated (any Actor)? = #isolation) async throws -> Output {
    var iterator = values(bufferingPolicy: .demandOne).makeAsyncIterator()
    guard let value = try await iterator.next(isolation: isolation) else {
      throw Self.noValueError()
    }
    if try await iterator.next(isolation: isolation) != nil {
      throw PublisherValueError.moreThanOneValue
    }
    try Self.throwIfCancelled()
    return value
  }

  /// Every value the publisher sends, once it finishes.
  ///
  /// ![Marble diagram: try await input.allValues()](allValues)
  ///
  /// **Demand**: `.unlimited`. Throws the publisher's failure, or `CancellationError` if the
  /// awaiting task is cancelled (which cancels the subscription). Runs in the caller's
  /// isolation, as ``firstValue(isolation:)``.
  public func allValues(isolation: isolated (any Actor)? = #isolation) async throws -> [Output] {
    var iterator = values(bufferingPolicy: .unbounded).makeAsyncIterator()
    var all: [Output] = []
    while let value = try await iterator.next(isolation: isolation) { all.append(value) }
    try Self.throwIfCancelled()
    return all
  }

  /// `CancellationError` if the iteration ended because the task was cancelled, else `noValue`.
  private static func noValueError() -> any Error {
    Task.isCancelled ? CancellationError() : PublisherValueError.noValue
  }

  private static func throwIfCancelled() throws {
    if Task.isCancelled { throw CancellationError() }
  }
}

extension Future {
  /// The future's value, once it is fulfilled, as in Combine. Throws the future's failure, or
  /// `CancellationError` if the awaiting task is cancelled.
  public var value: Output {
    get async throws { try await firstValue() }
  }
}

extension Future where Failure == Never {
  /// The future's value, once it is fulfilled, as in Combine.
  ///
  /// A future that cannot fail has no way to report cancellation, so, as in Combine, cancelling
  /// the awaiting task does not end this wait: use ``SluiceCore/Publisher/firstValue(isolation:)`` for a wait that
  /// cancellation ends.
  public var value: Output {
    get async {
      await withUnsafeContinuation { continuation in
        subscribe(OneValue { continuation.resume(returning: UncheckedSendable($0)) })
      }.value
    }
  }
}

/// Requests one value and hands it to a closure: `Future.value` for futures that cannot fail.
private final class OneValue<Input>: Subscriber, @unchecked Sendable {
  // Safety: a future delivers at most one value, once; the closure is called at most once.
  typealias Failure = Never
  private let received: (Input) -> Void

  init(_ received: @escaping (Input) -> Void) {
    self.received = received
  }

  func receive(subscription: any Subscription) { subscription.request(.max(1)) }

  func receive(_ input: Input) -> Subscribers.Demand {
    received(input)
    return .none
  }

  func receive(completion: Subscribers.Completion<Never>) {}
}
