import NIOCore

extension TimeAmount {
  /// `duration` in NIO's unit (nanoseconds), saturating.
  init(_ duration: Duration) {
    let (seconds, attoseconds) = duration.components
    let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    self = .nanoseconds(
      overflow
        ? (seconds < 0 ? .min : .max)
        : scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue)
  }
}

/// Checks a configuration value, trapping with a message that names it (also in release
/// builds).
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
  if !condition { fatalError("API Violation: \(message())") }
}
