/// A scheduler for performing synchronous actions, as in Combine.
///
/// Every action runs at once, on the calling thread. Its clock never advances: scheduling "after"
/// a time runs the action at once, and a repeating schedule runs its action once.
public struct ImmediateScheduler: Scheduler, Sendable {
  /// The time type of ``ImmediateScheduler``: a point that never moves.
  public struct SchedulerTimeType: Strideable, Hashable, Codable, Sendable {
    /// The increment by which the immediate scheduler counts time.
    public struct Stride: ExpressibleByFloatLiteral, Comparable, SignedNumeric, Codable,
      SchedulerTimeIntervalConvertible, Hashable, Sendable
    {
      public typealias FloatLiteralType = Double
      public typealias IntegerLiteralType = Int
      public typealias Magnitude = Int

      /// The value of this time interval.
      public var magnitude: Int

      /// Creates an immediate scheduler time interval from the given time interval.
      public init(_ value: Int) { magnitude = value }
      public init(integerLiteral value: Int) { self.init(value) }
      public init(floatLiteral value: Double) { self.init(Int(value)) }
      public init?<T: BinaryInteger>(exactly source: T) {
        guard let value = Int(exactly: source) else { return nil }
        self.init(value)
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

      public static func seconds(_ s: Int) -> Stride { Stride(0) }
      public static func seconds(_ s: Double) -> Stride { Stride(0) }
      public static func milliseconds(_ ms: Int) -> Stride { Stride(0) }
      public static func microseconds(_ us: Int) -> Stride { Stride(0) }
      public static func nanoseconds(_ ns: Int) -> Stride { Stride(0) }
    }

    public func distance(to other: SchedulerTimeType) -> Stride { Stride(0) }
    public func advanced(by n: Stride) -> SchedulerTimeType { self }
  }

  /// The immediate scheduler has no options.
  public typealias SchedulerOptions = Never

  /// The shared instance of the immediate scheduler.
  public static let shared = ImmediateScheduler()

  public var now: SchedulerTimeType { SchedulerTimeType() }
  public var minimumTolerance: SchedulerTimeType.Stride { SchedulerTimeType.Stride(0) }

  public func schedule(options: Never?, _ action: @escaping () -> Void) { action() }

  public func schedule(
    after date: SchedulerTimeType, tolerance: SchedulerTimeType.Stride, options: Never?,
    _ action: @escaping () -> Void
  ) {
    action()
  }

  public func schedule(
    after date: SchedulerTimeType, interval: SchedulerTimeType.Stride,
    tolerance: SchedulerTimeType.Stride, options: Never?, _ action: @escaping () -> Void
  ) -> any Cancellable {
    action()
    return Subscriptions.empty
  }
}
