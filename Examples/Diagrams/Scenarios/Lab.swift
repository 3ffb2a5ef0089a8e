public import Dispatch
import Foundation
public import Sluice
public import SluiceTesting
import Synchronization

/// The error the diagrams' failing inputs fail with.
public struct Boom: Error, Equatable, CustomStringConvertible {
  public init() {}
  public var description: String { "boom" }
}

/// A run to draw: inputs played by marble publishers on a ``TestScheduler`` (one tick = one
/// second), subscribers that record what they see and when, and the clock moved one tick at a
/// time. Tasks started by async operators run on ``StepExecutor`` (when the generator installed
/// it) until nothing is left to run before the clock moves on, so async runs are as
/// deterministic as the rest.
public final class Lab: @unchecked Sendable {
  // Safety: a lab is driven from one thread (the generator's); the observers' state is in
  // locks because async operators deliver from tasks (run by the step executor on that thread).
  public let scheduler = DispatchQueue.test
  let origin: DispatchQueue.SchedulerTimeType
  private var inputRows: [() -> MarbleDiagram.Row] = []
  private var observers: [Observer] = []
  private var manualRows: [Manual] = []

  public init() { origin = scheduler.now }

  /// The instant of `tick`.
  public func instant(_ tick: Int) -> DispatchQueue.SchedulerTimeType {
    origin.advanced(by: .seconds(tick))
  }

  /// The tick the clock is in.
  public var tick: Int { origin.distance(to: scheduler.now).magnitude / 1_000_000_000 }

  /// Runs `action` at `tick`.
  public func at(_ tick: Int, _ action: @escaping () -> Void) {
    scheduler.schedule(after: instant(tick), action)
  }

  /// Suspends the calling task until `ticks` ticks have passed on the lab's clock.
  public func sleep(_ ticks: Int) async {
    let wake = instant(tick + ticks)
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      scheduler.schedule(after: wake) { continuation.resume() }
    }
  }

  // MARK: Inputs

  /// A cold input whose letters are `String` values and digits `Int`… drawn by `values`.
  public func cold<Value>(
    _ diagram: String, _ label: String = "input", values: [Character: Value]
  ) throws -> MarblePublisher<Value, Never> {
    let publisher = try scheduler.coldPublisher(diagram, values: values)
    let made = tick
    inputRows.append { .init(label, publisher: publisher, describe: Lab.text).shifted(by: made) }
    return publisher
  }

  /// A cold input that fails with ``Boom`` at `#`.
  public func failing<Value>(
    _ diagram: String, _ label: String = "input", values: [Character: Value]
  ) throws -> MarblePublisher<Value, Boom> {
    let publisher = try scheduler.coldPublisher(diagram, values: values, failure: Boom())
    let made = tick
    inputRows.append { .init(label, publisher: publisher, describe: Lab.text).shifted(by: made) }
    return publisher
  }

  /// A hot input: the diagram plays once from tick 0, whoever listens.
  public func hot<Value>(
    _ diagram: String, _ label: String = "input", values: [Character: Value]
  ) throws -> MarblePublisher<Value, Never> {
    let publisher = try scheduler.hotPublisher(diagram, values: values)
    let made = tick
    inputRows.append {
      .init(label, publisher: publisher, subscription: 0, describe: Lab.text).shifted(by: made)
    }
    return publisher
  }

  /// A cold input of letters (each value the letter as a `String`).
  public func letters(_ diagram: String, _ label: String = "input") throws -> MarblePublisher<
    String, Never
  > {
    try cold(diagram, label, values: Self.letters)
  }

  /// A cold input of digits (each value the digit as an `Int`).
  public func numbers(_ diagram: String, _ label: String = "input") throws -> MarblePublisher<
    Int, Never
  > {
    try cold(diagram, label, values: Self.digits)
  }

  static let letters = Dictionary(
    uniqueKeysWithValues: "abcdefghijklmnopqrstuvwxyz".map { ($0, String($0)) })
  static let digits = Dictionary(uniqueKeysWithValues: (0...9).map { (Character("\($0)"), $0) })

  /// A row of events drawn by hand above the box (for inputs that are not marble publishers,
  /// such as a subject the run sends to): `record` adds an event at the current tick.
  public func inputRow(_ label: String) -> Manual {
    let row = Manual(label: label, lab: self)
    inputRows.append { row.row }
    return row
  }

  /// A row of events drawn by hand below the box (what a subscriber that is not a publisher
  /// saw: an `async` loop, an awaited value, a sink's closure).
  public func outputRow(_ label: String) -> Manual {
    let row = Manual(label: label, lab: self)
    manualRows.append(row)
    return row
  }

  /// Events recorded by hand, each at the tick the clock is in.
  public final class Manual: @unchecked Sendable {
    // Safety: the events are in a lock.
    let label: String
    unowned let lab: Lab
    let events = Mutex<[MarbleDiagram.Event]>([])

    init(label: String, lab: Lab) {
      self.label = label
      self.lab = lab
    }

    /// Adds `mark` at the current tick.
    public func record(_ mark: MarbleDiagram.Mark) {
      let tick = lab.tick
      events.withLock { $0.append(MarbleDiagram.Event(tick: tick, mark: mark)) }
    }

    /// Adds `mark` at `tick` (for runs on real time, drawn in order).
    public func record(_ mark: MarbleDiagram.Mark, at tick: Int) {
      events.withLock { $0.append(MarbleDiagram.Event(tick: tick, mark: mark)) }
    }

    /// Adds a value, described.
    public func value(_ value: Any) { record(.value(Lab.text(value))) }

    var row: MarbleDiagram.Row { MarbleDiagram.Row(label, events: events.withLock { $0 }) }
    var isDone: Bool { events.withLock { $0.contains { $0.mark.isTerminal } } }
  }

  // MARK: Subscribers

  /// Subscribes a recording subscriber to `publisher` at `tick`, asking for `demand`; then
  /// each of `requests` at its tick; cancelling at `cancelAt`. Its row is drawn below the box.
  public func observe<P: Publisher>(
    _ publisher: P, _ label: String = "output", at tick: Int = 0,
    demand: Subscribers.Demand = .unlimited,
    requests: [(tick: Int, demand: Subscribers.Demand)] = [], cancelAt: Int? = nil,
    describe: @escaping (P.Output) -> String = Lab.text
  ) {
    let observer = TickObserver<P.Output, P.Failure>(
      label: label, lab: self, demand: demand, describe: describe)
    observers.append(observer)
    if tick == 0 {
      publisher.subscribe(observer)
    } else {
      at(tick) { publisher.subscribe(observer) }
    }
    for request in requests { at(request.tick) { observer.request(request.demand) } }
    if let cancelAt { at(cancelAt) { observer.cancel() } }
  }

  /// Keeps `cancellable` (a connection, a sink) alive until the run ends.
  public func keep(_ cancellable: any Cancellable) {
    keptLock.withLock { kept.append(cancellable) }
  }
  private let keptLock = NSLock()
  private var kept: [any Cancellable] = []

  /// A value as a marble's label: strings without quotes, arrays and tuples with their
  /// elements so drawn, optionals unwrapped or `nil`.
  public static func text(_ value: Any) -> String {
    if let string = value as? String { return string }
    if let data = value as? Data { return "\"" + String(decoding: data, as: UTF8.self) + "\"" }
    let mirror = Mirror(reflecting: value)
    switch mirror.displayStyle {
    case .collection:
      return "[" + mirror.children.map { text($0.value) }.joined(separator: ",") + "]"
    case .tuple:
      return "(" + mirror.children.map { text($0.value) }.joined(separator: ",") + ")"
    case .optional:
      return mirror.children.first.map { text($0.value) } ?? "nil"
    default:
      return String(describing: value)
    }
  }

  // MARK: Running

  /// Moves the clock one tick at a time, running tasks until they wait between ticks: for
  /// `ticks` ticks, or until every subscriber has finished and nothing is scheduled.
  public func run(ticks: Int? = nil) {
    StepExecutor.runUntilIdle()
    scheduler.advance(to: instant(0))
    StepExecutor.runUntilIdle()
    var current = 0
    while true {
      if let ticks {
        if current >= ticks { break }
      } else if observers.allSatisfy(\.isDone), manualRows.allSatisfy(\.isDone),
        scheduler.pendingActionCount == 0
      {
        break
      }
      precondition(current < 200, "Lab.run: still running after 200 ticks; pass ticks:")
      current += 1
      scheduler.advance(to: instant(current))
      StepExecutor.runUntilIdle()
    }
  }

  /// Ends what the run left open, once it is drawn: every observer's subscription (not
  /// recorded: the picture is taken), the connections and sinks kept, then the tasks those ends
  /// wake. A subscription and its subscriber keep each other until one of them ends it, so a
  /// lab that skipped this would leave its pipelines (subjects, connections, notification
  /// observers) behind for good.
  public func end() {
    for observer in observers { observer.end() }
    let kept = keptLock.withLock {
      defer { self.kept = [] }
      return self.kept
    }
    for cancellable in kept { cancellable.cancel() }
    StepExecutor.runUntilIdle()
  }

  /// The drawing of the run.
  public func diagram(_ title: String, caption: String = "", endTick: Int? = nil)
    -> MarbleDiagram
  {
    MarbleDiagram(
      title, inputs: inputRows.map { $0() },
      outputs: observers.map(\.row) + manualRows.map(\.row), caption: caption,
      endTick: endTick)
  }
}

extension MarbleDiagram.Mark {
  var isTerminal: Bool {
    switch self {
    case .finished, .failed, .cancelled: true
    default: false
    }
  }
}
