package import SluiceCore

// Helpers for this package's own test targets (`package` access: not part of the public API).

/// A lock-protected value that test closures set and read from any thread.
package final class Box<Value>: @unchecked Sendable {
  // Safety: every access goes through the lock.
  private let lock: Lock<Value?>
  package init(_ value: Value? = nil) { lock = Lock(value) }
  package func set(_ value: Value) { lock.withLock { $0 = value } }
  package var value: Value? { lock.withLock { $0 } }
  package func update<R>(_ body: (inout Value?) -> R) -> R { lock.withLock(body) }
}

/// How many of `available` values a subscriber that requests `initialDemand`, then returns
/// `demandPerValue` after each value, is owed: the count a rule test expects to be delivered.
package func deliverableCount(
  initialDemand: Subscribers.Demand, demandPerValue: Subscribers.Demand, available: Int
) -> Int {
  var allowed = initialDemand
  var count = 0
  while count < available, allowed > count {
    count += 1
    allowed += demandPerValue
  }
  return count
}
