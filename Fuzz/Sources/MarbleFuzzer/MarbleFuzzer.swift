import FuzzDriver
import SluiceTesting

// The marble-diagram parser (`Marbles(_:)`) on any text, with what must hold of it:
// - a diagram that parses prints (`description`) as text that parses to the same diagram, and
//   prints the same again;
// - a diagram drawn aligned under another (`Marbles.aligned`) parses back, line by line, to the
//   diagram it was drawn from;
// - what parses keeps the type's invariants: frames in strictly increasing ticks, none empty,
//   every tick within `firstTick..<endTick`, at most one `^` (at tick 0), at most one
//   completion and nothing after it; shifting there and back changes nothing;
// - what does not parse throws a `MarbleSyntaxError` naming the diagram and a position inside it.
// The input is read as UTF-8 (invalid bytes replaced), up to 256 characters.

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzMarbles(_ data: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
  let text = String(String(decoding: fuzzInput(data, count), as: UTF8.self).prefix(256))
  let diagram: Marbles
  do {
    diagram = try Marbles(text)
  } catch {
    require(error.diagram == text, "the error names another diagram: \(error)")
    require(
      (1...max(1, text.count)).contains(error.position),
      "position \(error.position) outside a diagram of \(text.count) characters: \(error)")
    require(!error.reason.isEmpty, "no reason given: \(error)")
    return 0
  }
  checkInvariants(diagram, parsedFrom: text)
  let printed = diagram.description
  let reparsed: Marbles
  do {
    reparsed = try Marbles(printed)
  } catch {
    propertyFailed("\(debug(text)) prints as \(debug(printed)), which does not parse: \(error)")
  }
  require(
    reparsed == diagram,
    "\(debug(text)) prints as \(debug(printed)), which parses to another diagram: "
      + "\(diagram.frames) ≠ \(reparsed.frames)")
  require(
    reparsed.description == printed,
    "printing is not stable: \(debug(printed)) then \(debug(reparsed.description))")
  require(
    diagram.shifted(by: 3).shifted(by: -3) == diagram, "shifting there and back changed it")
  checkAligned(diagram, text: text)
  return 0
}

/// The invariants of a parsed diagram.
func checkInvariants(_ diagram: Marbles, parsedFrom text: String) {
  let ticks = diagram.frames.map(\.tick)
  require(zip(ticks, ticks.dropFirst()).allSatisfy(<), "\(debug(text)): ticks out of order")
  require(diagram.frames.allSatisfy { !$0.events.isEmpty }, "\(debug(text)): an empty frame")
  require(
    ticks.allSatisfy { (diagram.firstTick..<diagram.endTick).contains($0) },
    "\(debug(text)): a frame outside \(diagram.firstTick)..<\(diagram.endTick)")
  let events = diagram.events
  let subscriptions = events.filter { $0.event == .subscribed }
  require(subscriptions.count <= 1, "\(debug(text)): two subscription points")
  require(subscriptions.allSatisfy { $0.tick == 0 }, "\(debug(text)): '^' not at tick 0")
  if let completion = events.firstIndex(where: { $0.event.isCompletion }) {
    require(
      completion == events.count - 1, "\(debug(text)): an event after the completion")
  }
}

/// The diagram drawn under itself shifted (whose cells another row may widen), each line read
/// back.
func checkAligned(_ diagram: Marbles, text: String) {
  let rows = [("in", diagram), ("shifted", diagram.shifted(by: 2))]
  let lines = Marbles.aligned(rows)
  require(lines.count == 2, "aligned drew \(lines.count) lines for 2 rows")
  for ((label, row), line) in zip(rows, lines) {
    require(line.hasPrefix(label), "\(debug(line)) does not start with its label")
    let drawing = String(line.dropFirst("shifted".count + 2))
    let parsed: Marbles
    do {
      parsed = try Marbles(drawing)
    } catch {
      propertyFailed(
        "\(debug(text)): aligned row \(label) drawn as \(debug(drawing)) does not parse: \(error)")
    }
    // Spaces before the first character move nothing: a diagram reads from its `^`, or else
    // from its first character, which the drawing puts at the row's first tick.
    let origin = row.events.first { $0.event == .subscribed }?.tick ?? row.firstTick
    let expected = row.shifted(by: -origin)
    require(
      parsed.frames == expected.frames,
      "\(debug(text)): aligned row \(label) drawn as \(debug(drawing)) reads back as "
        + "\(parsed.frames), not \(expected.frames)")
  }
}

/// `text` with its scalars spelled out, so that a report shows what a terminal would hide.
func debug(_ text: String) -> String {
  "\"\(text.unicodeScalars.map { $0.isASCII && $0.value >= 32 ? String($0) : "\\u{\(String($0.value, radix: 16))}" }.joined())\""
}
