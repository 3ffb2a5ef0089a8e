import Dispatch
import Sluice
import SluiceTesting

/// A `Future` whose promise is called from a dispatch queue, awaited from structured
/// concurrency with Combine's `value`, and its lazy async counterpart, `AsyncFuture`.
@Sendable func futureTour() async -> [String] {
  let answer = Future<Int, Never> { promise in
    DispatchQueue.global().async { promise(.success(6 * 7)) }
  }
  let value = await answer.value
  // A second subscriber gets the same, already-computed result.
  var again: [Int] = []
  _ = answer.sink { again.append($0) }

  // AsyncFuture runs its async closure per subscriber, on first demand, and cancels it on cancel.
  let runs = Counter()
  let lazy = AsyncFuture<String, Never> {
    await runs.increment()
    return "computed on demand"
  }
  let before = await runs.count
  let computed = (try? await lazy.firstValue()) ?? "?"
  return [
    "awaited \(value) from a Future",
    "a later subscriber got \(again) without re-running it",
    "AsyncFuture ran \(before) times before anyone asked, then: \(computed)",
  ]
}

/// A tiny actor for the tour's examples.
actor Counter {
  private(set) var count = 0
  func increment() { count += 1 }
}
