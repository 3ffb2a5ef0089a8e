public import Foundation

/// The time type of the `RunLoop` and `OperationQueue` schedulers: a `Date`, with strides in
/// seconds, as in Combine (where each has its own, identically shaped, nested type).
public struct DateSchedulerTime: Strideable, Codable, Hashable, Sendable {
  /// The date represented by this type.
  public var date: Date

  /// Creates a scheduler time from `date`.
  public init(_ date: Date) {
    self.date = date
  }

  public func distance(to other: DateSchedulerTime) -> Stride {
    Stride(floatLiteral: other.date.timeIntervalSince(date))
  }

  public func advanced(by n: Stride) -> DateSchedulerTime {
    DateSchedulerTime(date.addingTimeInterval(n.timeInterval))
  }

  /// A type that represents the distance between two values, in seconds.
  public struct Stride: ExpressibleByFloatLiteral, Comparable, SignedNumeric, Codable, Hashable,
    SchedulerTimeIntervalConvertible, Sendable
  {
    public typealias FloatLiteralType = TimeInterval
    public typealias IntegerLiteralType = TimeInterval
    public typealias Magnitude = TimeInterval

    /// The value of this time interval in seconds.
    public var magnitude: TimeInterval

    /// The value of this time interval in seconds.
    public var timeInterval: TimeInterval { magnitude }

    public init(integerLiteral value: TimeInterval) { magnitude = value }
    public init(floatLiteral value: TimeInterval) { magnitude = value }
    public init(_ timeInterval: TimeInterval) { magnitude = timeInterval }
    public init?<T: BinaryInteger>(exactly source: T) {
      guard let value = TimeInterval(exactly: source) else { return nil }
      magnitude = value
    }

    public static func < (lhs: Stride, rhs: Stride) -> Bool { lhs.magnitude < rhs.magnitude }
    public static func * (lhs: Stride, rhs: Stride) -> Stride {
      Stride(lhs.magnitude * rhs.magnitude)
    }
    public static func + (lhs: Stride, rhs: Stride) -> Stride {
      Stride(lhs.magnitude + rhs.magnitude)
    }
    public static func - (lhs: Stride, rhs: Stride) -> Stride {
      Stride(lhs.magnitude - rhs.magnitude)
    }
    public static func -= (lhs: inout Stride, rhs: Stride) { lhs = lhs - rhs }
    public static func *= (lhs: inout Stride, rhs: Stride) { lhs = lhs * rhs }
    public static func += (lhs: inout Stride, rhs: Stride) { lhs = lhs + rhs }

    public static func seconds(_ s: Int) -> Stride { Stride(TimeInterval(s)) }
    public static func seconds(_ s: Double) -> Stride { Stride(s) }
    public static func milliseconds(_ ms: Int) -> Stride { Stride(TimeInterval(ms) / 1e3) }
    public static func microseconds(_ us: Int) -> Stride { Stride(TimeInterval(us) / 1e6) }
    public static func nanoseconds(_ ns: Int) -> Stride { Stride(TimeInterval(ns) / 1e9) }
  }
}
