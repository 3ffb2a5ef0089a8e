public import Foundation

extension Timer {
  /// A connectable publisher of the current date, every `interval` seconds once connected — as
  /// Combine's `Timer.publish(every:tolerance:on:in:options:)`.
  ///
  /// ![Marble diagram of timer, drawn from a run](timer)
  ///
  /// ```swift
  /// let ticks = Timer.publish(every: 1, on: .main, in: .common).autoconnect()
  /// for await date in ticks.values { print(date) }
  /// ```
  public static func publish(
    every interval: TimeInterval, tolerance: TimeInterval? = nil, on runLoop: RunLoop,
    in mode: RunLoop.Mode, options: RunLoop.SchedulerOptions? = nil
  ) -> TimerPublisher {
    TimerPublisher(
      interval: interval, tolerance: tolerance, runLoop: runLoop, mode: mode, options: options)
  }

  /// A publisher that sends the current date every `interval` seconds while connected, on
  /// `runLoop` in `mode`, from `connect()` until the connection is cancelled.
  ///
  /// The ticks are a repeating action on the run loop's one wake-up timer for `mode`
  /// (its `RunLoopWaker`), not a Foundation `Timer` per connection (swift-corelibs-foundation keeps
  /// ~500 bytes of every repeating `Timer` invalidated); as a repeating `Timer`, it skips the
  /// ticks the run loop missed, and treats an `interval` of zero or less as 0.1 ms. `tolerance`
  /// lets the run loop fire a tick late by that much while it is the only action waiting there.
  ///
  /// ![Marble diagram of timer, drawn from a run](timer)
  ///
  /// **Demand**: each subscriber receives a tick only when it has demand; a tick that finds it
  /// without demand is not delivered to it (nothing is buffered), as in Combine. **Ordering**:
  /// ticks in time order, on the run loop's thread. It never completes. **Cancellation**: a
  /// subscriber that cancels is released; cancelling the connection stops the ticks (subscribers
  /// stay attached, and a later `connect()` starts them again).
  public final class TimerPublisher: ConnectablePublisher, @unchecked Sendable {
    // Safety: the configuration is immutable; `subject` is thread-safe.
    public typealias Output = Date
    public typealias Failure = Never

    /// The time between ticks, in seconds.
    public let interval: TimeInterval
    /// How late a tick may fire, in seconds (`nil`: none).
    public let tolerance: TimeInterval?
    /// The run loop the timer is scheduled on.
    public let runLoop: RunLoop
    /// The run loop mode the timer runs in.
    public let mode: RunLoop.Mode
    /// Options for the run loop scheduler (none exist).
    public let options: RunLoop.SchedulerOptions?

    @usableFromInline let subject = PassthroughSubject<Date, Never>()

    /// Creates a timer publisher; nothing ticks until `connect()`.
    public init(
      interval: TimeInterval, tolerance: TimeInterval? = nil, runLoop: RunLoop,
      mode: RunLoop.Mode, options: RunLoop.SchedulerOptions? = nil
    ) {
      self.interval = interval
      self.tolerance = tolerance
      self.runLoop = runLoop
      self.mode = mode
      self.options = options
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Date, S.Failure == Never {
      subject.receive(subscriber: subscriber)
    }

    /// Starts the ticks; cancel the result to stop them.
    public func connect() -> any Cancellable {
      let subject = self.subject
      let interval = Swift.max(self.interval, 0.000_1)  // as Foundation's `Timer`
      let waker = RunLoopWaker.of(runLoop, mode: mode)
      let token = waker.add(
        at: Date(timeIntervalSinceNow: interval), every: interval, tolerance: tolerance ?? 0
      ) { subject.send(Date()) }
      return TimerConnection(waker: waker, token: token)
    }
  }
}

/// A running `Timer.TimerPublisher`: cancelling stops its ticks (once, from any thread).
private final class TimerConnection: Cancellable, @unchecked Sendable {
  // Safety: the waker is taken out of the lock once; `RunLoopWaker.cancel` is thread-safe.
  private let waker: Lock<RunLoopWaker?>
  private let token: Int

  init(waker: RunLoopWaker, token: Int) {
    self.waker = Lock(waker)
    self.token = token
  }

  func cancel() {
    let waker = self.waker.withLock { waker -> RunLoopWaker? in
      defer { waker = nil }
      return waker
    }
    waker?.cancel(token)
  }
}
