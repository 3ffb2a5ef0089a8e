/// Every message SluiceAsync traps with, in one place (see SluiceCore's `Violation`).
@usableFromInline
enum AsyncViolation {
  static func bufferSize(_ count: Int, policy: String, minimum: Int) -> Never {
    fatalError(
      "API Violation: AsyncBufferingPolicy.\(policy)(\(count)): the buffer size must be at least "
        + "\(minimum)")
  }

  @usableFromInline
  static func concurrentNext() -> Never {
    fatalError(
      "API Violation: next() called on a publisher's async iterator while another call to next() "
        + "was still waiting; iterate each iterator from one task at a time")
  }
}
