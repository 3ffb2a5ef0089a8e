import Dispatch
import SluiceAsync
import SluiceCore
import Testing

/// Updating main-actor state from a pipeline, as a `@MainActor` view model does (in Swift 6
/// mode this file does not compile unless the closures are main-actor isolated).
@Suite("Main-actor state from a pipeline")
struct MainActorSinkTests {
  @MainActor final class SearchModel {
    var results: [String] = []
    var completed = false
    var viaScheduler: [String] = []
    var viaMainQueue: [String] = []
    var cancellables: [AnyCancellable] = []

    /// The closures hold the model weakly, as a model's own subscriptions must: the model holds
    /// them (`cancellables`), so a strong capture would keep both alive for good.
    func start(_ queries: PassthroughSubject<String, Never>) {
      cancellables.append(
        queries.map { $0.uppercased() }.sink(
          isolatedTo: MainActor.shared,
          receiveCompletion: { [weak self] _, _ in self?.completed = true },
          receiveValue: { [weak self] _, found in self?.results.append(found) }))
      cancellables.append(
        queries.receive(on: ActorScheduler(MainActor.shared)).sink { [weak self] in
          self?.viaScheduler.append($0)
        })
      cancellables.append(
        queries.receive(on: DispatchQueue.main).sink { [weak self] in
          self?.viaMainQueue.append($0)
        })
    }
  }

  @Test @MainActor func sinkIsolatedToTheMainActorUpdatesAViewModel() async {
    let queries = PassthroughSubject<String, Never>()
    let model = SearchModel()
    model.start(queries)
    for query in ["a", "b", "c"] { queries.send(query) }
    queries.send(completion: .finished)
    #expect(await eventually { model.completed })
    #expect(model.results == ["A", "B", "C"])
  }

  @Test @MainActor func receiveOnTheMainActorThenAPlainSink() async {
    let queries = PassthroughSubject<String, Never>()
    let model = SearchModel()
    model.start(queries)
    for query in ["a", "b", "c"] { queries.send(query) }
    #expect(await eventually { model.viaScheduler.count == 3 })
    #expect(model.viaScheduler == ["a", "b", "c"])
    #expect(await eventually { model.viaMainQueue.count == 3 })
    #expect(model.viaMainQueue == ["a", "b", "c"])
  }

  @Test func sendingFromAnotherThreadKeepsOrderOnTheMainActor() async {
    let queries = PassthroughSubject<String, Never>()
    let model = await SearchModel()
    await model.start(queries)
    await Task.detached {
      for index in 0..<200 { queries.send("\(index)") }
    }.value
    #expect(await eventually { await model.results.count == 200 })
    #expect(await model.results == (0..<200).map { "\($0)" })
    #expect(await eventually { await model.viaScheduler.count == 200 })
    #expect(await model.viaScheduler == (0..<200).map { "\($0)" })
  }
}
