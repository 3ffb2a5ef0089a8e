/// A marble diagram: what a publisher does over time, one character per tick.
///
/// | characters | meaning |
/// |---|---|
/// | `-` | a tick passes with nothing happening |
/// | `a`, `1`, … (any other character) | a value, named by the character |
/// | `\|` | the publisher finishes |
/// | `#` | the publisher fails |
/// | `^` | the subscription point of a hot publisher: tick 0 (characters before it are earlier) |
/// | `!` | the subscriber cancels (in a subscription timeline) |
/// | `(ab)` | the events inside happen at the same tick, in that order; the group is one tick |
/// | space | ignored, so diagrams can be lined up under each other |
///
/// Every other character takes one tick, so `"-a-b--c|"` has `a` at tick 1, `b` at tick 3, `c`
/// at tick 6 and the completion at tick 7. Without `^`, the first character is tick 0. Nothing
/// may follow a completion or a failure except `-` and spaces.
///
/// A value must stay one character wherever the diagram is drawn again (``description``,
/// ``aligned(_:)``): a character that would join its neighbour there — a combining mark with
/// nothing before it, a prefix mark, or two values that run together once the spaces between
/// them are gone (`"\r \n"`, a lone Hangul jamo, two regional indicators) — is a syntax error.
///
/// ```swift
/// let diagram = try Marbles("-a-(bc)|")
/// diagram.frames   // [tick 1: a], [tick 3: b, c], [tick 4: |]
/// ```
public struct Marbles: Sendable, Hashable, CustomStringConvertible {
  /// One event in a diagram.
  public enum Event: Sendable, Hashable {
    /// A value, named by a character.
    case value(Character)
    /// `|`.
    case finished
    /// `#`.
    case failed
    /// `^`.
    case subscribed
    /// `!`.
    case cancelled

    /// The character that draws the event.
    public var symbol: Character {
      switch self {
      case .value(let name): name
      case .finished: "|"
      case .failed: "#"
      case .subscribed: "^"
      case .cancelled: "!"
      }
    }

    /// Whether the event ends the publisher (`|` or `#`).
    public var isCompletion: Bool { self == .finished || self == .failed }
  }

  /// The events at one tick, in order.
  public struct Frame: Sendable, Hashable {
    /// The tick, counted from the subscription point (`^`) or else from the first character.
    public let tick: Int
    /// The events at that tick, in the order they happen (never empty).
    public let events: [Event]

    /// A frame of `events` at `tick`.
    public init(tick: Int, events: [Event]) {
      precondition(!events.isEmpty, "Marbles.Frame: a frame has at least one event")
      self.tick = tick
      self.events = events
    }
  }

  /// The frames, in tick order, one per tick that has events.
  public let frames: [Frame]
  /// The tick of the first character (negative when the diagram has characters before `^`).
  public let firstTick: Int
  /// The tick after the last character: the diagram covers `firstTick..<endTick`.
  public let endTick: Int

  /// A diagram made of `frames`, covering `firstTick..<endTick` (by default up to the tick
  /// after the last frame).
  public init(frames: [Frame], firstTick: Int = 0, endTick: Int? = nil) {
    let sorted = frames.sorted { $0.tick < $1.tick }
    precondition(
      zip(sorted, sorted.dropFirst()).allSatisfy { $0.tick < $1.tick },
      "Marbles: two frames at the same tick; put their events in one frame")
    self.frames = sorted
    self.firstTick = min(firstTick, sorted.first?.tick ?? firstTick)
    self.endTick = max(endTick ?? firstTick, (sorted.last?.tick ?? firstTick - 1) + 1)
  }

  /// Parses `diagram` (see the type's table).
  ///
  /// - Throws: ``MarbleSyntaxError`` naming the position of the first mistake: a group never
  ///   closed or closed twice, an empty or nested group, `-` or `^` inside a group, a second
  ///   `^`, an event after the completion, or a value that would not stay one character when
  ///   drawn again.
  public init(_ diagram: String) throws(MarbleSyntaxError) {
    var parser = MarbleParser(diagram: diagram)
    for (offset, character) in diagram.enumerated() {
      try parser.read(character, at: offset + 1)
    }
    let parsed = try parser.finish()
    self.init(frames: parsed.frames, firstTick: parsed.firstTick, endTick: parsed.endTick)
  }

  /// The same diagram `ticks` later (earlier when negative): for drawing an inner publisher
  /// from the tick it was subscribed at.
  public func shifted(by ticks: Int) -> Marbles {
    Marbles(
      frames: frames.map { Frame(tick: $0.tick + ticks, events: $0.events) },
      firstTick: firstTick + ticks, endTick: endTick + ticks)
  }

  /// The events of the diagram with their ticks, in order.
  public var events: [(tick: Int, event: Event)] {
    frames.flatMap { frame in frame.events.map { (frame.tick, $0) } }
  }

  /// The diagram drawn again: `-` for an empty tick, a group for a tick with several events.
  public var description: String { drawn() }

  /// Draws `rows` under each other, labels first, each tick as wide as its widest drawing in
  /// any row (spaces mean nothing in a diagram, so each line still parses to its diagram).
  ///
  /// ```swift
  /// Marbles.aligned([("input", try Marbles("-a-(bc)|")), ("output", try Marbles("-x-y-z|"))])
  /// // ["input   -a-(bc)|", "output  -x-y   -z|"]
  /// ```
  public static func aligned(_ rows: [(label: String, marbles: Marbles)]) -> [String] {
    let layout = Layout(rows.map(\.marbles))
    let labelWidth = rows.map(\.label.count).max() ?? 0
    return rows.map { row in
      let label = row.label + String(repeating: " ", count: labelWidth - row.label.count + 2)
      return label + layout.line(row.marbles)
    }
  }

  /// Column widths shared by several diagrams drawn under each other.
  struct Layout {
    let start: Int
    let widths: [Int: Int]

    init(_ diagrams: [Marbles]) {
      start = diagrams.map(\.firstTick).min() ?? 0
      var widths: [Int: Int] = [:]
      for cell in diagrams.flatMap({ $0.cells() }) {
        widths[cell.tick] = max(widths[cell.tick] ?? 1, cell.text.count)
      }
      self.widths = widths
    }

    /// The columns before `tick`'s.
    func offset(of tick: Int) -> Int {
      (start..<tick).map { widths[$0] ?? 1 }.reduce(0, +)
    }

    /// `marbles` drawn in these columns.
    func line(_ marbles: Marbles) -> String {
      String(repeating: " ", count: offset(of: marbles.firstTick)) + marbles.drawn(widths: widths)
    }
  }

  /// The drawing of each tick of `firstTick..<endTick` (`"-"`, `"a"`, `"(ab)"`).
  func cells() -> [(tick: Int, text: String)] {
    var byTick: [Int: [Event]] = [:]
    for frame in frames { byTick[frame.tick] = frame.events }
    return (firstTick..<endTick).map { tick in
      guard let events = byTick[tick] else { return (tick, "-") }
      let symbols = String(events.map(\.symbol))
      return (tick, events.count == 1 ? symbols : "(\(symbols))")
    }
  }

  /// The diagram with each tick padded with spaces to `widths[tick]` (spaces mean nothing in a
  /// diagram, so the result parses to the same diagram).
  func drawn(widths: [Int: Int] = [:]) -> String {
    cells().map { cell in
      let width = widths[cell.tick] ?? 0
      return cell.text + String(repeating: " ", count: max(0, width - cell.text.count))
    }.joined()
  }
}

/// The parser's state while it reads a diagram left to right.
private struct MarbleParser {
  let diagram: String
  var tick = 0
  var frames: [Marbles.Frame] = []
  /// The events of the open group and the position of its `(`.
  var group: (events: [Marbles.Event], position: Int)?
  /// The tick of `^` and its position.
  var subscription: (tick: Int, position: Int)?
  /// The position of the `|` or `#`, once read.
  var completionPosition: Int?
  /// The last value read and its position, while nothing drawn (`-` or a symbol) has come
  /// after it: the next value may be drawn right after it.
  var lastValue: (name: Character, position: Int)?

  init(diagram: String) { self.diagram = diagram }

  func error(_ position: Int, _ reason: String) -> MarbleSyntaxError {
    MarbleSyntaxError(diagram: diagram, position: position, reason: reason)
  }

  mutating func read(_ character: Character, at position: Int) throws(MarbleSyntaxError) {
    switch character {
    case " ":
      return
    case "(":
      if let group { throw error(position, "a group inside the group opened at \(group.position)") }
      group = ([], position)
    case ")":
      guard let open = group else { throw error(position, "')' closes no group") }
      guard !open.events.isEmpty else { throw error(open.position, "an empty group") }
      frames.append(Marbles.Frame(tick: tick, events: open.events))
      group = nil
      tick += 1
    case "-":
      if let group { throw error(position, "'-' inside the group opened at \(group.position)") }
      tick += 1
      lastValue = nil
    default:
      try event(character, at: position)
    }
  }

  mutating func event(_ character: Character, at position: Int) throws(MarbleSyntaxError) {
    let event: Marbles.Event =
      switch character {
      case "|": .finished
      case "#": .failed
      case "^": .subscribed
      case "!": .cancelled
      default: .value(character)
      }
    if let completionPosition {
      throw error(
        position, "'\(character)' comes after the completion at position \(completionPosition)")
    }
    if event == .subscribed {
      if let subscription {
        throw error(position, "a second '^' (the first is at position \(subscription.position))")
      }
      if let group { throw error(position, "'^' inside the group opened at \(group.position)") }
      subscription = (tick, position)
    }
    if case .value(let name) = event {
      try checkStandsAlone(name, at: position)
      lastValue = (name, position)
    } else {
      lastValue = nil
    }
    if event.isCompletion { completionPosition = position }
    if group != nil {
      group?.events.append(event)
    } else {
      frames.append(Marbles.Frame(tick: tick, events: [event]))
      tick += 1
    }
  }

  /// Checks that value `name` stays one character when drawn again: after a space (a column's
  /// padding, a label), before one, and after the value before it once the spaces between them
  /// are gone. Grapheme clusters depend on their neighbours, so a character read here may not
  /// be one there.
  func checkStandsAlone(_ name: Character, at position: Int) throws(MarbleSyntaxError) {
    func scalars(_ character: Character) -> String {
      character.unicodeScalars.map { "U+" + String($0.value, radix: 16, uppercase: true) }
        .joined(separator: " ")
    }
    if (" " + String(name)).count != 2 || (String(name) + " ").count != 2 {
      throw error(
        position,
        "the value \(scalars(name)) joins the character next to it when the diagram is drawn "
          + "(a combining or prefix mark on its own); name values with characters that stand "
          + "alone")
    }
    if let (previous, previousPosition) = lastValue,
      (String(previous) + String(name)).count != 2
    {
      throw error(
        position,
        "the value \(scalars(name)) joins the value at position \(previousPosition) "
          + "(\(scalars(previous))) into one character when the diagram is drawn; put '-' "
          + "between them or name them differently")
    }
  }

  func finish() throws(MarbleSyntaxError) -> (frames: [Marbles.Frame], firstTick: Int, endTick: Int)
  {
    if let group { throw error(group.position, "the group opened here is never closed") }
    let origin = subscription?.tick ?? 0
    return (
      frames.map { Marbles.Frame(tick: $0.tick - origin, events: $0.events) }, -origin,
      tick - origin
    )
  }
}

/// A mistake in a marble diagram, with its position (counted in characters from 1).
///
/// Its description shows the diagram with a caret under the mistake:
/// ```
/// Marble diagram "-a-(b": the group opened here is never closed (position 4)
///   -a-(b
///      ^
/// ```
public struct MarbleSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The diagram as written.
  public let diagram: String
  /// The position of the mistake, counted in characters from 1.
  public let position: Int
  /// What is wrong there.
  public let reason: String

  /// An error at `position` of `diagram`.
  public init(diagram: String, position: Int, reason: String) {
    self.diagram = diagram
    self.position = position
    self.reason = reason
  }

  public var description: String {
    """
    Marble diagram "\(diagram)": \(reason) (position \(position))
      \(diagram)
      \(String(repeating: " ", count: max(0, position - 1)))^
    """
  }
}
