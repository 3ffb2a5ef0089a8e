public import SluiceCore

/// A picture of a recorded run: the inputs above, the operator in a box, the outputs below, each
/// a time line with its values as labelled marbles, `|` for a completion, `×` for a failure, and
/// the points where a subscriber subscribed (`▲`), requested (`↑n`) and cancelled (`⊘`).
///
/// Build the rows from what a run recorded — a ``MarblePublisher`` input (what it delivered to
/// each subscriber, with the subscription, requests and cancel it logged), a ``MarbleRecording``
/// output, a ``Marbles`` diagram, or events of your own — and draw it with ``svg(theme:)``:
///
/// ```swift
/// let scheduler = DispatchQueue.test
/// let input = try scheduler.coldPublisher("-a--b-c---|", values: ["a": 1, "b": 2, "c": 3])
/// let output = scheduler.recordMarbles(input.debounce(for: .seconds(2), scheduler: scheduler))
/// let diagram = MarbleDiagram(
///   "debounce(for: .seconds(2))", inputs: [.init("input", publisher: input)],
///   outputs: [.init("output", recording: output)])
/// try diagram.svg().write(toFile: "debounce.svg", atomically: true, encoding: .utf8)
/// ```
///
/// The drawing is deterministic: the same diagram gives the same bytes on every machine (integer
/// coordinates, no dates, no randomness), so committed pictures can be checked against the code.
public struct MarbleDiagram: Sendable, Hashable {
  /// What happens on a time line at one tick.
  public enum Mark: Sendable, Hashable {
    /// A value, drawn as a marble labelled with the text.
    case value(String)
    /// The publisher finished: `|`.
    case finished
    /// The publisher failed: `×`, with the error's text if given.
    case failed(String?)
    /// A subscriber subscribed: `▲` under the line, which starts there.
    case subscribed
    /// A subscriber requested more: `↑n` above the line (`↑∞` for unlimited).
    case requested(Subscribers.Demand)
    /// A subscriber cancelled: `⊘`, and the line ends.
    case cancelled

    /// Whether the line ends at this mark.
    var endsLine: Bool {
      switch self {
      case .finished, .failed, .cancelled: true
      default: false
      }
    }
  }

  /// A mark at a tick.
  public struct Event: Sendable, Hashable {
    /// The tick, counted from the run's start (tick 0).
    public let tick: Int
    /// What happened.
    public let mark: Mark

    /// `mark` at `tick`.
    public init(tick: Int, mark: Mark) {
      self.tick = tick
      self.mark = mark
    }
  }

  /// One time line: a label and its events in the order they happened.
  public struct Row: Sendable, Hashable {
    /// The text at the line's left.
    public var label: String
    /// The events, in the order they happened (events at one tick are drawn side by side).
    public var events: [Event]
    /// The tick the line starts at: the first subscription, or tick 0.
    public var start: Int

    /// A row of `events`; the line starts at the first `subscribed` mark, or at `start`.
    public init(_ label: String, events: [Event], start: Int? = nil) {
      self.label = label
      self.events = events
      self.start =
        start ?? events.first { $0.mark == .subscribed }?.tick
        ?? min(0, events.map(\.tick).min() ?? 0)
    }

    /// A row drawing `marbles`, each value named by `names[character]` or else the character;
    /// `^` becomes a subscription, `!` a cancel.
    public init(_ label: String, marbles: Marbles, names: [Character: String] = [:]) {
      let events = marbles.events.map { tick, event -> Event in
        let mark: Mark =
          switch event {
          case .value(let name): .value(names[name] ?? String(name))
          case .finished: .finished
          case .failed: .failed(nil)
          case .subscribed: .subscribed
          case .cancelled: .cancelled
          }
        return Event(tick: tick, mark: mark)
      }
      self.init(label, events: events, start: marbles.firstTick)
    }

    /// The same row `ticks` later (earlier when negative): for a publisher made during the
    /// run, whose ticks count from its creation.
    public func shifted(by ticks: Int) -> Row {
      Row(
        label, events: events.map { Event(tick: $0.tick + ticks, mark: $0.mark) },
        start: start + ticks)
    }

    /// What `publisher` did with its subscribers, in the order it happened: each subscription,
    /// request (and demand returned from `receive(_:)`), value and completion at the tick it
    /// reached the subscriber (after any wait for demand), and cancel; only the
    /// `subscription`-th subscription's if given.
    public init<Output, Failure>(
      _ label: String, publisher: MarblePublisher<Output, Failure>, subscription: Int? = nil,
      describe: (Output) -> String = { String(describing: $0) }
    ) {
      let events = publisher.timeline.withLock { $0 }.filter {
        subscription == nil || subscription == $0.subscription
      }.map { event -> Event in
        let mark: Mark =
          switch event.kind {
          case .subscribed: .subscribed
          case .requested(let demand): .requested(demand)
          case .delivered(.value(let value)): .value(describe(value))
          case .delivered(.completion(.finished)): .finished
          case .delivered(.completion(.failure(let error))): .failed(String(describing: error))
          case .cancelled: .cancelled
          }
        return Event(tick: event.tick, mark: mark)
      }
      self.init(label, events: events)
    }

    /// What a recorder saw: its subscription at tick 0, its request, the values and the
    /// completion at the ticks they arrived, and its cancel.
    public init<Output, Failure>(
      _ label: String, recording: MarbleRecording<Output, Failure>,
      describe: (Output) -> String = { String(describing: $0) }
    ) {
      var events = [Event(tick: 0, mark: .subscribed)]
      if recording.demand > 0 { events.append(Event(tick: 0, mark: .requested(recording.demand))) }
      for (tick, signal) in recording.signals {
        let mark: Mark =
          switch signal {
          case .value(let value): .value(describe(value))
          case .finished: .finished
          case .failure(let error): .failed(String(describing: error))
          }
        events.append(Event(tick: tick, mark: mark))
      }
      if let cancelled = recording.cancelledAt {
        events.append(Event(tick: cancelled, mark: .cancelled))
      }
      self.init(label, events: events, start: 0)
    }
  }

  /// The colours of a drawing.
  public enum Theme: Sendable, Hashable {
    /// Light colours, switched to dark ones by `@media (prefers-color-scheme: dark)`.
    case automatic
    /// Dark lines and text on a light background.
    case light
    /// Light lines and text on a dark background.
    case dark
  }

  /// The text in the operator's box: the call being drawn.
  public var title: String
  /// The rows above the box.
  public var inputs: [Row]
  /// The rows below the box.
  public var outputs: [Row]
  /// Text under the drawing (empty for none).
  public var caption: String
  /// The tick after the last one drawn; by default one past the last event.
  public var endTick: Int?

  /// A diagram of `title` with its rows.
  public init(
    _ title: String, inputs: [Row], outputs: [Row], caption: String = "", endTick: Int? = nil
  ) {
    self.title = title
    self.inputs = inputs
    self.outputs = outputs
    self.caption = caption
    self.endTick = endTick
  }

  /// The diagram as text, one line per row, for a terminal, a test log or the SVG's
  /// description: `label: a@1 b@3 |@7`.
  public var text: String {
    let rows = inputs + outputs
    return
      ([title]
      + rows.map { row in
        let events = row.events.map { event -> String in
          let symbol =
            switch event.mark {
            case .value(let text): text
            case .finished: "|"
            case .failed: "×"
            case .subscribed: "▲"
            case .requested(let demand): "↑\(demand.drawn)"
            case .cancelled: "⊘"
            }
          return "\(symbol)@\(event.tick)"
        }
        return "\(row.label): " + events.joined(separator: " ")
      }).joined(separator: "\n")
  }
}

extension Subscribers.Demand {
  /// `∞` for unlimited, else the number.
  var drawn: String { max.map { String($0) } ?? "∞" }
}
