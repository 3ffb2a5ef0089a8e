import Dispatch
import SearchApp
import Sluice
import SluiceTesting
import Testing

/// The app-shaped example behaves as an app needs: one search per pause, the newest search wins,
/// results land on the main actor, the history actor and `for await` see every query.
@Suite("Search app example")
@MainActor
struct SearchAppTests {
  let items = ["Swift", "Swiftly", "Sluice", "Combine", "Structured concurrency"]

  /// Polls on the main actor, yielding it (the pipeline's tasks need it free); the deadline
  /// guards against a hang only (with the cores busy, a count of yields ran out first).
  func eventually(_ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(900)
    while ContinuousClock.now < deadline {
      if await condition() { return true }
      await Task.yield()
    }
    return await condition()
  }

  @Test func onePausedQueryIsSearchedAndItsResultsLandOnTheMainActor() async throws {
    let catalog = Catalog(items: items)
    let scheduler = DispatchQueue.test
    let model = SearchViewModel(service: catalog, scheduler: scheduler, pause: .milliseconds(300))
    let start = scheduler.now
    for (text, at) in [("s", 0), ("sw", 100), ("swi", 200)] {
      scheduler.advance(to: start.advanced(by: .milliseconds(at)))
      model.query = text
    }
    scheduler.advance(by: .milliseconds(299))
    #expect(await catalog.searched.isEmpty)  // still typing
    scheduler.advance(by: .milliseconds(1))
    #expect(try await model.firstResults() == ["Swift", "Swiftly"])
    #expect(await catalog.searched == ["swi"])
    model.query = "swi"  // the same query again: not searched again
    scheduler.advance(by: .seconds(1))
    #expect(await catalog.searched == ["swi"])
  }

  @Test func aNewerQueryCancelsTheSearchInFlight() async throws {
    // A search slower than any machine running this test: only cancellation ends it early.
    let catalog = Catalog(items: items, latency: .seconds(3_600))
    let scheduler = DispatchQueue.test
    let model = SearchViewModel(service: catalog, scheduler: scheduler, pause: .milliseconds(300))
    var seen: [[String]] = []
    let watching = model.$results.dropFirst().sink { seen.append($0) }
    model.query = "sw"
    scheduler.advance(by: .milliseconds(300))
    #expect(await eventually { await catalog.searched == ["sw"] })
    model.query = "struct"
    scheduler.advance(by: .milliseconds(300))
    #expect(await eventually { await catalog.cancelled == ["sw"] })
    #expect(await catalog.searched == ["sw", "struct"])
    #expect(seen.isEmpty)  // the first search's answer never lands; the second is running
    watching.cancel()
  }

  @Test func theHistoryActorGetsEveryQueryInOrder() async {
    let model = SearchViewModel(
      service: Catalog(items: items), scheduler: DispatchQueue.test, pause: .seconds(1))
    let history = SearchHistory()
    model.record(into: history)
    for text in ["c", "co", "com", "comb"] { model.query = text }
    #expect(await eventually { await history.queries.count == 4 })
    #expect(await history.queries == ["c", "co", "com", "comb"])
  }

  @Test func forAwaitOverPublishedSeesEveryAssignment() async {
    let model = SearchViewModel(
      service: Catalog(items: items), scheduler: DispatchQueue.test, pause: .seconds(1))
    #expect(await model.nextQueries(3, typing: ["a", "b", "c"]) == ["a", "b", "c"])
  }

  @Test func aMainActorTaskAwaitsAChain() async throws {
    let model = SearchViewModel(
      service: Catalog(items: items), scheduler: ImmediateScheduler.shared, pause: .zero)
    let results = Task { @MainActor in try await model.firstResults() }
    model.query = "sl"
    #expect(try await results.value == ["Sluice"])
  }

  @available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *)
  @Test func anObservableModelDrivesThePipelineAndThePipelineSetsTheModel() async throws {
    let catalog = Catalog(items: items)
    let scheduler = DispatchQueue.test
    let screen = ObservableSearchModel(
      service: catalog, scheduler: scheduler, pause: .milliseconds(300))
    screen.query = "sw"
    screen.query = "swi"  // one main-actor turn: observed once, as "swi"
    #expect(await eventually { scheduler.pendingActionCount > 0 })  // debounce is waiting
    scheduler.advance(by: .milliseconds(299))
    #expect(await catalog.searched.isEmpty)
    scheduler.advance(by: .milliseconds(1))
    #expect(await eventually { screen.results == ["Swift", "Swiftly"] })
    #expect(await catalog.searched == ["swi"])

    // Two assignments in one main-actor turn: observed once, as "com".
    screen.query = "swi"
    screen.query = "com"
    #expect(await eventually { scheduler.pendingActionCount > 0 })
    scheduler.advance(by: .milliseconds(300))
    #expect(await eventually { screen.results == ["Combine"] })
    #expect(await catalog.searched == ["swi", "com"])
  }
}
