extension Publishers {
  /// Delivers the upstream's values and completion on a scheduler, as Combine's
  /// `receive(on:options:)`.
  ///
  /// ![Marble diagram: receive(on: scheduler)](receive-on)
  ///
  /// **Demand**: requests pass straight upstream; each value returns `.none` to the upstream, and
  /// the demand the downstream returns when it receives the value on the scheduler is requested
  /// from the upstream then. **Ordering**: every value and the completion are delivered in a
  /// scheduled action, serially and in the upstream's order, even on a scheduler that runs actions
  /// concurrently; the completion comes after every value, and nothing is delivered before the
  /// downstream's `receive(subscription:)` has returned. The subscription itself is handed
  /// downstream at once, on the subscribing thread. **Cancellation**: cancels the upstream,
  /// drops what is still waiting for the scheduler and releases the downstream; nothing is
  /// delivered after `cancel()` returns (at most one value already being delivered completes).
  public struct ReceiveOn<Upstream: Publisher, Context: Scheduler>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher from which this publisher receives elements.
    public let upstream: Upstream
    /// The scheduler the publisher is to use for element delivery.
    public let scheduler: Context
    /// Scheduler options that customize the delivery of elements.
    public let options: Context.SchedulerOptions?

    /// Creates a publisher that delivers `upstream`'s signals on `scheduler`.
    public init(upstream: Upstream, scheduler: Context, options: Context.SchedulerOptions?) {
      self.upstream = upstream
      self.scheduler = scheduler
      self.options = options
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let (scheduler, options) = (self.scheduler, self.options)
      let now = { (action: @escaping () -> Void) in scheduler.schedule(options: options, action) }
      // Without options, a scheduler that prepares repeated actions (DispatchQueue) prepares
      // the subscription's deliver action once instead of wrapping it for every value.
      var prepare: ((@escaping () -> Void) -> () -> Void)?
      if case .none = options, let preparing = scheduler as? any RepeatedActionScheduling {
        prepare = preparing.prepareRepeatedAction
      }
      upstream.receive(
        subscriber: SchedulerHopSubscription<Upstream, S>(
          name: "ReceiveOn", downstream: subscriber, hop: now, resume: now,
          runsActionsAtOnce: Context.self == ImmediateScheduler.self, prepare: prepare))
    }
  }
}

extension Publisher {
  /// Delivers this publisher's values and completion on `scheduler`.
  ///
  /// ![Marble diagram: receive(on: scheduler)](receive-on)
  ///
  /// ```swift
  /// search.results.receive(on: DispatchQueue.main).sink { model.results = $0 }
  /// ```
  public func receive<S: Scheduler>(on scheduler: S, options: S.SchedulerOptions? = nil)
    -> Publishers.ReceiveOn<Self, S>
  {
    Publishers.ReceiveOn(upstream: self, scheduler: scheduler, options: options)
  }
}
