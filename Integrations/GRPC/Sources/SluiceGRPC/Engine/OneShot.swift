import Synchronization

/// Holds a value that is not `Sendable` until it is taken, once, by whichever task runs first:
/// how a publisher handed over with `sending` reaches the `@Sendable` closure gRPC calls once
/// (a response's or a request's producer).
@usableFromInline
final class OneShot<Value>: Sendable {
  @usableFromInline let value: Mutex<Value?>

  @inlinable
  init(_ value: sending Value) {
    self.value = Mutex(value)
  }

  /// The value, the first time; `nil` afterwards.
  @inlinable
  func take() -> sending Value? {
    value.withLock { $0.take() }
  }
}
