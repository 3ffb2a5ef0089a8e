import Dispatch
import SluiceCore
import SluiceTesting
import Testing

/// Marble checks called the way an app's tests call them: from a `@MainActor` test of a view
/// model whose pipeline captures the (non-Sendable) model, and from inside an actor that checks
/// a pipeline built from its own state.
@Suite("Marble diagrams from the main actor and from an actor")
struct MarbleIsolationTests {
  @Test("a main-actor view model's debounced search, checked as a diagram")
  @MainActor func fromTheMainActor() throws {
    let scheduler = DispatchQueue.test
    let model = QueryFormatter(prefix: "q:")
    let typed = try scheduler.coldPublisher(
      "-a-b----c----|", values: ["a": "s", "b": "sw", "c": "swi"])
    let searches = typed.debounce(for: .seconds(3), scheduler: scheduler)
      .map { model.format($0) }
    let check = try scheduler.checkMarbles(
      searches, expected: "------x----y-|", values: ["x": "q:sw", "y": "q:swi"])
    #expect(check.matches, "\(check)")
  }

  @Test("a mismatch found from the main actor names its tick")
  @MainActor func aMismatchFromTheMainActor() throws {
    let scheduler = DispatchQueue.test
    let model = QueryFormatter(prefix: "q:")
    let typed = try scheduler.coldPublisher("-a|", values: ["a": "s"])
    let check = try scheduler.checkMarbles(
      typed.map { model.format($0) }, expected: "--x|", values: ["x": "q:s"])
    #expect(!check.matches)
    #expect(check.firstDifference == 1)
  }

  @Test("an actor checks a pipeline built from its own state")
  func fromAnActor() async throws {
    let matches = try await MarbleCheckingActor().checkOwnPipeline()
    #expect(matches)
  }
}

/// A class an app's view model would own: not `Sendable`.
final class QueryFormatter {
  var prefix: String
  init(prefix: String) { self.prefix = prefix }
  func format(_ query: String) -> String { prefix + query }
}

/// An actor whose pipeline (capturing its own class instance) is checked from inside it.
actor MarbleCheckingActor {
  let formatter = QueryFormatter(prefix: "#")

  func checkOwnPipeline() throws -> Bool {
    let scheduler = DispatchQueue.test
    let source = try scheduler.coldPublisher("-a-a-b|", values: ["a": "x", "b": "y"])
    let check = try scheduler.checkMarbles(
      source.removeDuplicates().map { [formatter] in formatter.format($0) },
      expected: "-a---b|", values: ["a": "#x", "b": "#y"])
    return check.matches
  }
}
