public import Foundation

/// The shape shared by `RunLoop.SchedulerTimeType` and `OperationQueue.SchedulerTimeType`: a
/// `Date`, strided in seconds.
///
/// In Combine these are two distinct nominal types with identical members, so code can extend or
/// overload on each. Sluice keeps them distinct and writes their members once, here, as
/// protocol extensions. (A generic type with a tag would not do: Swift rejects two conformances
/// of one generic type to the same protocol.) Not meant to be adopted outside Sluice.
public protocol _DateSchedulerTime: Strideable, Codable, Hashable, Sendable
where Stride: _TimeIntervalSchedulerStride {
  /// The date represented by this time.
  var date: Date { get set }
  /// Creates a scheduler time from `date`.
  init(_ date: Date)
}

extension _DateSchedulerTime {
  /// The seconds from this time to `other`.
  public func distance(to other: Self) -> Stride {
    Stride(other.date.timeIntervalSince(date))
  }

  /// This time moved by `n` seconds.
  public func advanced(by n: Stride) -> Self {
    Self(date.addingTimeInterval(n.timeInterval))
  }
}

/// The shape shared by the `Stride` types of `RunLoop` and `OperationQueue` scheduler times: a
/// `TimeInterval` in seconds. Not meant to be adopted outside Sluice.
public protocol _TimeIntervalSchedulerStride: ExpressibleByFloatLiteral, Comparable,
  SignedNumeric, Codable, Hashable, SchedulerTimeIntervalConvertible, Sendable
where
  FloatLiteralType == TimeInterval, IntegerLiteralType == TimeInterval,
  Magnitude == TimeInterval
{
  /// The value of this time interval in seconds.
  var magnitude: TimeInterval { get set }
  /// Creates a stride of `timeInterval` seconds.
  init(_ timeInterval: TimeInterval)
}

extension _TimeIntervalSchedulerStride {
  /// The value of this time interval in seconds.
  public var timeInterval: TimeInterval { magnitude }

  public init(integerLiteral value: TimeInterval) { self.init(value) }
  public init(floatLiteral value: TimeInterval) { self.init(value) }
  public init?<T: BinaryInteger>(exactly source: T) {
    guard let value = TimeInterval(exactly: source) else { return nil }
    self.init(value)
  }

  public static func < (lhs: Self, rhs: Self) -> Bool { lhs.magnitude < rhs.magnitude }
  public static func * (lhs: Self, rhs: Self) -> Self { Self(lhs.magnitude * rhs.magnitude) }
  public static func + (lhs: Self, rhs: Self) -> Self { Self(lhs.magnitude + rhs.magnitude) }
  public static func - (lhs: Self, rhs: Self) -> Self { Self(lhs.magnitude - rhs.magnitude) }
  public static func -= (lhs: inout Self, rhs: Self) { lhs = lhs - rhs }
  public static func *= (lhs: inout Self, rhs: Self) { lhs = lhs * rhs }
  public static func += (lhs: inout Self, rhs: Self) { lhs = lhs + rhs }

  public static func seconds(_ s: Int) -> Self { Self(TimeInterval(s)) }
  public static func seconds(_ s: Double) -> Self { Self(s) }
  public static func milliseconds(_ ms: Int) -> Self { Self(TimeInterval(ms) / 1e3) }
  public static func microseconds(_ us: Int) -> Self { Self(TimeInterval(us) / 1e6) }
  public static func nanoseconds(_ ns: Int) -> Self { Self(TimeInterval(ns) / 1e9) }
}

extension RunLoop {
  /// The scheduler time type used by the run loop: a `Date`, as in Combine.
  public struct SchedulerTimeType: _DateSchedulerTime {
    /// The date represented by this type.
    public var date: Date

    /// Creates a run loop scheduler time with the given date.
    public init(_ date: Date) { self.date = date }

    /// A type that represents the distance between two values, in seconds.
    public struct Stride: _TimeIntervalSchedulerStride {
      /// The value of this time interval in seconds.
      public var magnitude: TimeInterval

      /// Creates a stride of `timeInterval` seconds.
      public init(_ timeInterval: TimeInterval) { magnitude = timeInterval }
    }
  }
}

extension OperationQueue {
  /// The scheduler time type used by the operation queue: a `Date`, as in Combine.
  public struct SchedulerTimeType: _DateSchedulerTime {
    /// The date represented by this type.
    public var date: Date

    /// Creates an operation queue scheduler time with the given date.
    public init(_ date: Date) { self.date = date }

    /// A type that represents the distance between two values, in seconds.
    public struct Stride: _TimeIntervalSchedulerStride {
      /// The value of this time interval in seconds.
      public var magnitude: TimeInterval

      /// Creates a stride of `timeInterval` seconds.
      public init(_ timeInterval: TimeInterval) { magnitude = timeInterval }
    }
  }
}
