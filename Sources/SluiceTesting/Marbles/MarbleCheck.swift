import SluiceCore

/// The outcome of ``TestScheduler/checkMarbles(_:expected:values:tick:ticks:demand:cancelAtTick:)``:
/// whether the publisher drew the expected diagram, and both diagrams.
///
/// Its description lines the two diagrams up tick by tick, with a caret under the first tick
/// where they differ:
/// ```
/// Marbles differ at tick 3:
///   expected  -a-b   --c|
///   actual    -a-(bc)|
///                ^
/// ```
public struct MarbleCheck: Sendable, CustomStringConvertible {
  /// Whether every value (compared with `==`), completion and tick matched.
  public let matches: Bool
  /// The expected diagram.
  public let expected: Marbles
  /// The recorded diagram (values not in the dictionary drawn as `?`).
  public let actual: Marbles
  /// The first tick where the diagrams differ.
  public let firstDifference: Int?
  /// How each `?` in ``actual`` was described.
  public let unnamedValues: [String]

  public var description: String {
    guard let firstDifference else {
      return "Marbles match:\n  \(expected.drawn())"
    }
    let layout = Marbles.Layout([expected, actual])
    let caret = String(repeating: " ", count: layout.offset(of: firstDifference))
    var text = """
      Marbles differ at tick \(firstDifference):
        expected  \(layout.line(expected))
        actual    \(layout.line(actual))
                  \(caret)^
      """
    if !unnamedValues.isEmpty {
      text += "\n  ? = " + unnamedValues.joined(separator: ", ")
    }
    return text
  }
}
