public import SluiceCore

extension TestScheduler {
  /// Subscribes to `publisher` now (tick 0) and moves the clock one `tick` at a time, recording
  /// what arrives at each tick.
  ///
  /// - Parameters:
  ///   - publisher: the publisher to record.
  ///   - tick: the time one character of the diagram stands for (one second by default).
  ///   - ticks: how many ticks to run; by default until the publisher completes or nothing is
  ///     left to run (traps after 100,000 ticks: a repeating timer never runs out, so pass
  ///     `ticks` for one).
  ///   - demand: what the recorder requests when it subscribes (`.unlimited` by default); it
  ///     asks for nothing more.
  ///   - cancelAtTick: cancels the subscription after that tick's signals.
  ///
  /// When the recording stops before the publisher completed, the recorder cancels its
  /// subscription (at the last tick recorded, which a ``MarblePublisher``'s log shows), so that
  /// nothing of the pipeline outlives the recording: a subscription and its subscriber keep
  /// each other until one of them ends it.
  public func recordMarbles<P: Publisher>(
    _ publisher: P, tick: SchedulerTimeType.Stride = .seconds(1), ticks: Int? = nil,
    demand: Subscribers.Demand = .unlimited, cancelAtTick: Int? = nil
  ) -> MarbleRecording<P.Output, P.Failure> {
    let clock = marbleClock(tick: tick)
    let recorder = MarbleRecorder<P.Output, P.Failure>(clock: clock, demand: demand)
    publisher.subscribe(recorder)
    var current = 0
    var cancelledAt: Int?
    clock.advance(0)
    if cancelAtTick == 0, recorder.cancel() { cancelledAt = 0 }
    while true {
      if let ticks {
        if current >= ticks { break }
      } else if recorder.completed || !clock.hasPendingActions() {
        break
      }
      precondition(
        current < 100_000,
        "recordMarbles: still running after 100,000 ticks (a repeating timer?); pass `ticks:`")
      current += 1
      clock.advance(current)
      if cancelAtTick == current, recorder.cancel() { cancelledAt = current }
    }
    recorder.cancel()  // the recording is over (a no-op after a completion or an earlier cancel)
    let signals = recorder.state.withLock { $0.signals }
    return MarbleRecording(
      signals: signals, endTick: max(current + 1, (signals.last?.tick ?? -1) + 1), demand: demand,
      cancelledAt: cancelledAt)
  }

  /// Records `publisher` as ``recordMarbles(_:tick:ticks:demand:cancelAtTick:)`` does and
  /// compares it with the `expected` diagram, whose values are named in `values`.
  ///
  /// Values are compared with `==`, a failure (`#`) matches any error, and `^` in `expected`
  /// marks tick 0 (characters before it are ignored). Use it with any test framework:
  /// ```swift
  /// let check = try scheduler.checkMarbles(
  ///   input.debounce(for: .seconds(2), scheduler: scheduler), expected: "----b--c|",
  ///   values: values)
  /// #expect(check.matches, "\(check)")
  /// ```
  ///
  /// - Throws: ``MarbleSyntaxError`` if `expected` is malformed or names a value `values` lacks.
  public func checkMarbles<P: Publisher>(
    _ publisher: P, expected: String, values: [Character: P.Output],
    tick: SchedulerTimeType.Stride = .seconds(1), ticks: Int? = nil,
    demand: Subscribers.Demand = .unlimited, cancelAtTick: Int? = nil
  ) throws(MarbleSyntaxError) -> MarbleCheck where P.Output: Equatable {
    let diagram = try Marbles(expected)
    let wanted = try diagram.events.filter { $0.tick >= 0 && $0.event != .subscribed }.map {
      (tick, event) throws(MarbleSyntaxError) -> (Int, Marbles.Event, P.Output?) in
      guard case .value(let name) = event else { return (tick, event, nil) }
      guard let value = values[name] else {
        throw MarbleSyntaxError(
          diagram: expected, position: expected.position(of: name),
          reason: "no value for '\(name)' in `values`")
      }
      return (tick, event, value)
    }
    let recording = recordMarbles(
      publisher, tick: tick, ticks: ticks, demand: demand, cancelAtTick: cancelAtTick)
    let actual = recording.marbles(values: values)
    let names = values.sorted { $0.key < $1.key }
    let unnamed = recording.values.filter { value in !names.contains { $0.value == value } }
    var firstDifference: Int?
    for index in 0..<max(wanted.count, recording.signals.count) {
      guard index < wanted.count, index < recording.signals.count else {
        firstDifference = min(
          index < wanted.count ? wanted[index].0 : Int.max,
          index < recording.signals.count ? recording.signals[index].tick : Int.max)
        break
      }
      let (tick, event, value) = wanted[index]
      let (actualTick, signal) = recording.signals[index]
      let same =
        switch (event, signal) {
        case (.value, .value(let got)): tick == actualTick && value == got
        case (.finished, .finished), (.failed, .failure): tick == actualTick
        default: false
        }
      if !same {
        firstDifference = min(tick, actualTick)
        break
      }
    }
    return MarbleCheck(
      matches: firstDifference == nil, expected: diagram, actual: actual,
      firstDifference: firstDifference, unnamedValues: unnamed.map { String(describing: $0) })
  }

  /// A cold publisher playing `diagram` (see ``Marbles``) on this scheduler for each subscriber
  /// from its subscription on, the values named in `values`, `#` failing with `failure`, one
  /// character per `tick`.
  ///
  /// - Throws: ``MarbleSyntaxError`` if `diagram` is malformed, names a value `values` lacks,
  ///   or holds `^` or `!` (a cold publisher starts at each subscription).
  public func coldPublisher<Output, Failure: Error>(
    _ diagram: String, values: [Character: Output], failure: Failure,
    tick: SchedulerTimeType.Stride = .seconds(1)
  ) throws(MarbleSyntaxError) -> MarblePublisher<Output, Failure> {
    try marblePublisher(diagram, values: values, failure: failure, tick: tick, hot: false)
  }

  /// ``coldPublisher(_:values:failure:tick:)`` for a publisher that cannot fail (`#` is an
  /// error in `diagram`).
  public func coldPublisher<Output>(
    _ diagram: String, values: [Character: Output], tick: SchedulerTimeType.Stride = .seconds(1)
  ) throws(MarbleSyntaxError) -> MarblePublisher<Output, Never> {
    try marblePublisher(diagram, values: values, failure: nil, tick: tick, hot: false)
  }

  /// A hot publisher playing `diagram` (see ``Marbles``) once on this scheduler, tick 0 (`^`,
  /// or the first character) being now; events before `^` are in the past and nobody sees them.
  /// Values are named in `values`, `#` fails with `failure`, one character per `tick`.
  ///
  /// - Throws: ``MarbleSyntaxError`` if `diagram` is malformed, names a value `values` lacks,
  ///   or holds `!`.
  public func hotPublisher<Output, Failure: Error>(
    _ diagram: String, values: [Character: Output], failure: Failure,
    tick: SchedulerTimeType.Stride = .seconds(1)
  ) throws(MarbleSyntaxError) -> MarblePublisher<Output, Failure> {
    try marblePublisher(diagram, values: values, failure: failure, tick: tick, hot: true)
  }

  /// ``hotPublisher(_:values:failure:tick:)`` for a publisher that cannot fail (`#` is an
  /// error in `diagram`).
  public func hotPublisher<Output>(
    _ diagram: String, values: [Character: Output], tick: SchedulerTimeType.Stride = .seconds(1)
  ) throws(MarbleSyntaxError) -> MarblePublisher<Output, Never> {
    try marblePublisher(diagram, values: values, failure: nil, tick: tick, hot: true)
  }

  private func marblePublisher<Output, Failure: Error>(
    _ diagram: String, values: [Character: Output], failure: Failure?,
    tick: SchedulerTimeType.Stride, hot: Bool
  ) throws(MarbleSyntaxError) -> MarblePublisher<Output, Failure> {
    let marbles = try Marbles(diagram)
    func error(_ symbol: Character, _ reason: String) -> MarbleSyntaxError {
      MarbleSyntaxError(diagram: diagram, position: diagram.position(of: symbol), reason: reason)
    }
    var signals: [(tick: Int, signal: MarbleSignal<Output, Failure>)] = []
    for (tick, event) in marbles.events {
      switch event {
      case .value(let name):
        guard let value = values[name] else {
          throw error(name, "no value for '\(name)' in `values`")
        }
        signals.append((tick, .value(value)))
      case .finished:
        signals.append((tick, .completion(.finished)))
      case .failed:
        guard let failure else { throw error("#", "'#' in a publisher that cannot fail") }
        signals.append((tick, .completion(.failure(failure))))
      case .subscribed:
        if !hot {
          throw error("^", "'^' in a cold publisher (it starts at each subscription)")
        }
      case .cancelled:
        throw error("!", "'!' in a publisher's diagram (a subscriber cancels, not a publisher)")
      }
    }
    return MarblePublisher(
      marbles: marbles, signals: signals, clock: marbleClock(tick: tick), hot: hot)
  }
}

extension String {
  /// The position (from 1) of the first `character`, or 1.
  fileprivate func position(of character: Character) -> Int {
    guard let index = firstIndex(of: character) else { return 1 }
    return distance(from: startIndex, to: index) + 1
  }
}
