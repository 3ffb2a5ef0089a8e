import Dispatch
import Foundation
import SluiceCore

/// A publisher under test, made fresh for each subscription, with the values it must deliver.
struct PublisherCase: Sendable, CustomStringConvertible {
  let description: String
  let expected: [Int]
  let make: @Sendable () -> AnyPublisher<Int, Never>
  /// Values arrive on another thread after `request` returns (`receive(on:)`): waits until
  /// every action the publisher has scheduled so far has run.
  var flush: (@Sendable () async -> Void)?
  /// Requests from several threads at once may skip values (combineLatest keeps the newest).
  var latestOnly = false

  /// Every finite, cold publisher of this module, for the shared rule suite.
  /// `RULE_ONLY=<description>` in the environment runs only that case.
  static let all: [PublisherCase] = (sources + operators).filter { each in
    ProcessInfo.processInfo.environment["RULE_ONLY"].map { each.description == $0 } ?? true
  }

  /// Sources and subjects.
  static let sources: [PublisherCase] = [
    PublisherCase(description: "Just", expected: [1]) { Just(1).eraseToAnyPublisher() },
    PublisherCase(description: "Sequence", expected: Array(1...20)) {
      (1...20).publisher.eraseToAnyPublisher()
    },
    PublisherCase(description: "Sequence(lazy map)", expected: [2, 4, 6, 8]) {
      [1, 2, 3, 4].lazy.map { $0 * 2 }.publisher.eraseToAnyPublisher()
    },
    PublisherCase(description: "Record", expected: [5, 6, 7]) {
      Record(output: [5, 6, 7], completion: .finished).eraseToAnyPublisher()
    },
    PublisherCase(description: "Optional.some", expected: [9]) {
      Optional(9).publisher.eraseToAnyPublisher()
    },
    PublisherCase(description: "Optional.none", expected: []) {
      Optional<Int>.none.publisher.eraseToAnyPublisher()
    },
    PublisherCase(description: "Result.success", expected: [3]) {
      Result<Int, Never>.success(3).publisher.eraseToAnyPublisher()
    },
    PublisherCase(description: "Empty", expected: []) { Empty().eraseToAnyPublisher() },
    PublisherCase(description: "Future(fulfilled)", expected: [4]) {
      Future { $0(.success(4)) }.eraseToAnyPublisher()
    },
    PublisherCase(description: "Future(fulfilled on another thread)", expected: [8]) {
      Future { promise in DispatchQueue.global().async { promise(.success(8)) } }
        .eraseToAnyPublisher()
    },
    PublisherCase(description: "Deferred", expected: [1, 2]) {
      Deferred { [1, 2].publisher }.eraseToAnyPublisher()
    },
    PublisherCase(description: "CurrentValueSubject(completed)", expected: []) {
      let subject = CurrentValueSubject<Int, Never>(0)
      subject.send(completion: .finished)
      return subject.eraseToAnyPublisher()
    },
  ]
}

extension PublisherCase {
  private static let numbers = Array(1...20)

  /// `(1...20).publisher` through `operator`, for the shared rule suite.
  private static func op(
    _ description: String, _ expected: [Int],
    _ apply: @escaping @Sendable (Publishers.Sequence<[Int], Never>) -> AnyPublisher<Int, Never>
  ) -> PublisherCase {
    PublisherCase(description: description, expected: expected) { apply(numbers.publisher) }
  }

  /// One case per operator (try-variants with closures that do not throw, made `Never`-failing
  /// with `assertNoFailure`, a pass-through).
  static let operators: [PublisherCase] = [
    op("map", numbers.map { $0 * 2 }) { $0.map { $0 * 2 }.eraseToAnyPublisher() },
    op("tryMap", numbers.map { $0 + 1 }) {
      $0.tryMap { $0 + 1 }.assertNoFailure().eraseToAnyPublisher()
    },
    op("map(keyPath)", numbers.map(\.bitWidth)) { $0.map(\.bitWidth).eraseToAnyPublisher() },
    op("map(keyPath, keyPath)", numbers.map { $0 * 2 }) {
      $0.map(\.self, \.self).map { $0 + $1 }.eraseToAnyPublisher()
    },
    op("map(keyPath ×3)", numbers.map { $0 * 3 }) {
      $0.map(\.self, \.self, \.self).map { $0 + $1 + $2 }.eraseToAnyPublisher()
    },
    op("mapError", numbers) {
      $0.setFailureType(to: TestError.self).mapError { $0 }.assertNoFailure()
        .eraseToAnyPublisher()
    },
    op("replaceNil", numbers.map { $0 % 3 == 0 ? 0 : $0 }) {
      $0.map { $0 % 3 == 0 ? nil : $0 }.replaceNil(with: 0).eraseToAnyPublisher()
    },
    op("scan", numbers.indices.map { numbers[...$0].reduce(0, +) }) {
      $0.scan(0, +).eraseToAnyPublisher()
    },
    op("tryScan", numbers.indices.map { numbers[...$0].reduce(0, +) }) {
      $0.tryScan(0, +).assertNoFailure().eraseToAnyPublisher()
    },
    op("filter", numbers.filter { $0 % 3 == 0 }) {
      $0.filter { $0 % 3 == 0 }.eraseToAnyPublisher()
    },
    op("tryFilter", numbers.filter { $0 % 2 == 0 }) {
      $0.tryFilter { $0 % 2 == 0 }.assertNoFailure().eraseToAnyPublisher()
    },
    op("compactMap", numbers.filter { $0 % 4 == 0 }) {
      $0.compactMap { $0 % 4 == 0 ? $0 : nil }.eraseToAnyPublisher()
    },
    op("tryCompactMap", numbers.filter { $0 % 5 == 0 }) {
      $0.tryCompactMap { $0 % 5 == 0 ? $0 : nil }.assertNoFailure().eraseToAnyPublisher()
    },
    op("removeDuplicates", [0, 1, 2, 3, 4, 5, 6]) {
      $0.map { $0 / 3 }.removeDuplicates().eraseToAnyPublisher()
    },
    op("tryRemoveDuplicates", [0, 1, 2, 3, 4, 5]) {
      $0.map { $0 / 4 }.tryRemoveDuplicates(by: ==).assertNoFailure().eraseToAnyPublisher()
    },
    op("replaceEmpty (not empty)", numbers) { $0.replaceEmpty(with: 0).eraseToAnyPublisher() },
    PublisherCase(description: "replaceEmpty (empty)", expected: [42]) {
      Empty<Int, Never>().replaceEmpty(with: 42).eraseToAnyPublisher()
    },
    PublisherCase(description: "replaceError", expected: [1, 2, 3, -1]) {
      Record<Int, TestError>(output: [1, 2, 3], completion: .failure(TestError()))
        .replaceError(with: -1).eraseToAnyPublisher()
    },
    op("collect", [210]) { $0.collect().map { $0.reduce(0, +) }.eraseToAnyPublisher() },
    op("collect(3)", [6, 15, 24, 33, 42, 51, 39]) {
      $0.collect(3).map { $0.reduce(0, +) }.eraseToAnyPublisher()
    },
    op("ignoreOutput", []) { $0.ignoreOutput().map(absurdInt).eraseToAnyPublisher() },
    op("reduce", [210]) { $0.reduce(0, +).eraseToAnyPublisher() },
    op("tryReduce", [210]) { $0.tryReduce(0, +).assertNoFailure().eraseToAnyPublisher() },
    op("count", [20]) { $0.count().eraseToAnyPublisher() },
    op("max", [20]) { $0.max().eraseToAnyPublisher() },
    op("min", [1]) { $0.min().eraseToAnyPublisher() },
    op("tryMax(by:)", [20]) { $0.tryMax(by: <).assertNoFailure().eraseToAnyPublisher() },
    op("tryMin(by:)", [1]) { $0.tryMin(by: <).assertNoFailure().eraseToAnyPublisher() },
    op("contains", [1]) { $0.contains(7).map { $0 ? 1 : 0 }.eraseToAnyPublisher() },
    op("contains(where:)", [0]) {
      $0.contains { $0 > 30 }.map { $0 ? 1 : 0 }.eraseToAnyPublisher()
    },
    op("tryContains(where:)", [1]) {
      $0.tryContains { $0 == 20 }.assertNoFailure().map { $0 ? 1 : 0 }.eraseToAnyPublisher()
    },
    op("allSatisfy", [1]) { $0.allSatisfy { $0 > 0 }.map { $0 ? 1 : 0 }.eraseToAnyPublisher() },
    op("tryAllSatisfy", [0]) {
      $0.tryAllSatisfy { $0 < 5 }.assertNoFailure().map { $0 ? 1 : 0 }.eraseToAnyPublisher()
    },
    op("first", [1]) { $0.first().eraseToAnyPublisher() },
    op("first(where:)", [6]) { $0.first { $0 > 5 }.eraseToAnyPublisher() },
    op("tryFirst(where:)", [7]) {
      $0.tryFirst { $0 > 6 }.assertNoFailure().eraseToAnyPublisher()
    },
    op("last", [20]) { $0.last().eraseToAnyPublisher() },
    op("last(where:)", [18]) { $0.last { $0 % 6 == 0 }.eraseToAnyPublisher() },
    op("tryLast(where:)", [19]) {
      $0.tryLast { $0 < 20 }.assertNoFailure().eraseToAnyPublisher()
    },
    op("output(at:)", [4]) { $0.output(at: 3).eraseToAnyPublisher() },
    op("output(in:)", [3, 4, 5, 6]) { $0.output(in: 2..<6).eraseToAnyPublisher() },
    op("prefix", [1, 2, 3, 4, 5]) { $0.prefix(5).eraseToAnyPublisher() },
    op("prefix(while:)", [1, 2, 3]) { $0.prefix { $0 < 4 }.eraseToAnyPublisher() },
    // Its completion comes with the first value that fails the predicate, so the expected
    // values are three: two would end a script granting exactly two waiting for it for ever.
    op("tryPrefix(while:)", [1, 2, 3]) {
      $0.tryPrefix { $0 < 4 }.assertNoFailure().eraseToAnyPublisher()
    },
    op("dropFirst", Array(numbers.dropFirst(3))) { $0.dropFirst(3).eraseToAnyPublisher() },
    op("drop(while:)", Array(numbers.drop { $0 < 15 })) {
      $0.drop { $0 < 15 }.eraseToAnyPublisher()
    },
    op("tryDrop(while:)", Array(numbers.drop { $0 < 10 })) {
      $0.tryDrop { $0 < 10 }.assertNoFailure().eraseToAnyPublisher()
    },
    PublisherCase(description: "catch", expected: [1, 2, 7, 8]) {
      Record<Int, TestError>(output: [1, 2], completion: .failure(TestError()))
        .catch { _ in [7, 8].publisher }.eraseToAnyPublisher()
    },
    PublisherCase(description: "tryCatch", expected: [1, 9]) {
      Record<Int, TestError>(output: [1], completion: .failure(TestError()))
        .tryCatch { _ in Just(9) }.assertNoFailure().eraseToAnyPublisher()
    },
    PublisherCase(description: "retry", expected: [1, 2, 1, 2, 1, 2]) {
      Record<Int, TestError>(output: [1, 2], completion: .failure(TestError()))
        .retry(2).replaceError(with: 0).filter { $0 != 0 }.eraseToAnyPublisher()
    },
    op("assertNoFailure", numbers) { $0.assertNoFailure().eraseToAnyPublisher() },
    op("handleEvents", numbers) {
      $0.handleEvents(receiveOutput: { _ in }, receiveRequest: { _ in }).eraseToAnyPublisher()
    },
    op("print", numbers) { $0.print("rules", to: NullStream()).eraseToAnyPublisher() },
    op("breakpoint", numbers) {
      $0.breakpoint(receiveOutput: { _ in false }).eraseToAnyPublisher()
    },
    op("encode + decode", numbers) {
      $0.encode(encoder: JSONEncoder()).decode(type: Int.self, decoder: JSONDecoder())
        .assertNoFailure().eraseToAnyPublisher()
    },
    op("receive(on: serial queue)", numbers) {
      $0.receive(on: serialQueue).eraseToAnyPublisher()
    }.flushed { await withCheckedContinuation { done in serialQueue.async { done.resume() } } },
    // With options, each value's action is a new closure (without: one prepared action).
    op("receive(on: serial queue, options)", numbers) {
      $0.receive(on: serialQueue, options: .init(qos: .userInitiated)).eraseToAnyPublisher()
    }.flushed { await withCheckedContinuation { done in serialQueue.async { done.resume() } } },
    op("receive(on: ImmediateScheduler)", numbers) {
      $0.receive(on: ImmediateScheduler.shared).eraseToAnyPublisher()
    },
    op("delay(ImmediateScheduler)", numbers) {
      $0.delay(for: .zero, scheduler: ImmediateScheduler.shared).eraseToAnyPublisher()
    },
    op("receive(on: concurrent queue)", numbers) {
      $0.receive(on: concurrentQueue).eraseToAnyPublisher()
    }.flushed {
      await withCheckedContinuation { done in
        concurrentQueue.async(flags: .barrier) { done.resume() }
      }
    },
    op("delay(on: serial queue)", numbers) {
      $0.delay(for: .microseconds(50), scheduler: delayQueue).eraseToAnyPublisher()
    }.flushed {
      // Every delayed action is due no later than this one, on the same serial queue.
      await withCheckedContinuation { done in
        delayQueue.asyncAfter(deadline: .now() + .microseconds(50)) { done.resume() }
      }
    },
    op("subscribe(on:)", numbers) {
      $0.subscribe(on: ImmediateScheduler.shared).eraseToAnyPublisher()
    },
    op("switchToLatest", numbers) { Just($0).switchToLatest().eraseToAnyPublisher() },
    op("flatMap", numbers) { $0.flatMap { Just($0) }.eraseToAnyPublisher() },
    op("flatMap(maxPublishers: 2)", numbers) {
      $0.flatMap(maxPublishers: .max(2)) { [$0].publisher }.eraseToAnyPublisher()
    },
    op("merge(with:)", numbers) { $0.merge(with: Empty()).eraseToAnyPublisher() },
    op("MergeMany", numbers) {
      Publishers.MergeMany(Empty().eraseToAnyPublisher(), $0.eraseToAnyPublisher())
        .eraseToAnyPublisher()
    },
    op("append", numbers) { $0.prefix(5).append($0.dropFirst(5)).eraseToAnyPublisher() },
    op("prepend", numbers) {
      Empty().prepend($0.prefix(5)).prepend(Empty()).append($0.dropFirst(5)).eraseToAnyPublisher()
    },
    op("drop(untilOutputFrom:)", numbers) {
      $0.drop(untilOutputFrom: Just(())).eraseToAnyPublisher()
    },
    op("prefix(untilOutputFrom:)", numbers) {
      $0.prefix(untilOutputFrom: Empty<Void, Never>()).eraseToAnyPublisher()
    },
    op("timeout(on: serial queue)", numbers) {
      $0.timeout(.seconds(3_600), scheduler: serialQueue).eraseToAnyPublisher()
    }.flushed { await withCheckedContinuation { done in serialQueue.async { done.resume() } } },
    // debounce drops what comes due without demand: a buffer after it takes everything (every
    // value is due at once on ImmediateScheduler) and hands it out on demand. (No such case for
    // throttle: as Combine's, it asks its upstream for `.unlimited` before handing its
    // subscription down, so a synchronous source's values come before any demand.)
    op("debounce(ImmediateScheduler)", numbers) {
      $0.debounce(for: .seconds(1), scheduler: ImmediateScheduler.shared)
        .buffer(size: 20, prefetch: .keepFull, whenFull: .dropNewest).eraseToAnyPublisher()
    },
    op("debounce(1 h, serial queue)", []) {
      // Nothing comes due before the upstream finishes; Combine drops the waiting value.
      $0.debounce(for: .seconds(3_600), scheduler: serialQueue).eraseToAnyPublisher()
    }.flushed { await withCheckedContinuation { done in serialQueue.async { done.resume() } } },
    op("collect(byTime: 1 h, serial queue)", numbers) {
      // One group, sent when the upstream finishes.
      $0.collect(.byTime(serialQueue, .seconds(3_600))).flatMap { $0.publisher }
        .eraseToAnyPublisher()
    }.flushed { await withCheckedContinuation { done in serialQueue.async { done.resume() } } },
    op("measureInterval", numbers) {
      $0.measureInterval(using: ImmediateScheduler.shared).map { _ in 0 }
        .scan(0) { count, _ in count + 1 }.eraseToAnyPublisher()
    },
    op("buffer(keepFull)", numbers) {
      $0.buffer(size: 4, prefetch: .keepFull, whenFull: .dropNewest).eraseToAnyPublisher()
    },
    op("buffer(byRequest)", numbers) {
      $0.buffer(size: 20, prefetch: .byRequest, whenFull: .dropOldest).eraseToAnyPublisher()
    },
    op("zip", numbers) { $0.zip((100...).publisher) { a, _ in a }.eraseToAnyPublisher() },
    op("zip(3)", numbers) {
      // An endless upstream goes last: zip asks its upstreams in order.
      $0.zip(Just(0).append(repeatElement(0, count: 30)), (1...).publisher) { a, _, _ in a }
        .eraseToAnyPublisher()
    },
    op("combineLatest", numbers) { Just(0).combineLatest($0) { _, b in b }.eraseToAnyPublisher() }
      .keepingLatestOnly(),
    op("combineLatest(4)", numbers) {
      Just(0).combineLatest(Just(0), Just(0), $0) { _, _, _, d in d }.eraseToAnyPublisher()
    }.keepingLatestOnly(),
  ]
}

/// The queues the scheduling cases deliver on, shared so that a test can wait for them.
private let serialQueue = DispatchQueue(label: "rules.receive-on")
private let concurrentQueue = DispatchQueue(
  label: "rules.receive-on.concurrent", attributes: .concurrent)
private let delayQueue = DispatchQueue(label: "rules.delay")

extension PublisherCase {
  /// This case, which may skip values when requests come from several threads at once.
  func keepingLatestOnly() -> PublisherCase {
    var copy = self
    copy.latestOnly = true
    return copy
  }

  /// This case, delivering on another thread after `request` returns; `flush` waits for it.
  func flushed(_ flush: @escaping @Sendable () async -> Void) -> PublisherCase {
    var copy = self
    copy.flush = flush
    return copy
  }
}

/// A text stream that discards what it is given.
struct NullStream: TextOutputStream {
  mutating func write(_ string: String) {}
}

/// The conversion from `Never` (never called).
func absurdInt(_ never: Never) -> Int {}
