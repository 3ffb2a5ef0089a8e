extension DiagramScenario.Catalog {
  /// The overview article's file, from the package's root.
  public var article: String { "Sources/\(rawValue)/\(rawValue).docc/MarbleDiagrams.md" }

  /// The overview article: every picture of this catalog, family by family, with its caption.
  public func overview(of scenarios: [DiagramScenario]) -> String {
    let mine = scenarios.filter { $0.catalog == self }
    var families: [String] = []
    for scenario in mine where !families.contains(scenario.family) {
      families.append(scenario.family)
    }
    let heading =
      switch self {
      case .core: "Operators in pictures"
      case .async: "Async operators and bridges in pictures"
      case .networking: "URLSession's publisher in pictures"
      }
    var lines = [
      "# \(heading)", "",
      "Every operator and publisher of \(rawValue), drawn from a real run.", "",
      "## Overview", "",
      "Each picture is a run on a `TestScheduler` (one tick is one second of virtual time): the "
        + "inputs are marble publishers above the operator's box, the subscriber's view is below "
        + "it. A marble is a value, `|` a completion, `×` a failure; `▲` is where a subscriber "
        + "subscribed, `↑n` a request for n more values, `⊘` a cancel. Async operators and "
        + "bridges run their tasks one job at a time between ticks, so their pictures are as "
        + "exact as the others.", "",
      "The pictures and this article are generated from Examples/Diagrams (`swift run "
        + "sluice-diagrams`; do not edit them by hand) and CI fails when a committed "
        + "picture differs from what the code draws now, so a change of behaviour shows up as a "
        + "picture in review. Draw your own pipelines with SluiceTesting's `MarbleDiagram`.", "",
    ]
    for family in families {
      lines += ["## \(family)", ""]
      for scenario in mine where scenario.family == family {
        lines += [
          "### \(scenario.name)", "", "`\(scenario.title)`", "",
          "![\(scenario.caption.isEmpty ? scenario.title : scenario.caption)](\(scenario.name))",
          "",
        ]
        if !scenario.caption.isEmpty { lines += [scenario.caption, ""] }
      }
    }
    return lines.joined(separator: "\n")
  }
}
