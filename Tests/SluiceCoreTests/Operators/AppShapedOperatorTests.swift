import Dispatch
import SluiceCore
import SluiceTesting
import Testing

/// The new operators called the way an app calls them, in Swift 6 mode: from a `@MainActor`
/// view model whose sink closure captures it, and from an actor.
@MainActor
final class SearchModel {
  var query = PassthroughSubject<String, Never>()
  private(set) var results: [String] = []
  private var cancellable: AnyCancellable?

  /// `scheduler` is `DispatchQueue.main` in the app and a test scheduler here.
  func start<S: Scheduler>(on scheduler: S) {
    cancellable = query.removeDuplicates()
      .debounce(for: .milliseconds(300), scheduler: scheduler)
      .map { text in Just("results for \(text)") }
      .switchToLatest()
      .receive(on: scheduler)
      .sink { [weak self] in self?.results.append($0) }
  }

  /// The shape an app writes with the real main queue (compiled, not run here).
  func startOnMain() {
    start(on: DispatchQueue.main)
  }
}

actor Catalogue {
  private var names: [Int: String] = [:]

  func load(_ ids: [Int]) -> [String] {
    var loaded: [String] = []
    _ = ids.publisher
      .flatMap(maxPublishers: .max(2)) { id in Just("item \(id)") }
      .merge(with: Just("header"))
      .sink { loaded.append($0) }
    for (index, name) in loaded.enumerated() { names[index] = name }
    return loaded
  }
}

@Suite("New operators from app-shaped code")
struct AppShapedOperatorTests {
  @MainActor @Test func aMainActorViewModelDebouncesAndSwitches() {
    let scheduler = DispatchQueue.test
    let model = SearchModel()
    model.start(on: scheduler)
    model.query.send("s")
    scheduler.advance(by: .milliseconds(100))
    model.query.send("sl")
    scheduler.advance(by: .milliseconds(300))
    #expect(model.results == ["results for sl"])
  }

  @Test func anActorMergesAndFlatMaps() async {
    let loaded = await Catalogue().load([1, 2, 3])
    #expect(loaded.sorted() == ["header", "item 1", "item 2", "item 3"])
  }
}
