extension MarbleDiagram {
  /// The diagram as a standalone SVG document: plain shapes and text, a `<style>` for the
  /// colours, no scripts and no external resources, with a `<title>` and a `<desc>` (the
  /// diagram as ``text``) for screen readers.
  ///
  /// It paints its own background, so it is readable on any page; with `.automatic` (the
  /// default) it switches to dark colours under `prefers-color-scheme: dark`. Every coordinate
  /// is an integer and nothing depends on the machine, so the same diagram always gives the same
  /// bytes.
  public func svg(theme: Theme = .automatic) -> String {
    MarbleDrawing(self).document(theme: theme)
  }
}

/// The layout of a ``MarbleDiagram``: columns per tick, rows, marks, all in integer pixels.
private struct MarbleDrawing {
  static let margin = 12
  static let baseColumn = 40
  static let rowHeight = 60
  static let lineOffset = 32
  static let charWidth = 8
  static let boxHeight = 34
  static let marbleRadius = 14
  static let palette = [
    "#8ecae6", "#ffc971", "#95d5b2", "#f4a7a3", "#cdb4db", "#ffd6a5", "#a0c4ff", "#d8e2a5",
  ]

  let diagram: MarbleDiagram
  let rows: [MarbleDiagram.Row]
  let firstTick: Int
  let endTick: Int
  let labelWidth: Int
  /// Each tick's column: its left edge and width.
  let columns: [(left: Int, width: Int)]
  let width: Int

  init(_ diagram: MarbleDiagram) {
    self.diagram = diagram
    rows = diagram.inputs + diagram.outputs
    let ticks = rows.flatMap { $0.events.map(\.tick) } + rows.map(\.start)
    firstTick = min(0, ticks.min() ?? 0)
    // Never shorter than the events: a given end before the last event is extended to it.
    let last = ticks.max() ?? 0
    endTick = max(diagram.endTick ?? (last + 2), last + 1, firstTick + 1)
    labelWidth = max(56, (rows.map(\.label.count).max() ?? 0) * Self.charWidth + 16)
    var columns: [(left: Int, width: Int)] = []
    var left = Self.margin + labelWidth
    for tick in firstTick..<endTick {
      let needed = rows.map { Self.itemsWidth($0.events.filter { $0.tick == tick }) }.max() ?? 0
      let width = max(Self.baseColumn, needed + 10)
      columns.append((left, width))
      left += width
    }
    self.columns = columns
    let titleWidth = diagram.title.count * Self.charWidth + 40
    let legendWidth = Self.legend(for: rows).reduce(0) { $0 + $1.width }
    width = max(left + Self.margin + 8, Self.margin * 2 + max(titleWidth, legendWidth))
  }

  // MARK: Marks

  /// The width a mark takes on its line (0 for marks drawn above or below the line).
  static func itemWidth(_ mark: MarbleDiagram.Mark) -> Int {
    switch mark {
    case .value(let text): max(28, text.count * charWidth + 14)
    case .finished: 10
    case .failed: 18
    case .cancelled: 20
    case .subscribed, .requested: 0
    }
  }

  static func itemsWidth(_ events: [MarbleDiagram.Event]) -> Int {
    let widths = events.map { itemWidth($0.mark) }.filter { $0 > 0 }
    return widths.reduce(0, +) + 4 * max(0, widths.count - 1)
  }

  func center(of tick: Int) -> Int {
    let column = columns[tick - firstTick]
    return column.left + column.width / 2
  }

  /// The x of each event's centre in `row`, by the event's index.
  func positions(in row: MarbleDiagram.Row) -> [Int] {
    var positions = Array(repeating: 0, count: row.events.count)
    var index = 0
    while index < row.events.count {
      let tick = row.events[index].tick
      var end = index
      while end < row.events.count, row.events[end].tick == tick { end += 1 }
      let group = Array(row.events[index..<end])
      var x = center(of: tick) - Self.itemsWidth(group) / 2
      for offset in group.indices {
        let itemWidth = Self.itemWidth(group[offset].mark)
        if itemWidth == 0 {
          positions[index + offset] = center(of: tick)
        } else {
          positions[index + offset] = x + itemWidth / 2
          x += itemWidth + 4
        }
      }
      index = end
    }
    return positions
  }

  /// The marble colour of a value: the same text always gets the same colour.
  static func colour(of text: String) -> Int {
    text.unicodeScalars.reduce(0) { ($0 &* 31 &+ Int($1.value)) % 1_000_003 } % palette.count
  }

  // MARK: Document

  func document(theme: MarbleDiagram.Theme) -> String {
    var body: [String] = []
    var y = Self.margin
    let top = y
    let rowTops = rows.indices.map { index -> Int in
      let extra = index >= diagram.inputs.count ? Self.boxHeight + 16 : 0
      return top + index * Self.rowHeight + extra
    }
    let boxTop = top + diagram.inputs.count * Self.rowHeight + (diagram.inputs.isEmpty ? 0 : 4)
    let rowsBottom = top + rows.count * Self.rowHeight + Self.boxHeight + 16
    y = rowsBottom

    // Tick grid, behind everything.
    for tick in firstTick..<endTick {
      let x = center(of: tick)
      body.append(
        #"<line class="grid" x1="\#(x)" y1="\#(top)" x2="\#(x)" y2="\#(rowsBottom - 6)"/>"#)
    }
    // The operator's box.
    let boxLeft = Self.margin
    let boxWidth = width - 2 * Self.margin
    body.append(
      #"<rect class="box" x="\#(boxLeft)" y="\#(boxTop)" width="\#(boxWidth)" height="\#(Self.boxHeight)" rx="6"/>"#
    )
    body.append(
      #"<text class="fg title" x="\#(boxLeft + boxWidth / 2)" y="\#(boxTop + 22)" text-anchor="middle">\#(escaped(diagram.title))</text>"#
    )
    for (row, rowTop) in zip(rows, rowTops) {
      body += draw(row, lineY: rowTop + Self.lineOffset)
    }
    // Tick numbers.
    y += 12
    body.append(#"<text class="mu small" x="\#(Self.margin)" y="\#(y + 4)">tick</text>"#)
    for tick in firstTick..<endTick {
      body.append(
        #"<text class="mu small" x="\#(center(of: tick))" y="\#(y + 4)" text-anchor="middle">\#(tick)</text>"#
      )
    }
    y += 22
    // The legend: only what the diagram uses.
    var x = Self.margin
    for entry in Self.legend(for: rows) {
      body += entry.draw(x, y)
      x += entry.width
    }
    y += 14
    for line in wrapped(diagram.caption, width: (width - 2 * Self.margin) / Self.charWidth) {
      y += 16
      body.append(
        #"<text class="fg caption" x="\#(Self.margin)" y="\#(y)">\#(escaped(line))</text>"#)
    }
    let height = y + Self.margin
    let header = [
      #"<svg xmlns="http://www.w3.org/2000/svg" width="\#(width)" height="\#(height)" viewBox="0 0 \#(width) \#(height)" role="img" aria-labelledby="title desc">"#,
      #"<title id="title">\#(escaped(diagram.title))</title>"#,
      #"<desc id="desc">\#(escaped(diagram.text))</desc>"#,
      "<style>\(Self.style(theme))</style>",
      #"<rect class="bg" x="0" y="0" width="\#(width)" height="\#(height)" rx="8"/>"#,
    ]
    return (header + body + ["</svg>", ""]).joined(separator: "\n")
  }

  /// A row: its label, its line (one segment per subscription, an arrow while it goes on),
  /// then its marks.
  func draw(_ row: MarbleDiagram.Row, lineY y: Int) -> [String] {
    var out = [
      #"<text class="fg label" x="\#(Self.margin)" y="\#(y + 5)">\#(escaped(row.label))</text>"#
    ]
    let positions = positions(in: row)
    let rightEdge = width - Self.margin - 10
    var segmentStart: Int? = row.start <= firstTick ? columns[0].left : center(of: row.start)
    for (event, x) in zip(row.events, positions) {
      if event.mark == .subscribed, segmentStart == nil { segmentStart = x }
      if event.mark.endsLine, let start = segmentStart {
        out.append(#"<line class="ln" x1="\#(start)" y1="\#(y)" x2="\#(x)" y2="\#(y)"/>"#)
        segmentStart = nil
      }
    }
    if let start = segmentStart {
      out.append(#"<line class="ln" x1="\#(start)" y1="\#(y)" x2="\#(rightEdge)" y2="\#(y)"/>"#)
      out.append(
        #"<polygon class="fg" points="\#(rightEdge + 8),\#(y) \#(rightEdge - 2),\#(y - 5) \#(rightEdge - 2),\#(y + 5)"/>"#
      )
    }
    var requestsAt: [Int: Int] = [:]
    for (event, x) in zip(row.events, positions) {
      switch event.mark {
      case .value(let text):
        let width = Self.itemWidth(event.mark)
        let radius = Self.marbleRadius
        out.append(
          #"<g class="mk"><rect class="c\#(Self.colour(of: text))" x="\#(x - width / 2)" y="\#(y - radius)" width="\#(width)" height="\#(2 * radius)" rx="\#(radius)"/><text x="\#(x)" y="\#(y + 4)" text-anchor="middle">\#(escaped(text))</text></g>"#
        )
      case .finished:
        out.append(#"<line class="ln end" x1="\#(x)" y1="\#(y - 14)" x2="\#(x)" y2="\#(y + 14)"/>"#)
      case .failed:
        out.append(
          #"<path class="fail" d="M\#(x - 7) \#(y - 7)L\#(x + 7) \#(y + 7)M\#(x + 7) \#(y - 7)L\#(x - 7) \#(y + 7)"/>"#
        )
      case .cancelled:
        out.append(
          #"<g class="cancel"><circle cx="\#(x)" cy="\#(y)" r="8"/><line x1="\#(x - 5)" y1="\#(y + 5)" x2="\#(x + 5)" y2="\#(y - 5)"/></g>"#
        )
      case .subscribed:
        out.append(
          #"<polygon class="fg" points="\#(x),\#(y + 16) \#(x - 6),\#(y + 25) \#(x + 6),\#(y + 25)"/>"#
        )
      case .requested(let demand):
        let stacked = requestsAt[event.tick, default: 0]
        requestsAt[event.tick] = stacked + 1
        out.append(
          #"<text class="req small" x="\#(x)" y="\#(y - 18 - 11 * stacked)" text-anchor="middle">↑\#(demand.drawn)</text>"#
        )
      }
    }
    return out
  }

  /// One entry of the legend: its symbol drawn at (x, y) and its words.
  struct LegendEntry {
    let width: Int
    let draw: (Int, Int) -> [String]
  }

  static func legend(for rows: [MarbleDiagram.Row]) -> [LegendEntry] {
    let marks = rows.flatMap { $0.events.map(\.mark) }
    func entry(_ words: String, _ symbol: @escaping (Int, Int) -> String) -> LegendEntry {
      LegendEntry(width: 30 + words.count * 7 + 14) { x, y in
        [
          symbol(x + 8, y),
          #"<text class="mu small" x="\#(x + 22)" y="\#(y + 4)">\#(words)</text>"#,
        ]
      }
    }
    var entries: [LegendEntry] = []
    if marks.contains(.subscribed) {
      entries.append(
        entry("subscribe") { x, y in
          #"<polygon class="fg" points="\#(x),\#(y - 5) \#(x - 6),\#(y + 4) \#(x + 6),\#(y + 4)"/>"#
        })
    }
    if marks.contains(where: { if case .requested = $0 { true } else { false } }) {
      entries.append(
        entry("request(n)") { x, y in
          #"<text class="req small" x="\#(x)" y="\#(y + 4)" text-anchor="middle">↑n</text>"#
        })
    }
    if marks.contains(.finished) {
      entries.append(
        entry("finished") { x, y in
          #"<line class="ln end" x1="\#(x)" y1="\#(y - 7)" x2="\#(x)" y2="\#(y + 7)"/>"#
        })
    }
    if marks.contains(where: { if case .failed = $0 { true } else { false } }) {
      entries.append(
        entry("failed") { x, y in
          #"<path class="fail" d="M\#(x - 5) \#(y - 5)L\#(x + 5) \#(y + 5)M\#(x + 5) \#(y - 5)L\#(x - 5) \#(y + 5)"/>"#
        })
    }
    if marks.contains(.cancelled) {
      entries.append(
        entry("cancel") { x, y in
          #"<g class="cancel"><circle cx="\#(x)" cy="\#(y)" r="6"/><line x1="\#(x - 4)" y1="\#(y + 4)" x2="\#(x + 4)" y2="\#(y - 4)"/></g>"#
        })
    }
    return entries
  }

  // MARK: Text and colours

  func escaped(_ text: String) -> String {
    var out = ""
    for character in text {
      switch character {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "'": out += "&apos;"
      default: out.append(character)
      }
    }
    return out
  }

  /// `text` cut into lines of at most `width` characters, at spaces.
  func wrapped(_ text: String, width: Int) -> [String] {
    var lines: [String] = []
    for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
      var line = ""
      for word in paragraph.split(separator: " ") {
        if !line.isEmpty, line.count + 1 + word.count > width {
          lines.append(line)
          line = ""
        }
        line += (line.isEmpty ? "" : " ") + word
      }
      if !line.isEmpty { lines.append(line) }
    }
    return lines
  }

  static let lightColours = [
    ".bg{fill:#ffffff}", ".fg{fill:#1d1d1f}", ".ln{stroke:#1d1d1f}", ".mu{fill:#6e6e73}",
    ".req{fill:#0a58ca}", ".grid{stroke:#d8d8de}", ".box{fill:#f2f2f7;stroke:#1d1d1f}",
    ".fail{stroke:#d70015}", ".cancel circle,.cancel line{stroke:#1d1d1f}",
    ".cancel circle{fill:#ffffff}", ".mk rect{stroke:#1d1d1f}",
  ]
  static let darkColours = [
    ".bg{fill:#1c1c1e}", ".fg{fill:#f5f5f7}", ".ln{stroke:#f5f5f7}", ".mu{fill:#a1a1a6}",
    ".req{fill:#7db4ff}", ".grid{stroke:#3a3a3c}", ".box{fill:#2c2c2e;stroke:#f5f5f7}",
    ".fail{stroke:#ff6961}", ".cancel circle,.cancel line{stroke:#f5f5f7}",
    ".cancel circle{fill:#1c1c1e}", ".mk rect{stroke:#f5f5f7}",
  ]

  static func style(_ theme: MarbleDiagram.Theme) -> String {
    let shapes = [
      "text{font-family:ui-monospace,Menlo,Consolas,'DejaVu Sans Mono',monospace;font-size:12px}",
      ".title{font-size:13px;font-weight:600}", ".label{font-size:13px}",
      ".small{font-size:11px}", ".caption{font-size:12px}", ".ln{stroke-width:2}",
      ".end{stroke-width:3}", ".grid{stroke-width:1;stroke-dasharray:2 4}",
      ".box{stroke-width:1}", ".fail{stroke-width:3;fill:none}",
      ".cancel circle,.cancel line{stroke-width:2}", ".mk rect{stroke-width:1}",
      ".mk text{fill:#1d1d1f}",
    ]
    let marbles = palette.enumerated().map { ".c\($0.offset){fill:\($0.element)}" }
    let colours =
      switch theme {
      case .light: lightColours.joined()
      case .dark: darkColours.joined()
      case .automatic:
        lightColours.joined() + "@media (prefers-color-scheme: dark){\(darkColours.joined())}"
      }
    return (shapes + marbles).joined() + colours
  }
}
