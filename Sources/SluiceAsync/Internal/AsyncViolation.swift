/// Every message SluiceAsync traps with, in one place (see SluiceCore's `Violation`).
@usableFromInline
enum AsyncViolation {
  static func maxConcurrent(_ count: Int, operator name: String) -> Never {
    fatalError(
      "API Violation: \(name)(maxConcurrent: \(count)): at least 1 value must be allowed in "
        + "flight")
  }

  static func bufferSize(_ count: Int, policy: String, minimum: Int) -> Never {
    fatalError(
      "API Violation: AsyncBufferingPolicy.\(policy)(\(count)): the buffer size must be at least "
        + "\(minimum)")
  }

}
