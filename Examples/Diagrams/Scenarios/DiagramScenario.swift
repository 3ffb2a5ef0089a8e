import Foundation
public import SluiceTesting

/// One picture of the documentation: a run of an operator or publisher on a ``Lab``, drawn by
/// ``MarbleDiagram`` into `<name>.svg` (and `<name>~dark.svg`) in a module's DocC catalog.
public struct DiagramScenario: Sendable {
  /// The catalog (module) whose pages show the picture.
  public enum Catalog: String, Sendable, CaseIterable {
    case core = "SluiceCore"
    case async = "SluiceAsync"
    case networking = "SluiceNetworking"

    /// The folder the pictures go to, from the package's root.
    public var resources: String { "Sources/\(rawValue)/\(rawValue).docc/Resources/Marbles" }
  }

  /// The picture's name (DocC's image name; the files are `<name>.svg`, `<name>~dark.svg`).
  public let name: String
  /// Whose documentation shows it.
  public let catalog: Catalog
  /// The family it belongs to, for the overview article.
  public let family: String
  /// What it draws: operator names with their first argument label (`debounce(for:)`), as
  /// `ExamplesCoverageTests` reads them from the sources, and publisher type names (`Just`).
  public let covers: [String]
  /// The call drawn, in the operator's box.
  public let title: String
  /// Text under the picture.
  public let caption: String
  /// Whether the run starts tasks (drawn only where ``StepExecutor`` is installed).
  public let isAsync: Bool
  let draw: @Sendable (Lab) throws -> Void
  let ticks: Int?
  let endTick: Int?

  init(
    _ name: String, _ catalog: Catalog = .core, family: String, covers: [String], title: String,
    caption: String = "", async: Bool = false, ticks: Int? = nil, endTick: Int? = nil,
    _ draw: @escaping @Sendable (Lab) throws -> Void
  ) {
    self.name = name
    self.catalog = catalog
    self.family = family
    self.covers = covers
    self.title = title
    self.caption = caption
    self.isAsync = async
    self.ticks = ticks
    self.endTick = endTick
    self.draw = draw
  }

  /// Runs the scenario and returns its picture.
  public func diagram() throws -> MarbleDiagram {
    let lab = Lab()
    try draw(lab)
    lab.run(ticks: ticks)
    let diagram = lab.diagram(title, caption: caption, endTick: endTick)
    lab.end()
    return diagram
  }

  /// The files of the picture, names and contents: light, and `~dark` (DocC picks the one
  /// that matches the page's theme).
  public func files() throws -> [(name: String, contents: String)] {
    let diagram = try diagram()
    return [
      ("\(name).svg", diagram.svg(theme: .light)),
      ("\(name)~dark.svg", diagram.svg(theme: .dark)),
    ]
  }
}
