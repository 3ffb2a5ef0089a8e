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

  /// A publisher that sends the current date every `interval` seconds while connected: a
  /// Foundation `Timer` on `runLoop` in `mode`, started by `connect()` and invalidated when the
  /// connection is cancelled.
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

    private let subject = PassthroughSubject<Date, Never>()

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

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Date, S.Failure == Never {
      subject.receive(subscriber: subscriber)
    }

    /// Starts the timer; cancel the result to stop it.
    public func connect() -> any Cancellable {
      // The block captures nothing (see `TimerConnection.running`).
      let timer = Timer(timeInterval: interval, repeats: true, block: TimerConnection.tick)
      timer.tolerance = tolerance ?? 0
      let connection = TimerConnection(timer: timer, subject: subject)
      runLoop.add(timer, forMode: mode)
      return connection
    }
  }
}

/// A running `Timer.TimerPublisher`: cancelling invalidates the timer (once, from any thread).
private final class TimerConnection: Cancellable, @unchecked Sendable {
  // Safety: the timer is taken out of the lock once; `invalidate()` is thread-safe; `running`
  // is in its lock.

  /// The subject of each running timer, by the timer's identity: a timer's block finds its
  /// subject here instead of capturing it. On Linux, Foundation's block-based `Timer` is never
  /// freed (swift-corelibs-foundation's `Timer.init(fire:interval:repeats:block:)` retains the
  /// timer for its CoreFoundation timer's context, which has no release callback), and neither
  /// is what its block captured: a captured subject, with the subscribers still attached, would
  /// leak at every `connect()`. A block that captures nothing leaves only Foundation's own
  /// objects behind. An entry lives from `connect()` to `cancel()`; the connection holds the
  /// timer meanwhile, so no other timer can take its identity.
  private static let running = Lock<[ObjectIdentifier: PassthroughSubject<Date, Never>]>([:])

  /// A tick of `timer`: the current date to its subject, if it is still running.
  static func tick(_ timer: Timer) {
    running.withLock { $0[ObjectIdentifier(timer)] }?.send(Date())
  }

  private let timer: Lock<Timer?>

  init(timer: Timer, subject: PassthroughSubject<Date, Never>) {
    self.timer = Lock(timer)
    Self.running.withLock { $0[ObjectIdentifier(timer)] = subject }
  }

  func cancel() {
    let timer = self.timer.withLock { timer -> Timer? in
      defer { timer = nil }
      return timer
    }
    guard let timer else { return }
    let subject = Self.running.withLock { $0.removeValue(forKey: ObjectIdentifier(timer)) }
    timer.invalidate()
    withExtendedLifetime(subject) {}  // released after the lock
  }
}
