public import Dispatch

extension DispatchQueue: Scheduler {
  /// The scheduler time type used by the dispatch queue, as in Combine.
  public struct SchedulerTimeType: Strideable, Codable, Hashable, Sendable {
    /// The dispatch time represented by this type.
    public var dispatchTime: DispatchTime

    /// Creates a dispatch queue time type instance.
    public init(_ time: DispatchTime) {
      dispatchTime = time
    }

    public func distance(to other: SchedulerTimeType) -> Stride {
      let start = Int64(clamping: dispatchTime.uptimeNanoseconds)
      let end = Int64(clamping: other.dispatchTime.uptimeNanoseconds)
      return Stride(.nanoseconds(Int(end - start)))
    }

    public func advanced(by n: Stride) -> SchedulerTimeType {
      let nanoseconds = Int64(clamping: dispatchTime.uptimeNanoseconds) + Int64(n.magnitude)
      return SchedulerTimeType(DispatchTime(uptimeNanoseconds: UInt64(Swift.max(1, nanoseconds))))
    }

    public init(from decoder: any Decoder) throws {
      let container = try decoder.singleValueContainer()
      self.init(DispatchTime(uptimeNanoseconds: try container.decode(UInt64.self)))
    }

    public func encode(to encoder: any Encoder) throws {
      var container = encoder.singleValueContainer()
      try container.encode(dispatchTime.uptimeNanoseconds)
    }

    public func hash(into hasher: inout Hasher) {
      hasher.combine(dispatchTime.uptimeNanoseconds)
    }

    public static func == (lhs: SchedulerTimeType, rhs: SchedulerTimeType) -> Bool {
      lhs.dispatchTime == rhs.dispatchTime
    }

    /// A type that represents the distance between two values, in nanoseconds. Literals are
    /// seconds, as in Combine.
    public struct Stride: SchedulerTimeIntervalConvertible, Comparable, SignedNumeric,
      ExpressibleByFloatLiteral, Hashable, Codable, Sendable
    {
      public typealias FloatLiteralType = Double
      public typealias IntegerLiteralType = Int
      public typealias Magnitude = Int

      /// The value of this time interval in nanoseconds.
      public var magnitude: Int

      /// A `DispatchTimeInterval` created with the value of this type in nanoseconds.
      public var timeInterval: DispatchTimeInterval { .nanoseconds(magnitude) }

      /// Creates a stride from `timeInterval`.
      public init(_ timeInterval: DispatchTimeInterval) {
        magnitude = Stride.nanoseconds(of: timeInterval)
      }

      /// Creates a stride of `value` seconds.
      public init(floatLiteral value: Double) {
        magnitude = Int(value * 1_000_000_000)
      }

      /// Creates a stride of `value` seconds.
      public init(integerLiteral value: Int) {
        magnitude =
          value.multipliedReportingOverflow(by: 1_000_000_000).overflow
          ? (value < 0 ? .min : .max) : value * 1_000_000_000
      }

      /// Creates a stride of `source` seconds, if representable.
      public init?<T: BinaryInteger>(exactly source: T) {
        guard let value = Int(exactly: source) else { return nil }
        self.init(integerLiteral: value)
      }

      private init(nanoseconds: Int) { magnitude = nanoseconds }

      private static func nanoseconds(of interval: DispatchTimeInterval) -> Int {
        switch interval {
        case .seconds(let s): s.multipliedReportingOverflow(by: 1_000_000_000).partialValue
        case .milliseconds(let ms): ms.multipliedReportingOverflow(by: 1_000_000).partialValue
        case .microseconds(let us): us.multipliedReportingOverflow(by: 1_000).partialValue
        case .nanoseconds(let ns): ns
        case .never: .max
        @unknown default: .max
        }
      }

      public static func < (lhs: Stride, rhs: Stride) -> Bool { lhs.magnitude < rhs.magnitude }
      public static func * (lhs: Stride, rhs: Stride) -> Stride {
        Stride(nanoseconds: lhs.magnitude * rhs.magnitude)
      }
      public static func + (lhs: Stride, rhs: Stride) -> Stride {
        Stride(nanoseconds: lhs.magnitude + rhs.magnitude)
      }
      public static func - (lhs: Stride, rhs: Stride) -> Stride {
        Stride(nanoseconds: lhs.magnitude - rhs.magnitude)
      }
      public static func -= (lhs: inout Stride, rhs: Stride) { lhs = lhs - rhs }
      public static func *= (lhs: inout Stride, rhs: Stride) { lhs = lhs * rhs }
      public static func += (lhs: inout Stride, rhs: Stride) { lhs = lhs + rhs }

      public static func seconds(_ s: Int) -> Stride { Stride(.seconds(s)) }
      public static func seconds(_ s: Double) -> Stride {
        Stride(nanoseconds: Int(s * 1_000_000_000))
      }
      public static func milliseconds(_ ms: Int) -> Stride { Stride(.milliseconds(ms)) }
      public static func microseconds(_ us: Int) -> Stride { Stride(.microseconds(us)) }
      public static func nanoseconds(_ ns: Int) -> Stride { Stride(.nanoseconds(ns)) }
    }
  }

  /// Options that affect the operation of the dispatch queue scheduler, as in Combine.
  public struct SchedulerOptions {
    /// The dispatch queue quality of service.
    public var qos: DispatchQoS
    /// The dispatch queue work item flags.
    public var flags: DispatchWorkItemFlags
    /// The dispatch group, if any, that should be used for performing actions.
    public var group: DispatchGroup?

    public init(
      qos: DispatchQoS = .unspecified, flags: DispatchWorkItemFlags = [],
      group: DispatchGroup? = nil
    ) {
      self.qos = qos
      self.flags = flags
      self.group = group
    }
  }

  public var minimumTolerance: SchedulerTimeType.Stride { .nanoseconds(0) }

  public var now: SchedulerTimeType { SchedulerTimeType(.now()) }

  /// Runs `action` asynchronously on this queue.
  public func schedule(options: SchedulerOptions?, _ action: @escaping () -> Void) {
    // Safety: the action runs exactly once, on this queue, as Combine's contract says.
    let action = UncheckedSendable(action)
    let options = options ?? SchedulerOptions()
    async(group: options.group, qos: options.qos, flags: options.flags) { action.value() }
  }

  /// Runs `action` on this queue at `date`.
  public func schedule(
    after date: SchedulerTimeType, tolerance: SchedulerTimeType.Stride,
    options: SchedulerOptions?, _ action: @escaping () -> Void
  ) {
    // Safety: the action runs exactly once, on this queue, as Combine's contract says.
    let action = UncheckedSendable(action)
    let options = options ?? SchedulerOptions()
    asyncAfter(deadline: date.dispatchTime, qos: options.qos, flags: options.flags) {
      action.value()
    }
  }

  /// Runs `action` on this queue at `date` and every `interval` after, until cancelled.
  public func schedule(
    after date: SchedulerTimeType, interval: SchedulerTimeType.Stride,
    tolerance: SchedulerTimeType.Stride, options: SchedulerOptions?,
    _ action: @escaping () -> Void
  ) -> any Cancellable {
    // Safety: the timer's handler runs serially on this queue; it is removed by `cancel()`.
    let action = UncheckedSendable(action)
    let timer = DispatchSource.makeTimerSource(queue: self)
    timer.schedule(
      deadline: date.dispatchTime, repeating: interval.timeInterval,
      leeway: tolerance.timeInterval)
    timer.setEventHandler { action.value() }
    timer.resume()
    return AnyCancellable { timer.cancel() }
  }
}
