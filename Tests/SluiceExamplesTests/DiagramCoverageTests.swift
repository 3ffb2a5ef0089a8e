import Foundation
import SluiceDiagrams
import Testing

/// Every public operator and publisher has a marble diagram, drawn from a run
/// (Examples/Diagrams), shown on its documentation page, and the committed pictures are what
/// the code draws now. Read from the sources, so a new operator without a picture fails here.
@Suite("Marble diagrams cover the library")
struct DiagramCoverageTests {
  /// Names the surface lists that are not operators or publishers of their own.
  static let notDrawn: [String: String] = [
    "sluice": "URLSession.sluice is a namespace for the data task publisher, not a publisher"
  ]

  @Test func everyOperatorAndPublisherHasADiagram() throws {
    let library = try LibrarySurface.read()
    let covered = Set(DiagramScenario.all.flatMap(\.covers))
    let operators = library.operators.map(\.description) + ["catch(_:)"]
    let missing = (operators + library.publisherTypes)
      .filter { !covered.contains($0) && Self.notDrawn[$0] == nil }
    #expect(missing.isEmpty, "no marble diagram draws: \(missing.sorted())")
    // Names a scenario claims must exist, so a typo cannot hide a missing picture.
    let known = Set(operators + library.publisherTypes).union([
      "AsyncSequencePublisher", "Sequence.publisher", "Optional.publisher", "Result.publisher",
      "Published", "DataTaskPublisher", "autoconnect",
    ])
    let unknown = covered.subtracting(known)
    #expect(unknown.isEmpty, "scenarios cover names the library does not have: \(unknown.sorted())")
    let names = DiagramScenario.all.map(\.name)
    #expect(Set(names).count == names.count, "two scenarios share a name")
  }

  @Test func everyOperatorsDocumentationShowsAPicture() throws {
    var missing: [String] = []
    var referenced: [(module: String, image: String)] = []
    for module in ["SluiceCore", "SluiceAsync", "SluiceNetworking"] {
      for file in try swiftFiles(under: "Sources/\(module)") {
        let path = file.path
        let source = try String(contentsOf: file, encoding: .utf8)
        referenced += Self.images(in: source).map { (module, $0) }
        // Subjects are pictured through the catalog's extension files.
        if path.contains("/Subjects/") || path.contains("/Internal/") { continue }
        missing += Self.undrawnOperators(in: source).filter { Self.notDrawn[$0] == nil }.map {
          "\(file.lastPathComponent): \($0)"
        }
      }
      let catalog = try files(under: "Sources/\(module)/\(module).docc", extension: "md")
      for article in catalog {
        referenced += Self.images(in: try String(contentsOf: article, encoding: .utf8)).map {
          (module, $0)
        }
      }
    }
    #expect(missing.isEmpty, "public operators whose doc comment shows no picture: \(missing)")
    let root = repositoryRoot()
    let absent = referenced.filter { reference in
      !FileManager.default.fileExists(
        atPath: root.appendingPathComponent(
          "Sources/\(reference.module)/\(reference.module).docc/Resources/Marbles/"
            + "\(reference.image).svg"
        ).path)
    }
    #expect(absent.isEmpty, "pictures referenced but not in the module's catalog: \(absent)")
    #expect(referenced.count > 300, "too few pictures referenced: \(referenced.count)")
  }

  /// The synchronous runs drawn again must give the committed files, byte for byte (the async
  /// ones need the generator's step executor: CI regenerates everything and diffs).
  @Test func theCommittedPicturesAreWhatTheCodeDrawsNow() throws {
    let root = repositoryRoot()
    var stale: [String] = []
    for scenario in DiagramScenario.all where !scenario.isAsync {
      for file in try scenario.files() {
        let url = root.appendingPathComponent(scenario.catalog.resources)
          .appendingPathComponent(file.name)
        if (try? String(contentsOf: url, encoding: .utf8)) != file.contents {
          stale.append(file.name)
        }
      }
    }
    #expect(stale.isEmpty, "stale pictures (run `swift run sluice-diagrams`): \(stale)")
    for catalog in DiagramScenario.Catalog.allCases
    where DiagramScenario.all.contains(where: { $0.catalog == catalog }) {
      let url = root.appendingPathComponent(catalog.article)
      #expect(
        (try? String(contentsOf: url, encoding: .utf8))
          == catalog.overview(of: DiagramScenario.all),
        "\(catalog.article) is stale: run `swift run sluice-diagrams`")
    }
  }

  @Test func theCheckerSeesAnOperatorWithoutAPicture() {
    let source = """
      extension Publisher {
        /// Drawn.
        ///
        /// ![Marble diagram: map](map)
        public func map<T>(_ transform: @escaping (Output) -> T) -> Int { 1 }

        /// Not drawn.
        @inlinable
        public func undrawn(
          _ x: Int) -> Int { 1 }
      }
      """
    #expect(Self.undrawnOperators(in: source) == ["undrawn(_:)"])
    #expect(Self.images(in: source) == ["map"])
  }

  /// The images a text references: `![alt](name)`.
  static func images(in text: String) -> [String] {
    let pattern = try! Regex(#"!\[[^\]]*\]\(([\w~-]+)\)"#)
    return text.matches(of: pattern).compactMap { $0.output[1].substring.map(String.init) }
  }

  /// The public operators of `source` (the members of its `extension Publisher` blocks and
  /// their specialisations, as `LibrarySurface` reads them) whose doc comment references no
  /// image.
  static func undrawnOperators(in source: String) -> [String] {
    let lines = source.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let operators = LibrarySurface(sources: [source]).operators
    var undrawn: [String] = []
    for (index, line) in lines.enumerated()
    where line.hasPrefix("  ") && !line.hasPrefix("   ") && line.contains("public ") {
      // The declaration's name and first label, read as the surface reads them.
      let next = index + 1 < lines.count ? lines[index + 1] : ""
      let alone = LibrarySurface(
        sources: [["extension Publisher {", line, next, "}"].joined(separator: "\n")])
      guard let declared = alone.operators.first, operators.contains(declared) else { continue }
      var above = index - 1
      while above >= 0, lines[above].trimmingCharacters(in: .whitespaces).hasPrefix("@") {
        above -= 1
      }
      var comment: [String] = []
      while above >= 0 {
        let text = lines[above].trimmingCharacters(in: .whitespaces)
        guard text.hasPrefix("//") else { break }
        comment.append(text)
        above -= 1
      }
      if !comment.contains(where: { $0.contains("![") }) { undrawn.append(declared.description) }
    }
    return undrawn
  }
}

/// The files with `extension` under a folder of the repository.
func files(under folder: String, extension pathExtension: String) throws -> [URL] {
  let base = repositoryRoot().appendingPathComponent(folder)
  guard
    let enumerator = FileManager.default.enumerator(
      at: base, includingPropertiesForKeys: nil, options: [.skipsHiddenFiles])
  else { throw CocoaError(.fileNoSuchFile) }
  return enumerator.compactMap { $0 as? URL }.filter { $0.pathExtension == pathExtension }
}

/// The repository's root folder.
func repositoryRoot() -> URL {
  URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
}
