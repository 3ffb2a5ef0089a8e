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

    /// The signed distance in nanoseconds; `.nanoseconds(.max)` when it does not fit in an
    /// `Int` either way (as Combine does).
    public func distance(to other: SchedulerTimeType) -> Stride {
      let start = dispatchTime.uptimeNanoseconds
      let end = other.dispatchTime.uptimeNanoseconds
      let gap = end >= start ? end - start : start - end
      guard gap <= UInt64(Int.max) else { return .nanoseconds(.max) }
      return .nanoseconds(end >= start ? Int(gap) : -Int(gap))
    }

    /// This time moved by `n`, saturating: `.nanoseconds(.max)` (or anything past the
    /// representable range) is the distant future; nothing goes below the first instant.
    public func advanced(by n: Stride) -> SchedulerTimeType {
      let start = dispatchTime.uptimeNanoseconds
      if n.magnitude == .max { return SchedulerTimeType(.distantFuture) }
      if n.magnitude >= 0 {
        let (end, overflow) = start.addingReportingOverflow(UInt64(n.magnitude))
        if overflow || end > UInt64(Int64.max) { return SchedulerTimeType(.distantFuture) }
        return SchedulerTimeType(DispatchTime(uptimeNanoseconds: end))
      }
      let back = n.magnitude.magnitude
      let end = back >= start ? 1 : Swift.max(1, start - UInt64(back))
      return SchedulerTimeType(DispatchTime(uptimeNanoseconds: end))
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

      /// Creates a stride from `timeInterval`, saturating at `Int`'s bounds; `.never` is `.max`.
      public init(_ timeInterval: DispatchTimeInterval) {
        magnitude = Stride.nanoseconds(of: timeInterval)
      }

      /// Creates a stride of `value` seconds (saturating).
      public init(floatLiteral value: Double) {
        magnitude = Stride.saturating(value * 1_000_000_000)
      }

      /// Creates a stride of `value` seconds (saturating).
      public init(integerLiteral value: Int) {
        magnitude = Stride.saturating(value, times: 1_000_000_000)
      }

      /// Creates a stride of `source` seconds, if representable.
      public init?<T: BinaryInteger>(exactly source: T) {
        guard let value = Int(exactly: source) else { return nil }
        self.init(integerLiteral: value)
      }

      private init(nanoseconds: Int) { magnitude = nanoseconds }

      private enum CodingKeys: String, CodingKey {
        case nanoseconds = "_nanoseconds"
      }

      /// Decodes `{"_nanoseconds": n}`, as Combine encodes a stride.
      public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        magnitude = try container.decode(Int.self, forKey: .nanoseconds)
      }

      /// Encodes `{"_nanoseconds": n}`, as Combine does.
      public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(magnitude, forKey: .nanoseconds)
      }

      private static func nanoseconds(of interval: DispatchTimeInterval) -> Int {
        switch interval {
        case .seconds(let s): saturating(s, times: 1_000_000_000)
        case .milliseconds(let ms): saturating(ms, times: 1_000_000)
        case .microseconds(let us): saturating(us, times: 1_000)
        case .nanoseconds(let ns): ns
        case .never: .max
        @unknown default: .max
        }
      }

      /// `value × factor`, clamped to `Int`'s bounds.
      private static func saturating(_ value: Int, times factor: Int) -> Int {
        let (product, overflow) = value.multipliedReportingOverflow(by: factor)
        guard overflow else { return product }
        return (value < 0) != (factor < 0) ? .min : .max
      }

      /// `value` rounded towards zero, clamped to `Int`'s bounds (NaN is 0).
      private static func saturating(_ value: Double) -> Int {
        if value.isNaN { return 0 }
        if value >= Double(Int.max) { return .max }
        if value <= Double(Int.min) { return .min }
        return Int(value)
      }

      /// `lhs + rhs`, clamped to `Int`'s bounds.
      private static func saturating(_ lhs: Int, plus rhs: Int) -> Int {
        let (sum, overflow) = lhs.addingReportingOverflow(rhs)
        guard overflow else { return sum }
        return rhs < 0 ? .min : .max
      }

      public static func < (lhs: Stride, rhs: Stride) -> Bool { lhs.magnitude < rhs.magnitude }
      /// The product, saturating (Combine's returns 0; see "Differences from Combine").
      public static func * (lhs: Stride, rhs: Stride) -> Stride {
        Stride(nanoseconds: saturating(lhs.magnitude, times: rhs.magnitude))
      }
      public static func + (lhs: Stride, rhs: Stride) -> Stride {
        Stride(nanoseconds: saturating(lhs.magnitude, plus: rhs.magnitude))
      }
      public static func - (lhs: Stride, rhs: Stride) -> Stride {
        let (difference, overflow) = lhs.magnitude.subtractingReportingOverflow(rhs.magnitude)
        return Stride(nanoseconds: overflow ? (rhs.magnitude < 0 ? .max : .min) : difference)
      }
      public static func -= (lhs: inout Stride, rhs: Stride) { lhs = lhs - rhs }
      public static func *= (lhs: inout Stride, rhs: Stride) { lhs = lhs * rhs }
      public static func += (lhs: inout Stride, rhs: Stride) { lhs = lhs + rhs }

      public static func seconds(_ s: Int) -> Stride { Stride(.seconds(s)) }
      public static func seconds(_ s: Double) -> Stride {
        Stride(nanoseconds: saturating(s * 1_000_000_000))
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

    /// Options with a quality of service, work item flags and a group (none by default).
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

extension DispatchQueue: RepeatedActionScheduling {
  /// Converts `action` to a block once: each call submits that block (`dispatch_async` retains a
  /// heap block rather than copying it), where `schedule(options:_:)` converts a new closure each
  /// time.
  @usableFromInline
  package func prepareRepeatedAction(_ action: @escaping () -> Void) -> () -> Void {
    // Safety: each submission runs the action once, on this queue, as `schedule` does; the
    // owner (receive(on:)) makes the runs perform its signals one at a time.
    let action = UncheckedSendable(action)
    let block: @convention(block) @Sendable () -> Void = { action.value() }
    return { self.async(execute: block) }
  }
}
