import Observation

/// A publisher of a value computed from `@Observable` models: the value when the first demand
/// arrives, then the value after every change to the properties it reads — the bridge from
/// Swift's Observation to pipelines, for models that moved from `ObservableObject`/`@Published`
/// to `@Observable`.
///
/// ![Marble diagram: ObservationPublisher { dial.level }](observation)
///
/// ```swift
/// @Observable @MainActor final class SearchModel {
///   var query = ""
/// }
///
/// @MainActor func searches(_ model: SearchModel) -> some Publisher<String, Never> {
///   ObservationPublisher { model.query }          // isolated to the main actor, as written
///     .debounce(for: .milliseconds(300), scheduler: DispatchQueue.main)
///     .removeDuplicates()
/// }
/// ```
///
/// **What counts as a change**: the observation of Swift's `Observations`, which this publisher
/// pulls: the closure runs on its own isolation (the main actor above, inherited from where it is
/// written), and changes made within one synchronous stretch of that isolation are seen as one —
/// the value after them (`model.query = "a"; model.query = "ab"` publishes `"ab"`).
///
/// **Demand**: nothing is observed until the first request, which starts a task iterating the
/// observation; each unit of demand takes the next change. A subscriber without demand is not
/// sent stale values: when it asks again it gets the current value if anything changed meanwhile
/// (the changes in between coalesce), otherwise the next change. It is a `HotPublisher`, so the
/// bridges (`values`, `stream()`, `sink(isolatedTo:)`) request `.unlimited` and buffer: a
/// `for await` loop over its `values` sees every change even while its body runs — lossless by
/// default, like subjects and `@Published`. **Ordering**: the order of the changes; all signals
/// come from the one task. **Cancellation**: `cancel()` cancels the task, which ends the
/// observation, and releases the subscriber at once. **Completion**: none — an observation does
/// not end when a model it reads goes away (nor does `Observations`' iteration), so `cancel()`
/// ends it; until then the task keeps what the closure captures alive. Each subscriber has its
/// own observation.
@available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *)
public struct ObservationPublisher<Output: Sendable>: Publisher, Sendable {
  public typealias Failure = Never

  /// Computes the published value, on the closure's isolation.
  public let emit: @isolated(any) @Sendable () -> Output

  /// A publisher of the value `emit` computes, re-computed after every change to the
  /// observable properties it reads. `emit` runs on the isolation of the code that writes it
  /// (as `Observations`' closure does), so `ObservationPublisher { model.query }` written on the
  /// main actor reads a main-actor model there.
  public init(@_inheritActorContext _ emit: @escaping @isolated(any) @Sendable () -> Output) {
    self.emit = emit
  }

  public func receive<S: Subscriber>(subscriber: S)
  where S.Input == Output, S.Failure == Never {
    TaskDrivenSubscription.attach(
      subscriber, description: "Observation", priority: nil,
      body: { [emit] feed in await Self.observe(emit, into: feed, on: emit.isolation) })
  }

  /// The task's body, run on the closure's isolation (one hop there, none per value): the
  /// observation re-computes the value there, and the value is delivered from there.
  static func observe(
    _ emit: @escaping @isolated(any) @Sendable () -> Output,
    into feed: any ValueFeed<Output, Never>, on isolation: isolated (any Actor)?
  ) async {
    var iterator = Observations(emit).makeAsyncIterator()
    while true {
      // `reserveNow()` first: the async `reserve()` would leave this isolation for each value.
      var reserved = feed.reserveNow()
      if reserved == nil { reserved = await feed.reserve() }
      guard reserved == true else { return }
      guard let value = await iterator.next(isolation: isolation) else {
        feed.finish(.finished)
        return
      }
      guard feed.deliver(value) else { return }
    }
  }
}

@available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *)
extension ObservationPublisher: HotPublisher {}
