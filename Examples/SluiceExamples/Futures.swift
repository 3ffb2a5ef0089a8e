import Dispatch
import Sluice

/// A `Future` whose promise is called from a dispatch queue, awaited from structured
/// concurrency with a continuation (the bridges module will make this a one-liner).
@Sendable func futureTour() async -> [String] {
  let answer = Future<Int, Never> { promise in
    DispatchQueue.global().async { promise(.success(6 * 7)) }
  }
  let value = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
    let subscriber = AnySubscriber<Int, Never>(
      receiveSubscription: { $0.request(.max(1)) },
      receiveValue: {
        continuation.resume(returning: $0); return .none
      })
    answer.subscribe(subscriber)
  }
  // A second subscriber gets the same, already-computed result.
  var again: [Int] = []
  _ = answer.sink { again.append($0) }
  return [
    "awaited \(value) from a Future", "a later subscriber got \(again) without re-running it",
  ]
}
