import Dispatch
import Foundation
import SluiceCore
import SluiceTesting
import Testing

@Suite("Marble diagrams drawn as SVG")
struct MarbleDiagramTests {
  struct Boom: Error {}
  let values: [Character: Int] = ["a": 1, "b": 2, "c": 3]

  func debounced() throws -> MarbleDiagram {
    let scheduler = DispatchQueue.test
    let input = try scheduler.coldPublisher("-a--b-c---|", values: values)
    let output = scheduler.recordMarbles(input.debounce(for: .seconds(2), scheduler: scheduler))
    return MarbleDiagram(
      "debounce(for: .seconds(2))", inputs: [.init("input", publisher: input)],
      outputs: [.init("output", recording: output)], caption: "a <caption> & more")
  }

  @Test func rowsHoldWhatTheRunDid() throws {
    let diagram = try debounced()
    #expect(
      diagram.text == """
        debounce(for: .seconds(2))
        input: ▲@0 ↑∞@0 1@1 2@4 3@6 |@10
        output: ▲@0 ↑∞@0 1@3 3@8 |@10
        """)
  }

  @Test func theSameDiagramGivesTheSameBytes() throws {
    let first = try debounced().svg()
    let second = try debounced().svg()
    #expect(first == second)
    #expect(try debounced().svg(theme: .dark) == debounced().svg(theme: .dark))
  }

  @Test func theDocumentIsPlainSVGWithIntegerCoordinates() throws {
    let svg = try debounced().svg()
    #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
    #expect(svg.hasSuffix("</svg>\n"))
    #expect(!svg.contains("<script"))
    #expect(!svg.contains("href"))
    #expect(svg.range(of: #"="[^"]*\d\.\d"#, options: .regularExpression) == nil)
    // Text is escaped.
    #expect(svg.contains("a &lt;caption&gt; &amp; more"))
    // One marble per value: three in, two out.
    #expect(svg.components(separatedBy: "<g class=\"mk\">").count - 1 == 5)
    #expect(svg.contains("<title id=\"title\">debounce(for: .seconds(2))</title>"))
  }

  @Test func themes() throws {
    let diagram = try debounced()
    #expect(diagram.svg().contains("@media (prefers-color-scheme: dark)"))
    #expect(!diagram.svg(theme: .light).contains("@media"))
    #expect(diagram.svg(theme: .light).contains(".bg{fill:#ffffff}"))
    #expect(diagram.svg(theme: .dark).contains(".bg{fill:#1c1c1e}"))
    #expect(!diagram.svg(theme: .dark).contains(".bg{fill:#ffffff}"))
  }

  @Test func theLegendShowsOnlyWhatIsDrawn() throws {
    let svg = try debounced().svg()
    #expect(svg.contains(">subscribe</text>"))
    #expect(svg.contains(">finished</text>"))
    #expect(!svg.contains(">failed</text>"))
    #expect(!svg.contains(">cancel</text>"))
  }

  @Test func anInputRowShowsWhenValuesReachedTheSubscriberUnderDemand() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.coldPublisher("-a-b|", values: values)
    let output = scheduler.recordMarbles(input, ticks: 6, demand: .max(1))
    let row = MarbleDiagram.Row("input", publisher: input)
    // `b` never reached the subscriber (no demand for it); the recording stopped at tick 6
    // with the input still open, so the recorder cancelled it there (it leaves nothing
    // subscribed behind) — the input's log shows that, the recording's own `cancelledAt` does
    // not (no cancel was asked for).
    #expect(
      row.events == [
        .init(tick: 0, mark: .subscribed), .init(tick: 0, mark: .requested(.max(1))),
        .init(tick: 1, mark: .value("1")), .init(tick: 6, mark: .cancelled),
      ])
    #expect(output.demand == .max(1))
    #expect(output.cancelledAt == nil)
  }

  @Test func cancelsAndFailuresAreDrawn() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.coldPublisher("-a-b-c|", values: values, failure: Boom())
    let output = scheduler.recordMarbles(input, cancelAtTick: 2)
    #expect(output.cancelledAt == 2)
    let failing = try scheduler.coldPublisher("-a#", values: values, failure: Boom())
    let failed = scheduler.recordMarbles(failing)
    let diagram = MarbleDiagram(
      "two runs", inputs: [.init("input", publisher: input)],
      outputs: [.init("cancelled", recording: output), .init("failed", recording: failed)])
    #expect(diagram.text.contains("cancelled: ▲@0 ↑∞@0 1@1 ⊘@2"))
    #expect(diagram.text.contains("failed: ▲@0 ↑∞@0 1@1 ×@2"))
    let svg = diagram.svg()
    #expect(svg.contains(">cancel</text>"))
    #expect(svg.contains("<path class=\"fail\""))
  }

  @Test func aRowFromADiagramAndAShiftedRow() throws {
    let row = MarbleDiagram.Row("x", marbles: try Marbles("-a-(bc)|"), names: ["a": "one"])
    #expect(
      row.events.map(\.tick) == [1, 3, 3, 4]
        && row.events.first?.mark == .value("one"))
    #expect(row.shifted(by: 2).events.map(\.tick) == [3, 5, 5, 6])
    #expect(row.shifted(by: 2).start == 2)
  }

  @Test func anEndBeforeTheLastEventAndAnEmptyDiagramStillDraw() throws {
    let row = MarbleDiagram.Row("x", marbles: try Marbles("a-^--b|"))
    let short = MarbleDiagram("short", inputs: [row], outputs: [], endTick: 1)
    #expect(short.svg().contains(">b</text>"))
    #expect(short.svg().contains(">-2</text>"))
    let empty = MarbleDiagram("nothing", inputs: [], outputs: [])
    #expect(empty.svg().contains(">nothing</text>"))
    #expect(empty.text == "nothing")
  }
}
