/// The messages of misuse that traps, as in SluiceCore's `Violations`: `fatalError`, so that the
/// text reaches users of release builds too.
@usableFromInline
enum GRPCViolation {
  @usableFromInline
  static func zeroDemand(_ subscription: String) -> Never {
    fatalError(
      "API Violation: request(.none) on a \(subscription) subscription: demand must not be zero; "
        + "request at least .max(1)")
  }

  @usableFromInline
  static func prefetch(_ prefetch: Int) -> Never {
    fatalError(
      "API Violation: prefetch \(prefetch) for a pipeline written to a gRPC stream: the values "
        + "asked for ahead of the writer must be at least 1")
  }

  @usableFromInline
  static func writeStallTimeout(_ timeout: Duration) -> Never {
    fatalError(
      "API Violation: writeStallTimeout \(timeout) for a pipeline written to a gRPC stream: "
        + "it must be positive, or nil for no timeout")
  }
}
