/// Code as an app's own module would have it: functions and a view model that the pipelines in
/// the benchmarks call across a module boundary (no cross-module inlining: none is
/// `@inlinable`), the way operator closures written as function references reach a library.

/// A view model a sink updates, as UI code does: a class whose stored properties it mutates.
public final class CounterModel: @unchecked Sendable {
  // Safety: each benchmark iteration uses its own model from one thread at a time.
  public var count = 0
  public var last = 0
  public var total = 0

  public init() {}
}

/// `value * 2`.
public func doubled(_ value: Int) -> Int { value &* 2 }

/// Whether `value` is not a multiple of 3.
public func notMultipleOfThree(_ value: Int) -> Bool { value % 3 != 0 }

/// `sum + value`.
public func runningSum(_ sum: Int, _ value: Int) -> Int { sum &+ value }
