// Draws every operator's and publisher's marble diagram from a real run and writes the SVGs into
// the DocC catalogs: `swift run sluice-diagrams` (from the package's root).
//
//   sluice-diagrams            writes Sources/<Module>/<Module>.docc/Resources/Marbles/*.svg and
//                              the catalogs' overview articles (MarbleDiagrams.md)
//   sluice-diagrams --text     prints each diagram as text instead
//   sluice-diagrams --list     prints name, catalog, family, covered names and title, tab-separated
//   sluice-diagrams NAME…      only the named diagrams
//
// CI runs it and fails when `git diff` shows a picture that differs from the committed one.
import Foundation
import SluiceDiagrams

StepExecutor.install()
let arguments = CommandLine.arguments.dropFirst()
let asText = arguments.contains("--text")
let names = Set(arguments.filter { !$0.hasPrefix("--") })
let scenarios = DiagramScenario.all.filter { names.isEmpty || names.contains($0.name) }
if scenarios.isEmpty {
  FileHandle.standardError.write(Data("sluice-diagrams: no diagram named \(names.sorted())\n".utf8))
  exit(1)
}
if arguments.contains("--list") {
  for scenario in scenarios {
    let fields = [
      scenario.name, scenario.catalog.rawValue, scenario.family,
      scenario.covers.joined(separator: ","), scenario.title,
    ]
    print(fields.joined(separator: "\t"))
  }
  exit(0)
}
var written = 0
var changed: [String] = []
for scenario in scenarios {
  do {
    if asText {
      print(try scenario.diagram().text, terminator: "\n\n")
      continue
    }
    let folder = URL(fileURLWithPath: scenario.catalog.resources, isDirectory: true)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    for file in try scenario.files() {
      let url = folder.appendingPathComponent(file.name)
      let old = try? String(contentsOf: url, encoding: .utf8)
      if old != file.contents {
        try file.contents.write(to: url, atomically: true, encoding: .utf8)
        changed.append(file.name)
      }
      written += 1
    }
  } catch {
    FileHandle.standardError.write(Data("sluice-diagrams: \(scenario.name): \(error)\n".utf8))
    exit(1)
  }
}
if !asText, names.isEmpty {
  for catalog in DiagramScenario.Catalog.allCases
  where DiagramScenario.all.contains(where: { $0.catalog == catalog }) {
    let article = catalog.overview(of: DiagramScenario.all)
    if (try? String(contentsOfFile: catalog.article, encoding: .utf8)) != article {
      try article.write(toFile: catalog.article, atomically: true, encoding: .utf8)
      changed.append(catalog.article)
    }
  }
}
if !asText {
  print("sluice-diagrams: \(scenarios.count) diagrams, \(written) files, \(changed.count) changed")
  for name in changed.prefix(20) { print("  changed: \(name)") }
  if changed.count > 20 { print("  … and \(changed.count - 20) more") }
}
