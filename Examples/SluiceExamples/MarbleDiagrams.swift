import Dispatch
import Sluice
import SluiceTesting

/// Time and combining operators drawn as marble diagrams: inputs are cold marble publishers on
/// virtual time (one character = one second), the output is recorded tick by tick; inputs are
/// drawn above, the output below, in shared columns. The last diagram is checked against an
/// expected one, as a test would. The same runs drawn as pictures (SVG, by `MarbleDiagram`) are
/// in the documentation: `swift run sluice-diagrams` writes every operator's.
@Sendable func marblesTour() async -> [String] {
  var lines: [String] = []
  let names: [Character: String] = Dictionary(
    uniqueKeysWithValues: "abcdxyz1234".map { ($0, String($0)) })

  /// Draws the inputs, then what `operate` made of them.
  func draw(
    _ title: String, _ inputs: [(label: String, diagram: String)],
    values: [Character: String] = names,
    _ operate: (TestSchedulerOf<DispatchQueue>, [MarblePublisher<String, Never>]) ->
      AnyPublisher<String, Never>
  ) {
    let scheduler = DispatchQueue.test
    do {
      let publishers = try inputs.map { try scheduler.coldPublisher($0.diagram, values: names) }
      let output = scheduler.recordMarbles(operate(scheduler, publishers))
      lines.append(title)
      let rows = try inputs.map { ($0.label, try Marbles($0.diagram)) }
      lines += Marbles.aligned(rows + [("output", output.marbles(values: values))])
        .map { "  " + $0 }
    } catch {
      lines.append("\(title): \(error)")
    }
  }

  draw(
    "debounce(for: 2s) — a value once the input is quiet for 2s", [("input", "-a--b-c------d-|")]
  ) {
    $1[0].debounce(for: .seconds(2), scheduler: $0).eraseToAnyPublisher()
  }
  lines.append("  (as in Combine, the completion drops the value still waiting: d)")
  draw("throttle(for: 3s, latest: true) — the latest of each 3s", [("input", "ab-c-d---x|")]) {
    $1[0].throttle(for: .seconds(3), scheduler: $0, latest: true).eraseToAnyPublisher()
  }
  draw("delay(for: 2s) — every signal 2s later", [("input", "-a-b|")]) {
    $1[0].delay(for: .seconds(2), scheduler: $0).eraseToAnyPublisher()
  }
  draw(
    "merge(with:) — as they come; done when both are",
    [("first", "-a---c|"), ("second", "--b-d---|")]
  ) {
    $1[0].merge(with: $1[1]).eraseToAnyPublisher()
  }
  draw(
    "zip — pairs in order (x = a1, y = b2)", [("letters", "-a--b|"), ("digits", "--1-2-3|")],
    values: ["x": "a1", "y": "b2"]
  ) {
    $1[0].zip($1[1]) { $0 + $1 }.eraseToAnyPublisher()
  }
  draw(
    "combineLatest — each value with the other's latest (x = a1, y = b1, z = b2)",
    [("letters", "-a--b---|"), ("digits", "--1---2|")], values: ["x": "a1", "y": "b1", "z": "b2"]
  ) {
    $1[0].combineLatest($1[1]) { $0 + $1 }.eraseToAnyPublisher()
  }

  // switchToLatest and flatMap: the outer publisher's values are the inner publishers.
  let scheduler = DispatchQueue.test
  do {
    let first = try scheduler.coldPublisher("-1-2-3|", values: names)
    let second = try scheduler.coldPublisher("-4|", values: names)
    let outer = try scheduler.coldPublisher("-A---B|", values: ["A": first, "B": second])
    let switched = scheduler.recordMarbles(outer.switchToLatest())
    // Each inner publisher is drawn from the tick it was subscribed at.
    func inner(_ publisher: MarblePublisher<String, Never>) -> Marbles {
      publisher.marbles.shifted(by: publisher.subscriptionLogs[0].subscribedAt)
    }
    lines.append("switchToLatest — the inner A is cancelled when B comes")
    lines += Marbles.aligned([
      ("outer", outer.marbles), ("A", inner(first)), ("B", inner(second)),
      ("output", switched.marbles(values: names)),
      ("A's subscription", first.subscriptionLogs[0].diagram),
    ]).map { "  " + $0 }

    let later = DispatchQueue.test
    let one = try later.coldPublisher("-1-2|", values: names)
    let two = try later.coldPublisher("-3|", values: names)
    let inners = try later.coldPublisher("-A-B|", values: ["A": one, "B": two])
    let flattened = later.recordMarbles(inners.flatMap(maxPublishers: .max(1)) { $0 })
    lines.append("flatMap(maxPublishers: .max(1)) — B is asked for once A has finished")
    lines += Marbles.aligned([
      ("outer", inners.marbles), ("A", inner(one)), ("B", inner(two)),
      ("output", flattened.marbles(values: names)),
      ("B's subscription", two.subscriptionLogs[0].diagram),
    ]).map { "  " + $0 }
  } catch {
    lines.append("switchToLatest / flatMap: \(error)")
  }

  // What a test does: compare with the expected diagram; a mismatch prints both, aligned.
  let checking = DispatchQueue.test
  if let input = try? checking.coldPublisher("-a-b-c|", values: names),
    let check = try? checking.checkMarbles(
      input.delay(for: .seconds(1), scheduler: checking), expected: "--a-b-c|", values: names)
  {
    lines.append("checkMarbles(delay(for: 1s), expected: \"--a-b-c|\"): matches \(check.matches)")
  }
  if let input = try? checking.coldPublisher("-a-b-c|", values: names),
    let check = try? checking.checkMarbles(
      input.delay(for: .seconds(2), scheduler: checking), expected: "--a-b-c|", values: names)
  {
    lines += check.description.split(separator: "\n").map(String.init)
  }
  // A terminal has no pictures; the documentation has one for every operator.
  lines.append(
    "Pictures of every operator and publisher, drawn from real runs: the documentation's "
      + "\"Operators in pictures\" (swift run sluice-diagrams draws them with MarbleDiagram)")
  return lines
}
