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

  // zip pairs in order; combineLatest combines the newest of each, awaited with `values`.
  let pairs = try? await ["a", "b", "c"].publisher.zip((1...).publisher).map { "\($0)\($1)" }
    .allValues()
  lines.append("zip: \(pairs ?? [])")
  // combineLatest: a subject's newest value combined with each of the other's, from an actor.
  let width = CurrentValueSubject<Int, Never>(2)
  let heights = [3, 4, 5]
  let areas = await Room().areas(width: width, heights: heights)
  lines.append("combineLatest(*) collected by an actor: \(areas)")

  // throttle on virtual time: at most one value a second, the latest of each second.
  let ticks = PassthroughSubject<Int, Never>()
  var throttled: [String] = []
  let throttle = ticks.throttle(for: .seconds(1), scheduler: scheduler, latest: true)
    .sink { throttled.append("\(at())ms:\($0)") }
  let throttleStart = at()
  for value in 1...6 {
    ticks.send(value)
    scheduler.advance(by: .milliseconds(400))
  }
  scheduler.advance(by: .seconds(1))
  throttle.cancel()
  lines.append(
    "throttle(1s, latest) of a value every 400ms from \(throttleStart)ms: \(throttled)")

  // append/prepend, drop(untilOutputFrom:), timeout and share.
  let framed = try? await [2, 3].publisher.prepend(1).append(4).allValues()
  lines.append("prepend(1).append(4): \(framed ?? [])")
  let quiet = PassthroughSubject<Int, TimeoutError>()
  var outcome = ""
  let watchdog = quiet.timeout(.seconds(5), scheduler: scheduler, customError: { TimeoutError() })
    .sink {
      outcome = "\($0)"
    } receiveValue: { _ in
    }
  scheduler.advance(by: .seconds(5))
  watchdog.cancel()
  lines.append("timeout(5s) of a silent source: \(outcome)")
  var runs = 0
  let shared = Deferred {
    runs += 1
    return Just("expensive")
  }.delay(for: .seconds(1), scheduler: scheduler).share()
  var received: [String] = []
  let first = shared.sink { received.append("first: \($0)") }
  let second = shared.sink { received.append("second: \($0)") }
  scheduler.advance(by: .seconds(1))
  _ = (first, second)
  lines.append("share(): the work ran \(runs) time(s) for \(received)")
  return lines
}

/// An actor awaiting a pipeline's values in its own isolation.
actor Room {
  private var seen: [Int] = []

  /// The pipeline is built here, so it never leaves the actor's isolation.
  func areas(width: CurrentValueSubject<Int, Never>, heights: [Int]) async -> [Int] {
    for await area in width.combineLatest(heights.publisher, *).prefix(3).values {
      seen.append(area)
    }
    return seen
  }
}

/// The error of the tour's `timeout`.
struct TimeoutError: Error, CustomStringConvertible {
  var description: String { "timed out" }
}
