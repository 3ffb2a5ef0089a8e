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
  return lines
}
