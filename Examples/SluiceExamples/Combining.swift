import Dispatch
import Sluice
import SluiceTesting

/// Time, switching and merging: a search-as-you-type pipeline on virtual time, then `merge` and
/// `flatMap` awaited from async code.
@Sendable func combiningTour() async -> [String] {
  var lines: [String] = []

  // The view-model shape: typing → debounce → one search per quiet query → only the latest
  // search's results → delivered on the scheduler standing for the main queue (virtual time).
  let scheduler = DispatchQueue.test
  let start = scheduler.now
  let query = PassthroughSubject<String, Never>()
  func at() -> Int { Int(start.distance(to: scheduler.now).magnitude / 1_000_000) }
  let results = query.removeDuplicates()
    .debounce(for: .milliseconds(300), scheduler: scheduler)
    .map { text in Just("results for \"\(text)\"") }
    .switchToLatest()
    .receive(on: scheduler)
    .sink { lines.append("\(at())ms  \($0)") }
  for (delay, text) in [(0, "s"), (100, "sl"), (100, "slu"), (500, "slu"), (100, "sluice")] {
    scheduler.advance(by: .milliseconds(delay))
    lines.append("\(at())ms  typed \"\(text)\"")
    query.send(text)
  }
  scheduler.advance(by: .seconds(1))
  results.cancel()

  // merge: values as they come, from every upstream; awaited with allValues().
  let merged = try? await [1, 3, 5].publisher.merge(with: [2, 4].publisher).allValues()
  lines.append("merge: \(merged ?? [])")

  // flatMap(maxPublishers:): at most two async lookups at a time, awaited from a task.
  let lookups = try? await (1...4).publisher
    .flatMap(maxPublishers: .max(2)) { id in AsyncFuture { id * 100 } }
    .collect().firstValue()
  lines.append("flatMap(maxPublishers: .max(2)) with AsyncFuture: \((lookups ?? []).sorted())")
  return lines
}
