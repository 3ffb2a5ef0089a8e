import Foundation
import Sluice
import SluiceTesting

/// Everything a pipeline that cannot fail publishes, read with `for await … in pipeline.values`.
func valuesOf<P: Publisher>(_ pipeline: P) async -> [P.Output] where P.Failure == Never {
  var output: [P.Output] = []
  for await value in pipeline.values { output.append(value) }
  return output
}

/// What a pipeline that can fail publishes, then how it ended, read with `for try await`.
func outcomeOf<P: Publisher>(_ pipeline: P) async -> String {
  var output: [P.Output] = []
  do {
    for try await value in pipeline.values { output.append(value) }
    return "\(output), finished"
  } catch {
    return "\(output), failed: \(error)"
  }
}

/// An error for the examples.
struct TourError: Error, CustomStringConvertible {
  let reason: String
  var description: String { reason }
}

/// Mapping operators, each pipeline consumed from a task with `for await`.
@Sendable func mappingTour() async -> [String] {
  struct Reading: Sendable {
    let sensor: String
    let celsius: Double
  }
  let readings = [Reading(sensor: "a", celsius: 21.5), Reading(sensor: "b", celsius: 19)]
  // Erased, so each operator streams: on `Publishers.Sequence` itself, Combine computes most
  // operators up front and returns another `Publishers.Sequence`.
  let numbers = (1...4).publisher.eraseToAnyPublisher()
  return [
    "map: \(await valuesOf(numbers.map { $0 * 10 }))",
    "tryMap: \(await outcomeOf(numbers.tryMap { n in if n == 3 { throw TourError(reason: "3!") }; return n }))",
    "map(\\.sensor): \(await valuesOf(readings.publisher.map(\.sensor)))",
    "map(\\.sensor, \\.celsius): \(await valuesOf(readings.publisher.map(\.sensor, \.celsius)).map { "\($0)=\($1)" })",
    "map(three key paths): \(await valuesOf(readings.publisher.map(\.sensor, \.celsius, \.sensor.count)).map { "\($0)\($1)\($2)" })",
    "mapError: \(await outcomeOf(Fail<Int, TourError>(error: TourError(reason: "io")).mapError { TourError(reason: "wrapped \($0)") }))",
    "replaceNil: \(await valuesOf([1, nil, 3].publisher.eraseToAnyPublisher().replaceNil(with: 0)))",
    "scan: \(await valuesOf(numbers.scan(0, +)))",
    "tryScan: \(await outcomeOf(numbers.tryScan(0) { sum, n in if sum > 2 { throw TourError(reason: "too big") }; return sum + n }))",
    "setFailureType: \(await outcomeOf(Just(1).setFailureType(to: TourError.self)))",
  ]
}

/// Filtering operators.
@Sendable func filteringTour() async -> [String] {
  // Erased, so each operator streams: on `Publishers.Sequence` itself, Combine computes most
  // operators up front and returns another `Publishers.Sequence`.
  let numbers = (1...6).publisher.eraseToAnyPublisher()
  return [
    "filter: \(await valuesOf(numbers.filter { $0.isMultiple(of: 2) }))",
    "tryFilter: \(await outcomeOf(numbers.tryFilter { n in if n == 5 { throw TourError(reason: "5!") }; return n > 2 }))",
    "compactMap: \(await valuesOf(["1", "x", "3"].publisher.compactMap { Int($0) }))",
    "tryCompactMap: \(await outcomeOf(["1", "x"].publisher.tryCompactMap { s in guard let n = Int(s) else { throw TourError(reason: "not a number: \(s)") }; return n }))",
    "removeDuplicates: \(await valuesOf([1, 1, 2, 2, 1].publisher.removeDuplicates()))",
    "removeDuplicates(by:): \(await valuesOf([1, 2, 11, 12, 3].publisher.removeDuplicates { $0 / 10 == $1 / 10 }))",
    "tryRemoveDuplicates(by:): \(await outcomeOf([1, 1, 2].publisher.tryRemoveDuplicates { a, b in if b == 2 { throw TourError(reason: "2!") }; return a == b }))",
    "replaceEmpty: \(await valuesOf(Empty<Int, Never>().replaceEmpty(with: 0)))",
    "replaceError: \(await valuesOf(Fail<Int, TourError>(error: TourError(reason: "x")).replaceError(with: -1)))",
  ]
}

/// Reducing, mathematical and matching operators.
@Sendable func reducingTour() async -> [String] {
  // Erased, so each operator streams: on `Publishers.Sequence` itself, Combine computes most
  // operators up front and returns another `Publishers.Sequence`.
  let numbers = [3, 1, 4, 1, 5].publisher.eraseToAnyPublisher()
  return [
    "collect(): \(await valuesOf(numbers.collect()))",
    "collect(2): \(await valuesOf(numbers.collect(2)))",
    "ignoreOutput: \(await valuesOf(numbers.ignoreOutput()).count) values, then finished",
    "reduce: \(await valuesOf(numbers.reduce(0, +)))",
    "tryReduce: \(await outcomeOf(numbers.tryReduce(0) { sum, n in if n == 5 { throw TourError(reason: "5!") }; return sum + n }))",
    "count: \(await valuesOf(numbers.count()))",
    "min / max: \(await valuesOf(numbers.min())) \(await valuesOf(numbers.max()))",
    "min(by:) / max(by:): \(await valuesOf(numbers.min { $0 > $1 })) \(await valuesOf(numbers.max { $0 > $1 }))",
    "tryMin(by:) / tryMax(by:): \(await outcomeOf(numbers.tryMin(by: <))) / \(await outcomeOf(numbers.tryMax { _, _ in throw TourError(reason: "no order") }))",
    "contains(4): \(await valuesOf(numbers.contains(4)))",
    "contains(where:): \(await valuesOf(numbers.contains { $0 > 9 }))",
    "tryContains(where:): \(await outcomeOf(numbers.tryContains { $0 == 4 }))",
    "allSatisfy: \(await valuesOf(numbers.allSatisfy { $0 > 0 }))",
    "tryAllSatisfy: \(await outcomeOf(numbers.tryAllSatisfy { $0 < 4 }))",
  ]
}

/// Sequence operators: picking values by position or predicate.
@Sendable func sequenceTour() async -> [String] {
  let letters = ["a", "b", "c", "d", "e"].publisher
  return [
    "first / last: \(await valuesOf(letters.first())) \(await valuesOf(letters.last()))",
    "first(where:) / last(where:): \(await valuesOf(letters.first { $0 > "b" })) \(await valuesOf(letters.last { $0 < "d" }))",
    "tryFirst(where:) / tryLast(where:): \(await outcomeOf(letters.tryFirst { $0 == "c" })) / \(await outcomeOf(letters.tryLast { _ in throw TourError(reason: "no") }))",
    "output(at: 1): \(await valuesOf(letters.output(at: 1)))",
    "output(in: 1...3): \(await valuesOf(letters.output(in: 1...3)))",
    "prefix(2): \(await valuesOf(letters.prefix(2)))",
    "prefix(while:): \(await valuesOf(letters.prefix { $0 < "c" }))",
    "tryPrefix(while:): \(await outcomeOf(letters.tryPrefix { $0 < "d" }))",
    "dropFirst(3): \(await valuesOf(letters.dropFirst(3)))",
    "drop(while:): \(await valuesOf(letters.drop { $0 < "c" }))",
    "tryDrop(while:): \(await outcomeOf(letters.tryDrop { s in if s == "b" { throw TourError(reason: "b!") }; return true }))",
    // On Just these are computed when applied, as in Combine: a Publishers.Sequence<[String], Never>.
    "Just.prepend / append: \(await valuesOf(Just("c").prepend("a", "b").append(["d"])))",
  ]
}

/// Error handling, side effects and coding, with an async sequence as the source.
@Sendable func errorsTour() async -> [String] {
  var lines: [String] = []
  // An AsyncThrowingStream through the bridge: its second element fails.
  func flaky() -> AsyncThrowingStream<Int, any Error> {
    AsyncThrowingStream { continuation in
      continuation.yield(1)
      continuation.finish(throwing: TourError(reason: "network"))
    }
  }
  lines.append("catch: \(await valuesOf(flaky().publisher.catch { _ in Just(-1) }))")
  lines.append(
    "tryCatch: \(await outcomeOf(flaky().publisher.tryCatch { error -> Just<Int> in throw TourError(reason: "gave up after \(error)") }))"
  )
  let attempts = AttemptCounter()
  let retried = Deferred {
    attempts.increment()
    return Fail<Int, TourError>(error: TourError(reason: "attempt failed"))
  }.retry(2)
  lines.append("retry(2): \(await outcomeOf(retried)) after \(attempts.value) attempts")
  lines.append(
    "assertNoFailure: \(await valuesOf(Just(7).setFailureType(to: TourError.self).assertNoFailure()))"
  )

  let log = EventLog()
  let handled = (1...2).publisher.handleEvents(
    receiveOutput: { log.add("saw \($0)") }, receiveCompletion: { _ in log.add("done") })
  _ = await valuesOf(handled)
  lines.append("handleEvents: \(log.entries)")
  let printed = EventLog()
  _ = await valuesOf(Just(1).print("just", to: printed))
  lines.append("print: \(printed.entries)")
  lines.append(
    "breakpoint (never true): \(await valuesOf(Just(2).breakpoint(receiveOutput: { _ in false })))")
  lines.append("breakpointOnError: \(await valuesOf(Just(3).breakpointOnError()))")

  struct Point: Codable, Sendable {
    let x: Int
    let y: Int
  }
  // Sorted keys: JSONEncoder's key order is otherwise unspecified (it varies run to run).
  let encoder = JSONEncoder()
  encoder.outputFormatting = .sortedKeys
  let json = [Point(x: 1, y: 2)].publisher.encode(encoder: encoder)
    .map { String(decoding: $0, as: UTF8.self) }
  lines.append("encode: \(await outcomeOf(json))")
  let decoded = [Data(#"{"x":3,"y":4}"#.utf8)].publisher
    .decode(type: Point.self, decoder: JSONDecoder()).map { "(\($0.x), \($0.y))" }
  lines.append("decode: \(await outcomeOf(decoded))")
  return lines
}

/// Counts attempts (the tour runs on one task at a time).
final class AttemptCounter: @unchecked Sendable {
  // Safety: used from one task at a time in the tour.
  private(set) var value = 0
  func increment() { value += 1 }
}

/// Lines written by hooks and `print` (one task at a time in the tour).
final class EventLog: TextOutputStream, @unchecked Sendable {
  // Safety: used from one task at a time in the tour.
  private(set) var entries: [String] = []
  func add(_ entry: String) { entries.append(entry) }
  func write(_ string: String) {
    let line = string.trimmingCharacters(in: .newlines)
    if !line.isEmpty { entries.append(line) }
  }
}
