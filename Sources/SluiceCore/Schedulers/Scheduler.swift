/// A protocol that defines when and how to execute a closure, as in Combine.
///
/// Actions scheduled for the same instant run in the order they were scheduled, on every
/// scheduler Sluice provides. Action closures are not `Sendable`, exactly as in Combine, so code
/// written for Combine compiles unchanged; each scheduler documents where its actions run.
public protocol Scheduler<SchedulerTimeType> {
  /// Describes an instant in time for this scheduler.
  associatedtype SchedulerTimeType: Strideable
  where SchedulerTimeType.Stride: SchedulerTimeIntervalConvertible

  /// A type that defines options accepted by the scheduler.
  associatedtype SchedulerOptions

  /// This scheduler's definition of the current moment in time.
  var now: SchedulerTimeType { get }

  /// The minimum tolerance allowed by the scheduler.
  var minimumTolerance: SchedulerTimeType.Stride { get }

  /// Performs `action` at the next possible opportunity.
  func schedule(options: SchedulerOptions?, _ action: @escaping () -> Void)

  /// Performs `action` after `date`.
  func schedule(
    after date: SchedulerTimeType, tolerance: SchedulerTimeType.Stride,
    options: SchedulerOptions?, _ action: @escaping () -> Void)

  /// Performs `action` at `date` and then every `interval`, until cancelled.
  func schedule(
    after date: SchedulerTimeType, interval: SchedulerTimeType.Stride,
    tolerance: SchedulerTimeType.Stride, options: SchedulerOptions?,
    _ action: @escaping () -> Void
  ) -> any Cancellable
}

extension Scheduler {
  /// Performs `action` after `date`, within `tolerance`.
  public func schedule(
    after date: SchedulerTimeType, tolerance: SchedulerTimeType.Stride,
    _ action: @escaping () -> Void
  ) {
    schedule(after: date, tolerance: tolerance, options: nil, action)
  }

  /// Performs `action` after `date`, using the scheduler's minimum tolerance.
  public func schedule(after date: SchedulerTimeType, _ action: @escaping () -> Void) {
    schedule(after: date, tolerance: minimumTolerance, action)
  }

  /// Performs `action` at the next possible opportunity, without options.
  public func schedule(_ action: @escaping () -> Void) {
    schedule(options: nil, action)
  }

  /// Performs `action` at `date` and then every `interval`, within `tolerance`.
  public func schedule(
    after date: SchedulerTimeType, interval: SchedulerTimeType.Stride,
    tolerance: SchedulerTimeType.Stride, _ action: @escaping () -> Void
  ) -> any Cancellable {
    schedule(after: date, interval: interval, tolerance: tolerance, options: nil, action)
  }

  /// Performs `action` at `date` and then every `interval`.
  public func schedule(
    after date: SchedulerTimeType, interval: SchedulerTimeType.Stride,
    _ action: @escaping () -> Void
  ) -> any Cancellable {
    schedule(after: date, interval: interval, tolerance: minimumTolerance, action)
  }
}

/// A protocol that provides a scheduler with an expression for relative time, as in Combine.
public protocol SchedulerTimeIntervalConvertible {
  /// A time interval of `s` seconds.
  static func seconds(_ s: Int) -> Self
  /// A time interval of `s` seconds.
  static func seconds(_ s: Double) -> Self
  /// A time interval of `ms` milliseconds.
  static func milliseconds(_ ms: Int) -> Self
  /// A time interval of `us` microseconds.
  static func microseconds(_ us: Int) -> Self
  /// A time interval of `ns` nanoseconds.
  static func nanoseconds(_ ns: Int) -> Self
}
