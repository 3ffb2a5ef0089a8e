import SluiceExamples
import Testing

/// The tour's output is part of the documentation: a change that alters it must update this.
@Suite("Examples tour")
struct TourTests {
  @Test func tourPrintsWhatTheReadmeShows() async {
    let output = await runTour()
    #expect(output == expectedTour)
  }
}

let expectedTour: [String] = [
  "== Just and Sequence.publisher, demand by demand",
  "Just delivered 42",
  "after .max(3): [1, 2, 3]",
  "after .max(2) more: [1, 2, 3, 4, 5]",
  "Result, Optional, nil: [7, 8]",
  "== Subjects: each subscriber at its own pace",
  "unlimited demand got [100, 101, 99, 102], then finished",
  "demand of 2 got [100, 101]: the rest was dropped, as in Combine",
  "CurrentValueSubject subscriber saw [\"idle\", \"ready\"]",
  "autoconnect: [\"left saw AAPL\", \"right saw AAPL\", \"right saw MSFT\"]",
  "== Future and AsyncFuture, awaited from a task",
  "awaited 42 from a Future",
  "a later subscriber got [42] without re-running it",
  "AsyncFuture ran 0 times before anyone asked, then: computed on demand",
  "== @Published and ObservableObject",
  "$target: 20",
  "objectWillChange (target is still 20)",
  "$target: 22",
  "objectWillChange (target is still 22)",
  "objectWillChange (target is still 22)",
  "$target: 23",
  "objectWillChange (target is still 23)",
  "$target: 24",
  "after assign(to:), target is 24, mode is cool",
  "== Schedulers: virtual time and a dispatch queue",
  "tick at 0.0s",
  "tick at 0.5s",
  "1s: first",
  "tick at 1.0s",
  "2s: second",
  "virtual clock now at +6s",
  "DispatchQueue ran actions in order: [1, 2, 3]",
  "== Record, and the rule checker catching a misbehaving publisher",
  "Record played back [\"subscription([\\\"a\\\", \\\"b\\\"])\", \"value(a)\", \"value(b)\", \"finished\"]",
  "violations from Record: 0",
  "Rule broken (more values than demanded): value #2 (2) with only max(1) demanded",
  "== Bridges: publishers and async/await",
  "for await over (1...5).publisher.values: [1, 4, 9, 16, 25]",
  "a subject's values, nothing lost: [\"tap\", \"swipe\", \"tap\"]",
  "prefetch(4) asked for [max(4)], held 4, the consumer took 1",
  "AsyncStream → publisher → allValues(): [\"async\", \"to\", \"publisher\"]",
  "AsyncProducer countdown: [3, 2, 1]",
  "firstValue 10, lastValue 20",
  "singleValue() of Empty: the publisher finished without a value",
  "== Actors and pipelines",
  "sink(isolatedTo:) delivered [3, 1, 4, 1, 5] to the actor, in order",
  "ActorScheduler ran actions on the actor in order: [10, 20, 30, 40, 50]",
  "a stored Task was cancelled with the other cancellables",
]
