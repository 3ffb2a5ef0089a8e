/// Every message Sluice traps with, in one place.
///
/// Two families: `"API Violation: …"` when a caller broke the contract (the message names the
/// parameter, the value and the type involved) and `"Internal inconsistency: …"` for states that
/// should be impossible. `fatalError` is used rather than `precondition` so the text reaches users
/// of release builds too.
@usableFromInline
enum Violation {
  static func negativeDemand(_ value: Int) -> Never {
    fatalError("API Violation: Subscribers.Demand.max(\(value)): demand must not be negative")
  }

  @usableFromInline
  static func zeroDemand(_ subscription: String) -> Never {
    fatalError(
      "API Violation: request(.none) on a \(subscription) subscription: demand must not be zero; "
        + "request at least .max(1)")
  }

  static func recordingValueAfterCompletion() -> Never {
    fatalError(
      "API Violation: Record.Recording.receive(_:) called after receive(completion:): "
        + "a recording cannot receive values after it completed")
  }

  static func recordingCompletedTwice() -> Never {
    fatalError(
      "API Violation: Record.Recording.receive(completion:) called twice: "
        + "a recording completes exactly once")
  }

  static func negativeDemandDecoded(_ value: Int64) -> String {
    "Subscribers.Demand cannot be negative (decoded \(value))"
  }

  @usableFromInline
  static func negativeIndex(_ index: Int, operator name: String) -> Never {
    fatalError("API Violation: \(name) with index \(index): the index must not be negative")
  }

  static func upperBoundTooLarge(_ bound: Int, operator name: String) -> Never {
    fatalError(
      "API Violation: \(name) with upper bound \(bound): the range must end below Int.max - 1")
  }

  @usableFromInline
  static func negativeCount(_ count: Int, operator name: String) -> Never {
    fatalError("API Violation: \(name) with count \(count): the count must not be negative")
  }

  @usableFromInline
  static func nonPositiveCount(_ count: Int, operator name: String) -> Never {
    fatalError("API Violation: \(name) with count \(count): the count must be at least 1")
  }

  @usableFromInline
  static func unexpectedFailure(
    _ error: any Error, prefix: String, file: StaticString, line: UInt
  ) -> Never {
    fatalError("\(prefix.isEmpty ? "" : "\(prefix): ")\(error)", file: file, line: line)
  }

  @usableFromInline
  static func signalBeforeSubscription(_ signal: String, operator name: String) -> Never {
    fatalError(
      "API Violation: \(name) received \(signal) before its upstream subscription: a publisher "
        + "must call receive(subscription:) first")
  }

  @usableFromInline
  static func unrequestedValue(operator name: String) -> Never {
    fatalError(
      "API Violation: \(name) received a value with no outstanding demand: a publisher must not "
        + "send more values than its subscriber requested")
  }

  @usableFromInline
  static func completionAfterCompletion(operator name: String, failed: Bool) -> Never {
    fatalError(
      "API Violation: \(name) received a completion from an upstream that had already "
        + "\(failed ? "failed" : "finished"): a publisher completes exactly once")
  }

  @usableFromInline
  static func internalInconsistency(_ what: String) -> Never {
    fatalError("Internal inconsistency: \(what)")
  }
}

extension Subscribers.Demand {
  /// Traps when a subscriber requests `.none` from a subscription that, like Combine's, treats
  /// that as a contract violation.
  @inlinable @inline(__always)
  package func assertNonZero(for subscription: @autoclosure () -> String) {
    if self == .none { Violation.zeroDemand(subscription()) }
  }
}
