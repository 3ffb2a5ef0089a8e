import Dispatch
import SearchApp
import Sluice
import SluiceTesting

/// The app-shaped example (`Examples/SearchApp`): a main-actor view model searching as the user
/// types, on virtual time.
@MainActor func searchAppTour() async -> [String] {
  var lines: [String] = []
  let catalog = Catalog(items: ["Swift", "Swiftly", "Sluice", "Combine", "Structured concurrency"])
  let scheduler = DispatchQueue.test
  let model = SearchViewModel(service: catalog, scheduler: scheduler, pause: .milliseconds(300))
  let history = SearchHistory()
  model.record(into: history)

  // `for await` over @Published sees every keystroke, even those made inside its body.
  let typed = await model.nextQueries(3, typing: ["s", "sw", "swi"])
  lines.append("for await saw \(typed)")
  scheduler.advance(by: .milliseconds(300))  // the user pauses: one search
  let results = (try? await model.firstResults()) ?? []
  lines.append("after a 300 ms pause: searched \(await catalog.searched), results \(results)")
  while await history.queries.count < 3 { await Task.yield() }
  lines.append("the history actor, in order: \(await history.queries)")
  if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) {
    lines += await observableSearchTour(catalog: catalog)
  }
  return lines
}

/// The same screen as an `@Observable` model: its `query` drives the pipeline through
/// `ObservationPublisher`, and the pipeline sets its `results` on the main actor.
@available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *)
@MainActor func observableSearchTour(catalog: Catalog) async -> [String] {
  var lines: [String] = []
  let scheduler = DispatchQueue.test
  let screen = ObservableSearchModel(
    service: catalog, scheduler: scheduler, pause: .milliseconds(300))
  for query in ["swi", "slu"] {
    screen.query = query
    // The observation runs on the main actor once this code yields; debounce then waits for a
    // pause of 300 ms (virtual time, moved on here once debounce has scheduled its timer).
    while !screen.results.contains(where: { $0.lowercased().contains(query) }) {
      if scheduler.pendingActionCount > 0 { scheduler.advance(by: .milliseconds(300)) }
      await Task.yield()
    }
    lines.append(
      "@Observable query \"\(query)\" → results set on the main actor: \(screen.results)")
  }
  return lines
}
