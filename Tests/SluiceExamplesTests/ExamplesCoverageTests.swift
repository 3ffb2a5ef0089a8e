import Foundation
import SluiceTestSupport
import Testing

/// The examples show the full operator set from structured-concurrency code: every public operator
/// (each name with its first argument label, so `receive(on:)` and `collect(_:)` count apart from
/// `receive(_:)` and `collect()`), every Foundation publisher and every public publisher type of
/// the library must be used somewhere in `Examples/`. Read from the sources, so a new operator
/// without an example fails here.
@Suite("Examples cover the library")
struct ExamplesCoverageTests {
  @Test func everyPublicOperatorAndPublisherIsUsedInTheExamples() throws {
    let library = try LibrarySurface.read()
    let examples = try swiftFiles(under: "Examples").map {
      try String(contentsOf: $0, encoding: .utf8)
    }
    .joined(separator: "\n")
    #expect(
      library.operators.count > 90,
      "the scanner found too few operators: \(library.operators.count)")
    #expect(library.publisherTypes.count > 10, "too few publisher types: \(library.publisherTypes)")

    let missingOperators = library.operators.filter { !$0.isUsed(in: examples) }.map(\.description)
    #expect(
      missingOperators.isEmpty, "operators with no use in Examples/: \(missingOperators.sorted())")
    let missingTypes = library.publisherTypes.filter { name in
      examples.range(of: "\\b\(name)\\b", options: .regularExpression) == nil
    }
    #expect(
      missingTypes.isEmpty, "publisher types with no use in Examples/: \(missingTypes.sorted())")
    for pattern in LibrarySurface.requiredForms {
      #expect(examples.contains(pattern), "no use of `\(pattern)` in Examples/")
    }
  }

  @Test func theScannerSeesOperatorsAndTheirLabels() {
    let source = """
      extension Publisher where Failure == Never {
        /// Doc comment with { braces }.
        public func receive<S: Scheduler>(on scheduler: S) -> Int { 1 }
        public func collect(_ count: Int) -> Int { 1 }
        public var values: Int { 1 }
        func hidden() {}
      }
      extension Timer {
        public static func publish(
          every interval: Double) -> Int { 1 }
        public func firstValue(isolation: isolated (any Actor)? = #isolation) async -> Int { 1 }
        public struct Nested { public func connect() {} }
      }
      public final class Relay<Output>: Publisher, Sendable {}
      """
    let surface = LibrarySurface(sources: [source])
    #expect(
      surface.operators.map(\.description).sorted() == [
        "collect(_:)", "firstValue", "publish(every:)", "receive(on:)", "values",
      ])
    #expect(surface.publisherTypes == ["Relay"])
    #expect(LibraryOperator(name: "receive", label: "on").isUsed(in: "x.receive(on: queue)"))
    #expect(!LibraryOperator(name: "receive", label: "on").isUsed(in: "x.receive(subscription: s)"))
    #expect(LibraryOperator(name: "collect", label: "_").isUsed(in: "x.collect(3)"))
    #expect(!LibraryOperator(name: "collect", label: "").isUsed(in: "x.collected"))
  }
}

/// One public operator: its name and first argument label (`_` unlabelled, empty for none or a
/// property).
struct LibraryOperator: Hashable, CustomStringConvertible {
  let name: String
  let label: String

  var description: String { label.isEmpty ? name : "\(name)(\(label):)" }

  /// Used as `.name…` (unlabelled or no arguments), or as `.name(label:` or `.name { … }` (a
  /// labelled closure written as a trailing closure).
  func isUsed(in text: String) -> Bool {
    let pattern =
      label.isEmpty || label == "_"
      ? "\\.\(name)\\b" : "\\.\(name)(\\(\\s*\(label):|\\s*\\{)"
    return text.range(of: pattern, options: .regularExpression) != nil
  }
}

/// What the library offers, read from its sources: the public functions and properties of
/// `extension Publisher` blocks (any `where`), of the Foundation types given publishers
/// (`Timer`, `NotificationCenter`, `URLSession`) and of the types given `.publisher`
/// (`Sequence`, `AsyncSequence`, `Optional`, `Result`); and the top-level public types that
/// conform to `Publisher` or `Subject`.
struct LibrarySurface {
  var operators: Set<LibraryOperator> = []
  var publisherTypes: Set<String> = []

  static let hosts = [
    "Publisher", "Timer", "NotificationCenter", "URLSession", "Sequence", "AsyncSequence",
    "Optional", "Result",
  ]
  /// Publisher types made only by an operator (`values`, `AsyncSequence.publisher`), which
  /// examples use without naming them.
  static let madeByOperators: Set<String> = ["AsyncPublisher", "AsyncSequencePublisher"]
  /// Forms the issue names that a name and label cannot tell apart.
  static let requiredForms = ["collect(.byTime(", "collect(.byTimeOrCount("]

  /// Whether the first parameter, `rest` being the declaration from just after its label, has a
  /// default value: an `=` before the `,` or `)` that ends it.
  static func isDefaulted(_ rest: Substring) -> Bool {
    var depth = 0
    var previous: Character = " "
    for character in rest {
      defer { previous = character }
      switch character {
      case "(", "[", "<": depth += 1
      case ")" where depth == 0, "," where depth == 0: return false
      case ">" where previous == "-": break
      case ")", "]", ">": depth -= 1
      case "=" where depth == 0: return true
      default: break
      }
    }
    return false
  }

  static func read() throws -> LibrarySurface {
    let files = try ["SluiceCore", "SluiceAsync", "SluiceNetworking"].flatMap {
      try swiftFiles(under: "Sources/\($0)")
    }
    return LibrarySurface(sources: try files.map { try String(contentsOf: $0, encoding: .utf8) })
  }

  init(sources: [String]) {
    for source in sources { scan(source) }
  }

  private mutating func scan(_ source: String) {
    let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
      .map { line -> Substring in
        // Comments may hold unbalanced braces; code here never has `//` in a string.
        guard let comment = line.range(of: "//") else { return line }
        return line[..<comment.lowerBound]
      }
    var depth = 0
    var hostDepth: Int?
    let extensionStart = try! Regex(#"^extension\s+(\w+)\b"#)
    let member = try! Regex(
      #"^\s*(?:@\w+(?:\([^)]*\))?\s+)*public\s+(?:static\s+)?(func|var)\s+(\w+)\s*(?:<[^(]*>)?\s*(?:\(\s*(\w*)(.*))?"#
    )
    let publisherType = try! Regex(
      #"^public\s+(?:final\s+)?(?:struct|class|enum)\s+(\w+)[^{:]*:[^{]*\b(Publisher|Subject)\b"#)
    for (index, line) in lines.enumerated() {
      // A declaration whose parameters start on the next line.
      let declaration =
        index + 1 < lines.count && line.contains("public ") ? line + " " + lines[index + 1] : line
      if depth == 0, let match = try? extensionStart.firstMatch(in: line),
        let host = match.output[1].substring, Self.hosts.contains(String(host))
      {
        hostDepth = 0
      }
      if depth == 0, let match = try? publisherType.firstMatch(in: line),
        let name = match.output[1].substring, !Self.madeByOperators.contains(String(name))
      {
        publisherTypes.insert(String(name))
      }
      // Direct members only: not those of a publisher type nested in the extension.
      if hostDepth != nil, depth == 1, let match = try? member.firstMatch(in: declaration),
        let kind = match.output[1].substring, let name = match.output[2].substring
      {
        // A first parameter with a default value (`isolation: … = #isolation`) may be left out.
        let rest = match.output[4].substring ?? ""
        let label =
          kind == "var" || Self.isDefaulted(rest) ? "" : String(match.output[3].substring ?? "")
        operators.insert(LibraryOperator(name: String(name), label: label))
      }
      depth += line.count(where: { $0 == "{" }) - line.count(where: { $0 == "}" })
      if hostDepth != nil, depth == 0, line.contains("}") { hostDepth = nil }
    }
  }
}

/// The `.swift` files under a folder of the repository.
func swiftFiles(under folder: String) throws -> [URL] {
  let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
  let base = root.appendingPathComponent(folder)
  guard
    let enumerator = FileManager.default.enumerator(
      at: base, includingPropertiesForKeys: nil, options: [.skipsHiddenFiles])
  else { throw CocoaError(.fileNoSuchFile) }
  return enumerator.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
}
