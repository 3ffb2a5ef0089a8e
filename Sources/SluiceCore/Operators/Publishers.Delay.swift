extension Publishers {
  /// Delivers each value and the completion after a fixed interval on a scheduler, as Combine's
  /// `delay(for:tolerance:scheduler:options:)`.
  ///
  /// ![Marble diagram: delay(for: .seconds(2), scheduler: scheduler)](delay)
  ///
  /// **Demand**: requests pass straight upstream; each value returns `.none`, and the demand
  /// the downstream returns when it receives the delayed value is requested then.
  /// **Ordering**: values and the completion keep the upstream's order and spacing, one at a
  /// time even on a scheduler that runs actions concurrently. **Cancellation**: cancels the
  /// upstream, drops what is still delayed and releases the downstream.
  public struct Delay<Upstream: Publisher, Context: Scheduler>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher that this publisher receives elements from.
    public let upstream: Upstream
    /// The amount of time to delay.
    public let interval: Context.SchedulerTimeType.Stride
    /// The allowed tolerance in firing delayed events.
    public let tolerance: Context.SchedulerTimeType.Stride
    /// The scheduler to deliver the delayed events.
    public let scheduler: Context
    /// Options relevant to the scheduler's behavior.
    public let options: Context.SchedulerOptions?

    /// Creates a publisher that delivers `upstream`'s signals `interval` later.
    public init(
      upstream: Upstream, interval: Context.SchedulerTimeType.Stride,
      tolerance: Context.SchedulerTimeType.Stride, scheduler: Context,
      options: Context.SchedulerOptions? = nil
    ) {
      self.upstream = upstream
      self.interval = interval
      self.tolerance = tolerance
      self.scheduler = scheduler
      self.options = options
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let (scheduler, options, interval, tolerance) = (
        self.scheduler, self.options, self.interval, self.tolerance
      )
      upstream.receive(
        subscriber: SchedulerHopSubscription<Upstream, S>(
          name: "Delay", downstream: subscriber,
          hop: { action in
            scheduler.schedule(
              after: scheduler.now.advanced(by: interval), tolerance: tolerance,
              options: options, action)
          },
          resume: { scheduler.schedule(options: options, $0) },
          runsActionsAtOnce: Context.self == ImmediateScheduler.self))
    }
  }
}

extension Publisher {
  /// Delivers each value and the completion `interval` later, on `scheduler`.
  ///
  /// ![Marble diagram: delay(for: .seconds(2), scheduler: scheduler)](delay)
  ///
  /// ```swift
  /// toasts.delay(for: .seconds(2), scheduler: DispatchQueue.main)
  /// ```
  public func delay<S: Scheduler>(
    for interval: S.SchedulerTimeType.Stride, tolerance: S.SchedulerTimeType.Stride? = nil,
    scheduler: S, options: S.SchedulerOptions? = nil
  ) -> Publishers.Delay<Self, S> {
    Publishers.Delay(
      upstream: self, interval: interval, tolerance: tolerance ?? scheduler.minimumTolerance,
      scheduler: scheduler, options: options)
  }
}
