// An app-shaped example, compiled in Swift 6 language mode with warnings as errors: a main-actor
// view model fed by a search-as-you-type pipeline, an actor fed by a pipeline in order, a
// `for await` loop over a `@Published` property, main-actor code awaiting an operator chain, and
// the same screen as an `@Observable` model.
public import Observation
public import Sluice

/// What the app searches: async and cancellable (a network API in a real app).
public protocol SearchService: Sendable {
  func search(_ query: String) async throws -> [String]
}

/// A catalogue searched after a delay; it remembers the queries it was asked.
public actor Catalog: SearchService {
  let items: [String]
  let latency: Duration
  /// The queries searched, in order.
  public private(set) var searched: [String] = []
  /// The searches cancelled before they answered.
  public private(set) var cancelled: [String] = []

  /// A catalogue of `items` that answers after `latency`.
  public init(items: [String], latency: Duration = .zero) {
    self.items = items
    self.latency = latency
  }

  public func search(_ query: String) async throws -> [String] {
    searched.append(query)
    if latency > .zero {
      do {
        try await Task.sleep(for: latency)
      } catch {
        cancelled.append(query)
        throw error
      }
    }
    return items.filter { $0.lowercased().contains(query.lowercased()) }
  }
}

/// The search screen's state. Typing updates `query`; once the user pauses, the query is
/// searched (a newer query cancels an older search) and `results` is set on the main actor.
@MainActor
public final class SearchViewModel: ObservableObject {
  /// What the user typed.
  @Published public var query = ""
  /// The latest search's results.
  @Published public private(set) var results: [String] = []
  private var cancellables: [AnyCancellable] = []

  /// Searches `service` for each query the user pauses on for `pause` of `scheduler`'s time.
  public init<S: Scheduler>(
    service: any SearchService, scheduler: S, pause: S.SchedulerTimeType.Stride
  ) {
    $query
      .debounce(for: pause, scheduler: scheduler)
      .removeDuplicates()
      .filter { !$0.isEmpty }
      .map { query in AsyncFuture { try await service.search(query) }.replaceError(with: []) }
      .switchToLatest()
      .receive(on: ActorScheduler(MainActor.shared))
      .sink { [weak self] found in self?.results = found }  // main-actor state, plain sink
      .store(in: &cancellables)
  }

  /// Feeds every query typed to `history`, in order, on the actor.
  public func record(into history: SearchHistory) {
    $query.dropFirst()
      .sink(isolatedTo: history) { history, query in history.add(query) }
      .store(in: &cancellables)
  }

  /// The next `count` queries typed, seen by a `for await` loop (none is lost while the loop
  /// body runs: `@Published` is a hot publisher, bridged losslessly).
  public func nextQueries(_ count: Int, typing: [String]) async -> [String] {
    var seen: [String] = []
    var typed = false
    for await query in $query.values {
      if !typed {
        typed = true
        for text in typing { self.query = text }  // typed while the loop body runs
        continue
      }
      seen.append(query)
      if seen.count == count { break }
    }
    return seen
  }

  /// The first non-empty results, awaited on the main actor.
  public func firstResults() async throws -> [String] {
    try await $results.first { !$0.isEmpty }.map { $0.sorted() }.firstValue()
  }
}

/// The queries a user typed, kept by an actor fed from a pipeline.
public actor SearchHistory {
  /// Every query, in the order typed.
  public private(set) var queries: [String] = []

  public init() {}

  func add(_ query: String) { queries.append(query) }
}

/// The same screen as an `@Observable` model — where apps are moving from `ObservableObject` — in
/// both directions: the model's `query` drives the pipeline (``ObservationPublisher``), and the
/// pipeline sets the model's `results` on the main actor (`sink(isolatedTo:)`).
@available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *)
@Observable @MainActor
public final class ObservableSearchModel {
  /// What the user typed.
  public var query = ""
  /// The latest search's results.
  public private(set) var results: [String] = []
  @ObservationIgnored private var cancellable: AnyCancellable?

  /// Searches `service` for each query the user pauses on for `pause` of `scheduler`'s time.
  public init<S: Scheduler>(
    service: any SearchService, scheduler: S, pause: S.SchedulerTimeType.Stride
  ) {
    cancellable = ObservationPublisher { [weak self] in self?.query ?? "" }
      .debounce(for: pause, scheduler: scheduler)
      .removeDuplicates()
      .filter { !$0.isEmpty }
      .map { query in AsyncFuture { try await service.search(query) }.replaceError(with: []) }
      .switchToLatest()
      .sink(isolatedTo: MainActor.shared) { [weak self] _, found in self?.results = found }
  }
}
