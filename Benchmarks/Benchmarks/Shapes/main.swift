// The shapes apps write (issue 38): erased, shared, merged, flatMapped, zipped pipelines, and
// one subject fed by 1, 2, 8 or 16 threads — Sluice and OpenCombine measured in the same
// process, alternately, so that their ratio holds on a shared, noisy machine.
//
//   Shapes                       # every row, 7 alternating rounds, one table
//   Shapes --filter erase        # the rows whose name contains a match (a regular expression)
//   Shapes --rounds 11           # more rounds (each round measures every implementation once)
//
// A row's figure is the median over rounds of ns per value (per pair for zip, per subscription
// for the subscribe rows); senders rows give values per second through the subject.
import Foundation
import OpenCombine
import Sluice
import Synchronization

let arguments = CommandLine.arguments.dropFirst()
func option(_ name: String) -> String? {
  guard let index = arguments.firstIndex(of: name),
    arguments.index(after: index) < arguments.endIndex
  else { return nil }
  return arguments[arguments.index(after: index)]
}
let filter = try Regex(option("--filter") ?? ".*")
let rounds = Int(option("--rounds") ?? "7") ?? 7
/// `--profile N`: runs only Sluice's implementation of the matching rows, N samples each (for
/// `perf record`), and prints nothing else.
let profileSamples = option("--profile").flatMap { Int($0) }
/// `--sluice-only`: measures Sluice's implementation alone (its rounds back to back, no
/// OpenCombine between them; the anchor columns print 0). The sender rows land in another regime
/// this way — the same code measured more contended — so an engine change to contention is
/// A/B'd both ways (`ab.sh --sluice-only`).
let sluiceOnly = arguments.contains("--sluice-only")
/// `--implementation K` with `--profile`: the K-th implementation instead (1: OpenCombine), to
/// compare counters (`perf stat`) of the two.
let profiledImplementation = option("--implementation").flatMap { Int($0) } ?? 0

/// Values moved per timed sample.
let values = 20_000

/// Counts what a sink received (one pipeline at a time, serial deliveries).
final class Tally: @unchecked Sendable {
  // Safety: each sample uses its own tally; deliveries to a sink are serial.
  var count = 0
}

@inline(never)
func consume(_ tally: Tally, _ value: Int) { tally.count &+= 1 }

/// Stops a row that lost or duplicated values.
func check(_ delivered: Int, _ expected: Int, _ row: String) {
  if delivered != expected {
    fatalError("\(row): delivered \(delivered), expected \(expected)")
  }
}

/// Nanoseconds that `body` takes.
func time(_ body: () -> Void) -> Double {
  let start = DispatchTime.now().uptimeNanoseconds
  body()
  return Double(DispatchTime.now().uptimeNanoseconds - start)
}

/// One implementation of a shape: returns nanoseconds per unit for one sample.
struct Implementation {
  let name: String
  let sample: () -> Double
}

struct Shape {
  let name: String
  let unit: String
  let implementations: [Implementation]
}

nonisolated(unsafe) var shapes: [Shape] = []

/// Registers a shape whose sample sends `values` values through a pipeline built once per
/// sample; `sluice` and `openCombine` return ns per unit.
func shape(_ name: String, unit: String = "value", _ implementations: [(String, () -> Double)]) {
  shapes.append(
    Shape(
      name: name, unit: unit,
      implementations: implementations.map { Implementation(name: $0.0, sample: $0.1) }))
}

// MARK: - One thread sending

shape(
  "subject.sink",
  [
    (
      "Sluice",
      {
        let subject = Sluice.PassthroughSubject<Int, Never>()
        let tally = Tally()
        let c = subject.sink { consume(tally, $0) }
        let t = time { for v in 0..<values { subject.send(v) } }
        check(tally.count, values, "subject.sink"); c.cancel()
        return t / Double(values)
      }
    ),
    (
      "OpenCombine",
      {
        let subject = OpenCombine.PassthroughSubject<Int, Never>()
        let tally = Tally()
        let c = subject.sink { consume(tally, $0) }
        let t = time { for v in 0..<values { subject.send(v) } }
        check(tally.count, values, "subject.sink"); c.cancel()
        return t / Double(values)
      }
    ),
  ])

shape(
  "subject.eraseToAnyPublisher().sink",
  [
    (
      "Sluice",
      {
        let subject = Sluice.PassthroughSubject<Int, Never>()
        let tally = Tally()
        let c = subject.eraseToAnyPublisher().sink { consume(tally, $0) }
        let t = time { for v in 0..<values { subject.send(v) } }
        check(tally.count, values, "erased"); c.cancel()
        return t / Double(values)
      }
    ),
    (
      "OpenCombine",
      {
        let subject = OpenCombine.PassthroughSubject<Int, Never>()
        let tally = Tally()
        let c = subject.eraseToAnyPublisher().sink { consume(tally, $0) }
        let t = time { for v in 0..<values { subject.send(v) } }
        check(tally.count, values, "erased"); c.cancel()
        return t / Double(values)
      }
    ),
  ])

shape(
  "subject.map.filter.sink",
  [
    (
      "Sluice",
      {
        let subject = Sluice.PassthroughSubject<Int, Never>()
        let tally = Tally()
        let c = subject.map { $0 &+ 1 }.filter { $0 >= 0 }.sink { consume(tally, $0) }
        let t = time { for v in 0..<values { subject.send(v) } }
        check(tally.count, values, "map.filter"); c.cancel()
        return t / Double(values)
      }
    ),
    (
      "OpenCombine",
      {
        let subject = OpenCombine.PassthroughSubject<Int, Never>()
        let tally = Tally()
        let c = subject.map { $0 &+ 1 }.filter { $0 >= 0 }.sink { consume(tally, $0) }
        let t = time { for v in 0..<values { subject.send(v) } }
        check(tally.count, values, "map.filter"); c.cancel()
        return t / Double(values)
      }
    ),
  ])

shape(
  "subject.map.filter.eraseToAnyPublisher().sink",
  [
    (
      "Sluice",
      {
        let subject = Sluice.PassthroughSubject<Int, Never>()
        let tally = Tally()
        let c = subject.map { $0 &+ 1 }.filter { $0 >= 0 }.eraseToAnyPublisher()
          .sink { consume(tally, $0) }
        let t = time { for v in 0..<values { subject.send(v) } }
        check(tally.count, values, "map.filter.erased"); c.cancel()
        return t / Double(values)
      }
    ),
    (
      "OpenCombine",
      {
        let subject = OpenCombine.PassthroughSubject<Int, Never>()
        let tally = Tally()
        let c = subject.map { $0 &+ 1 }.filter { $0 >= 0 }.eraseToAnyPublisher()
          .sink { consume(tally, $0) }
        let t = time { for v in 0..<values { subject.send(v) } }
        check(tally.count, values, "map.filter.erased"); c.cancel()
        return t / Double(values)
      }
    ),
  ])

/// OpenCombine 0.14 has no `merge`: the same shape as a flatMap over the two subjects.
func openCombineMerge(
  _ a: OpenCombine.PassthroughSubject<Int, Never>, _ b: OpenCombine.PassthroughSubject<Int, Never>
)
  -> OpenCombine.Publishers.FlatMap<
    OpenCombine.PassthroughSubject<Int, Never>,
    OpenCombine.Publishers.Sequence<[OpenCombine.PassthroughSubject<Int, Never>], Never>
  >
{
  OpenCombine.Publishers.Sequence(sequence: [a, b]).flatMap { $0 }
}

for erased in [false, true] {
  let name = "s1.merge(with: s2)\(erased ? ".eraseToAnyPublisher()" : "") → sink"
  shape(
    name,
    [
      (
        "Sluice",
        {
          let a = Sluice.PassthroughSubject<Int, Never>()
          let b = Sluice.PassthroughSubject<Int, Never>()
          let tally = Tally()
          let merged = a.merge(with: b)
          let c =
            erased
            ? merged.eraseToAnyPublisher().sink { consume(tally, $0) }
            : merged.sink { consume(tally, $0) }
          let t = time { for v in 0..<values / 2 { a.send(v); b.send(v) } }
          check(tally.count, values, name); c.cancel()
          return t / Double(values)
        }
      ),
      (
        "OpenCombine (flatMap)",
        {
          let a = OpenCombine.PassthroughSubject<Int, Never>()
          let b = OpenCombine.PassthroughSubject<Int, Never>()
          let tally = Tally()
          let merged = openCombineMerge(a, b)
          let c =
            erased
            ? merged.eraseToAnyPublisher().sink { consume(tally, $0) }
            : merged.sink { consume(tally, $0) }
          let t = time { for v in 0..<values / 2 { a.send(v); b.send(v) } }
          check(tally.count, values, name); c.cancel()
          return t / Double(values)
        }
      ),
    ])
}

for erased in [false, true] {
  let name = "outer.flatMap { $0 }\(erased ? ".eraseToAnyPublisher()" : "") → sink"
  shape(
    name,
    [
      (
        "Sluice",
        {
          let outer = Sluice.PassthroughSubject<Sluice.PassthroughSubject<Int, Never>, Never>()
          let inner = Sluice.PassthroughSubject<Int, Never>()
          let tally = Tally()
          let flat = outer.flatMap { $0 }
          let c =
            erased
            ? flat.eraseToAnyPublisher().sink { consume(tally, $0) }
            : flat.sink { consume(tally, $0) }
          outer.send(inner)
          let t = time { for v in 0..<values { inner.send(v) } }
          check(tally.count, values, name); c.cancel()
          return t / Double(values)
        }
      ),
      (
        "OpenCombine",
        {
          let outer = OpenCombine.PassthroughSubject<
            OpenCombine.PassthroughSubject<Int, Never>, Never
          >()
          let inner = OpenCombine.PassthroughSubject<Int, Never>()
          let tally = Tally()
          let flat = outer.flatMap { $0 }
          let c =
            erased
            ? flat.eraseToAnyPublisher().sink { consume(tally, $0) }
            : flat.sink { consume(tally, $0) }
          outer.send(inner)
          let t = time { for v in 0..<values { inner.send(v) } }
          check(tally.count, values, name); c.cancel()
          return t / Double(values)
        }
      ),
    ])
}

for erased in [false, true] {
  let name = "s1.zip(s2)\(erased ? ".eraseToAnyPublisher()" : "") → sink"
  shape(
    name, unit: "pair",
    [
      (
        "Sluice",
        {
          let a = Sluice.PassthroughSubject<Int, Never>()
          let b = Sluice.PassthroughSubject<Int, Never>()
          let tally = Tally()
          let zipped = a.zip(b)
          let c =
            erased
            ? zipped.eraseToAnyPublisher().sink { consume(tally, $0.0) }
            : zipped.sink { consume(tally, $0.0) }
          let pairs = values / 2
          let t = time { for v in 0..<pairs { a.send(v); b.send(v) } }
          check(tally.count, pairs, name); c.cancel()
          return t / Double(pairs)
        }
      ),
      (
        "OpenCombine",
        {
          let a = OpenCombine.PassthroughSubject<Int, Never>()
          let b = OpenCombine.PassthroughSubject<Int, Never>()
          let tally = Tally()
          let zipped = a.zip(b)
          let c =
            erased
            ? zipped.eraseToAnyPublisher().sink { consume(tally, $0.0) }
            : zipped.sink { consume(tally, $0.0) }
          let pairs = values / 2
          let t = time { for v in 0..<pairs { a.send(v); b.send(v) } }
          check(tally.count, pairs, name); c.cancel()
          return t / Double(pairs)
        }
      ),
    ])
}

for erased in [false, true] {
  let name = "subject.share()\(erased ? ".eraseToAnyPublisher()" : "").sink"
  shape(
    name,
    [
      (
        "Sluice",
        {
          let subject = Sluice.PassthroughSubject<Int, Never>()
          let tally = Tally()
          let shared = subject.share()
          let c =
            erased
            ? shared.eraseToAnyPublisher().sink { consume(tally, $0) }
            : shared.sink { consume(tally, $0) }
          let t = time { for v in 0..<values { subject.send(v) } }
          check(tally.count, values, name); c.cancel()
          return t / Double(values)
        }
      ),
      (
        "OpenCombine",
        {
          let subject = OpenCombine.PassthroughSubject<Int, Never>()
          let tally = Tally()
          let shared = subject.share()
          let c =
            erased
            ? shared.eraseToAnyPublisher().sink { consume(tally, $0) }
            : shared.sink { consume(tally, $0) }
          let t = time { for v in 0..<values { subject.send(v) } }
          check(tally.count, values, name); c.cancel()
          return t / Double(values)
        }
      ),
    ])
}

shape(
  "subject.multicast(subject:) with 2 sinks, connected", unit: "send",
  [
    (
      "Sluice",
      {
        let subject = Sluice.PassthroughSubject<Int, Never>()
        let tally = Tally()
        let multicast = subject.multicast(subject: Sluice.PassthroughSubject<Int, Never>())
        let c1 = multicast.sink { consume(tally, $0) }
        let c2 = multicast.sink { consume(tally, $0) }
        let connection = multicast.connect()
        let t = time { for v in 0..<values { subject.send(v) } }
        check(tally.count, 2 * values, "multicast"); c1.cancel(); c2.cancel(); connection.cancel()
        return t / Double(values)
      }
    ),
    (
      "OpenCombine",
      {
        let subject = OpenCombine.PassthroughSubject<Int, Never>()
        let tally = Tally()
        let multicast = subject.multicast(subject: OpenCombine.PassthroughSubject<Int, Never>())
        let c1 = multicast.sink { consume(tally, $0) }
        let c2 = multicast.sink { consume(tally, $0) }
        let connection = multicast.connect()
        let t = time { for v in 0..<values { subject.send(v) } }
        check(tally.count, 2 * values, "multicast"); c1.cancel(); c2.cancel(); connection.cancel()
        return t / Double(values)
      }
    ),
  ])

for erased in [false, true] {
  let name = "Just(v)\(erased ? ".eraseToAnyPublisher()" : "").sink (subscribe each)"
  let count = values / 10
  shape(
    name, unit: "subscription",
    [
      (
        "Sluice",
        {
          let tally = Tally()
          let t = time {
            for v in 0..<count {
              if erased {
                _ = Sluice.Just(v).eraseToAnyPublisher().sink { consume(tally, $0) }
              } else {
                _ = Sluice.Just(v).sink { consume(tally, $0) }
              }
            }
          }
          check(tally.count, count, name)
          return t / Double(count)
        }
      ),
      (
        "OpenCombine",
        {
          let tally = Tally()
          let t = time {
            for v in 0..<count {
              if erased {
                _ = OpenCombine.Just(v).eraseToAnyPublisher().sink { consume(tally, $0) }
              } else {
                _ = OpenCombine.Just(v).sink { consume(tally, $0) }
              }
            }
          }
          check(tally.count, count, name)
          return t / Double(count)
        }
      ),
    ])
}

// A view model's `@Published` property observed with `$property.sink`, and its
// `objectWillChange` (an `ObservableObject`), each set or sent from one thread.
final class SluiceModel: Sluice.ObservableObject, @unchecked Sendable {
  @Sluice.Published var count = 0
}
final class OpenCombineModel: OpenCombine.ObservableObject, @unchecked Sendable {
  @OpenCombine.Published var count = 0
}
for willChange in [false, true] {
  let name =
    willChange
    ? "ObservableObject objectWillChange.sink, a @Published property set each time"
    : "@Published var count; $count.sink, count set each time"
  // `$count` delivers the current value at once, then each one set; `objectWillChange` each set.
  let expected = willChange ? values : values + 1
  shape(
    name,
    [
      (
        "Sluice",
        {
          let model = SluiceModel()
          let tally = Tally()
          let cancellable =
            willChange
            ? model.objectWillChange.sink { consume(tally, 0) }
            : model.$count.sink { consume(tally, $0) }
          let t = time { for v in 0..<values { model.count = v } }
          check(tally.count, expected, name)
          cancellable.cancel()
          return t / Double(values)
        }
      ),
      (
        "OpenCombine",
        {
          let model = OpenCombineModel()
          let tally = Tally()
          let cancellable =
            willChange
            ? model.objectWillChange.sink { consume(tally, 0) }
            : model.$count.sink { consume(tally, $0) }
          let t = time { for v in 0..<values { model.count = v } }
          check(tally.count, expected, name)
          cancellable.cancel()
          return t / Double(values)
        }
      ),
    ])
}

// A function returning a fulfilled `Future` (an app's cached or computed result), subscribed once
// per call: the future made, subscribed by a sink, the value delivered, the cancellable dropped.
for erased in [false, true] {
  let erasure = erased ? ".eraseToAnyPublisher()" : ""
  let name = "Future { $0(.success(v)) }\(erasure).sink (subscribe each)"
  let count = values / 10
  shape(
    name, unit: "subscription",
    [
      (
        "Sluice",
        {
          let tally = Tally()
          let t = time {
            for v in 0..<count {
              let future = Sluice.Future<Int, Never> { $0(.success(v)) }
              if erased {
                _ = future.eraseToAnyPublisher().sink { consume(tally, $0) }
              } else {
                _ = future.sink { consume(tally, $0) }
              }
            }
          }
          check(tally.count, count, name)
          return t / Double(count)
        }
      ),
      (
        "OpenCombine",
        {
          let tally = Tally()
          let t = time {
            for v in 0..<count {
              let future = OpenCombine.Future<Int, Never> { $0(.success(v)) }
              if erased {
                _ = future.eraseToAnyPublisher().sink { consume(tally, $0) }
              } else {
                _ = future.sink { consume(tally, $0) }
              }
            }
          }
          check(tally.count, count, name)
          return t / Double(count)
        }
      ),
    ])
}

// The same future fulfilled after the sink subscribed (a result that arrives later): the
// subscription waits for it, then delivers.
do {
  let name = "Future, fulfilled after .sink (subscribe each)"
  let count = values / 10
  /// The promise the future's closure was given, called after the subscription.
  final class Promised<P>: @unchecked Sendable {
    var promise: P?
  }
  shape(
    name, unit: "subscription",
    [
      (
        "Sluice",
        {
          let tally = Tally()
          let t = time {
            for v in 0..<count {
              let promised = Promised<Sluice.Future<Int, Never>.Promise>()
              let future = Sluice.Future<Int, Never> { promised.promise = $0 }
              let cancellable = future.sink { consume(tally, $0) }
              promised.promise?(.success(v))
              _ = cancellable
            }
          }
          check(tally.count, count, name)
          return t / Double(count)
        }
      ),
      (
        "OpenCombine",
        {
          let tally = Tally()
          let t = time {
            for v in 0..<count {
              let promised = Promised<OpenCombine.Future<Int, Never>.Promise>()
              let future = OpenCombine.Future<Int, Never> { promised.promise = $0 }
              let cancellable = future.sink { consume(tally, $0) }
              promised.promise?(.success(v))
              _ = cancellable
            }
          }
          check(tally.count, count, name)
          return t / Double(count)
        }
      ),
    ])
}

// The shape an app has for short-lived subscriptions: a chain on a subject, its cancellable kept
// in a set, the set cleared later (subscribe, attach, detach, release: no value sent).
do {
  let name = "subject.map.sink stored in a Set<AnyCancellable>, set cleared (subscribe each)"
  let count = values / 10
  shape(
    name, unit: "subscription",
    [
      (
        "Sluice",
        {
          let subject = Sluice.PassthroughSubject<Int, Never>()
          let tally = Tally()
          var cancellables = Set<Sluice.AnyCancellable>()
          let t = time {
            for _ in 0..<count {
              subject.map { $0 &+ 1 }.sink { consume(tally, $0) }.store(in: &cancellables)
            }
            cancellables.removeAll()
          }
          return t / Double(count)
        }
      ),
      (
        "OpenCombine",
        {
          let subject = OpenCombine.PassthroughSubject<Int, Never>()
          let tally = Tally()
          var cancellables = Set<OpenCombine.AnyCancellable>()
          let t = time {
            for _ in 0..<count {
              subject.map { $0 &+ 1 }.sink { consume(tally, $0) }.store(in: &cancellables)
            }
            cancellables.removeAll()
          }
          return t / Double(count)
        }
      ),
    ])
}

// An async source fed into a pipeline: the task-driven engine of `AsyncSequence.publisher`,
// `AsyncProducer` and `AsyncFuture`. OpenCombine has no such bridge: the second column is the
// same sequence read by `for await` in a task of its own (the floor of any bridge).
struct Counting: AsyncSequence, Sendable {
  let count: Int
  struct AsyncIterator: AsyncIteratorProtocol {
    var next = 0
    let count: Int
    mutating func next() async -> Int? {
      guard next < count else { return nil }
      next += 1
      return next
    }
  }
  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count) }
}

for erased in [false, true] {
  let name =
    "AsyncSequence.publisher\(erased ? ".eraseToAnyPublisher()" : "").sink "
    + "(2nd column: for await in a task, not OpenCombine)"
  shape(
    name,
    [
      (
        "Sluice",
        {
          let tally = Tally()
          let done = DispatchSemaphore(value: 0)
          var cancellable: Sluice.AnyCancellable?
          let t = time {
            let publisher = Counting(count: values).publisher
            if erased {
              cancellable = publisher.eraseToAnyPublisher().sink(
                receiveCompletion: { _ in done.signal() }, receiveValue: { consume(tally, $0) })
            } else {
              cancellable = publisher.sink(
                receiveCompletion: { _ in done.signal() }, receiveValue: { consume(tally, $0) })
            }
            done.wait()
          }
          check(tally.count, values, name)
          cancellable?.cancel()
          return t / Double(values)
        }
      ),
      (
        "for await",
        {
          let tally = Tally()
          let done = DispatchSemaphore(value: 0)
          let t = time {
            // Detached: top-level code is on the main actor, which `done.wait()` blocks.
            Task.detached {
              for await value in Counting(count: values) { consume(tally, value) }
              done.signal()
            }
            done.wait()
          }
          check(tally.count, values, name)
          return t / Double(values)
        }
      ),
    ])
}

// An `AsyncStream` (filled beforehand) read through its publisher's `values`, against the
// stream read directly: each value costs the bridge two task switches (the consumer's `next()`
// asks for one, the pulling task resumes, pulls and hands it back), the stream alone none.
do {
  let name = "AsyncStream.publisher.values (2nd column: for await over the stream, not OpenCombine)"
  let count = values / 10
  func filledStream() -> AsyncStream<Int> {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    for value in 0..<count { continuation.yield(value) }
    continuation.finish()
    return stream
  }
  shape(
    name,
    [
      (
        "Sluice",
        {
          let tally = Tally()
          let done = DispatchSemaphore(value: 0)
          let stream = filledStream()
          let t = time {
            Task.detached {
              for await value in stream.publisher.values { consume(tally, value) }
              done.signal()
            }
            done.wait()
          }
          check(tally.count, count, name)
          return t / Double(count)
        }
      ),
      (
        "for await",
        {
          let tally = Tally()
          let done = DispatchSemaphore(value: 0)
          let stream = filledStream()
          let t = time {
            Task.detached {
              for await value in stream { consume(tally, value) }
              done.signal()
            }
            done.wait()
          }
          check(tally.count, count, name)
          return t / Double(count)
        }
      ),
    ])
}

// MARK: - Several threads sending

/// `senders` threads each send `perSender` values into `send` at once; returns ns per value
/// (wall clock from the start signal until every sender has returned). The send is called
/// through the closure (``concurrentDirectSends`` with a ``ClosureTarget``).
func concurrentSends(senders: Int, perSender: Int, _ send: @escaping @Sendable (Int) -> Void)
  -> Double
{
  concurrentDirectSends(senders: senders, perSender: perSender, into: ClosureTarget(send: send))
}

/// A send through a closure: an indirect call per value, which spaces the senders' sends.
struct ClosureTarget: DirectSendTarget {
  let send: @Sendable (Int) -> Void
  func sendValue(_ value: Int) { send(value) }
}

/// A subject the direct-send rows send into (one conformance per library, so that
/// `concurrentDirectSends` is specialised for each and the send is inlined in the loop).
protocol DirectSendTarget: Sendable {
  func sendValue(_ value: Int)
}
extension Sluice.PassthroughSubject: DirectSendTarget where Output == Int, Failure == Never {
  func sendValue(_ value: Int) { send(value) }
}
extension SendableBox: DirectSendTarget where Value == OpenCombine.PassthroughSubject<Int, Never> {
  func sendValue(_ value: Int) { self.value.send(value) }
}

/// `concurrentSends` with the send inlined in each thread's loop, as a loop sending into a
/// subject compiles in an app, instead of called through a closure: the senders collide more
/// often (a holder's batch of hand-offs showed there, issue 38).
func concurrentDirectSends<Target: DirectSendTarget>(
  senders: Int, perSender: Int, into target: Target
) -> Double {
  let ready = DispatchSemaphore(value: 0)
  let go = Atomic<Bool>(false)
  let done = DispatchGroup()
  for sender in 0..<senders {
    done.enter()
    Thread.detachNewThread {
      ready.signal()
      while !go.load(ordering: .acquiring) {}
      for v in 0..<perSender { target.sendValue(sender &* perSender &+ v) }
      done.leave()
    }
  }
  for _ in 0..<senders { ready.wait() }
  let start = DispatchTime.now().uptimeNanoseconds
  go.store(true, ordering: .releasing)
  done.wait()
  return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(senders * perSender)
}

final class AtomicTally: Sendable {
  let count = Atomic<Int>(0)
}

/// OpenCombine's subject, which is not `Sendable` but is safe to send into from any thread.
struct SendableBox<Value>: @unchecked Sendable {
  // Safety: only for OpenCombine's `PassthroughSubject`, whose `send` takes a lock.
  let value: Value
}

/// About `nanoseconds` of work, as a sink that updates a model does.
@inline(never)
nonisolated func work(_ nanoseconds: UInt64) {
  guard nanoseconds > 0 else { return }
  let end = DispatchTime.now().uptimeNanoseconds + nanoseconds
  while DispatchTime.now().uptimeNanoseconds < end {}
}

// A sink with no work, then one that works ~1 µs per value: with it the sending threads wait
// for the delivery in progress (behind OpenCombine's lock, or for Sluice's turn).
let sinks: [(UInt64, String, Int)] = [
  (0, "1 sink", 1_000_000), (1_000, "1 sink of ~1 µs", 100_000),
]
for (sinkWork, sinkName, defaultTotal) in sinks {
  for senders in [1, 2, 8, 16] {
    let name = "PassthroughSubject, \(sinkName), \(senders) sender thread\(senders == 1 ? "" : "s")"
    // Enough values that every sender is preempted many times while the others run (with 40,000
    // a sender finished its share within one time slice: no contention was measured).
    let variable = sinkWork == 0 ? "SHAPES_SENDER_VALUES" : "SHAPES_SLOW_SINK_VALUES"
    let total = Int(ProcessInfo.processInfo.environment[variable] ?? "") ?? defaultTotal
    shape(
      name, unit: "value",
      [
        (
          "Sluice",
          {
            let subject = Sluice.PassthroughSubject<Int, Never>()
            let tally = AtomicTally()
            let c = subject.sink { _ in
              work(sinkWork)
              tally.count.add(1, ordering: .relaxed)
            }
            let t = concurrentSends(senders: senders, perSender: total / senders) {
              subject.send($0)
            }
            check(tally.count.load(ordering: .relaxed), total, name); c.cancel()
            return t
          }
        ),
        (
          "OpenCombine",
          {
            let subject = SendableBox(value: OpenCombine.PassthroughSubject<Int, Never>())
            let tally = AtomicTally()
            let c = subject.value.sink { @Sendable _ in
              work(sinkWork)
              tally.count.add(1, ordering: .relaxed)
            }
            let t = concurrentSends(senders: senders, perSender: total / senders) {
              subject.value.send($0)
            }
            check(tally.count.load(ordering: .relaxed), total, name); c.cancel()
            return t
          }
        ),
      ])
  }
}

// The same with the send inlined in each sender's loop (`concurrentDirectSends`), half the
// values: 2, 8 and 16 threads into a fast sink.
for senders in [2, 8, 16] {
  let name = "PassthroughSubject, 1 sink, \(senders) sender threads, send inlined in the loop"
  let total = 500_000
  shape(
    name, unit: "value",
    [
      (
        "Sluice",
        {
          let subject = Sluice.PassthroughSubject<Int, Never>()
          let tally = AtomicTally()
          let c = subject.sink { _ in tally.count.add(1, ordering: .relaxed) }
          let t = concurrentDirectSends(senders: senders, perSender: total / senders, into: subject)
          check(tally.count.load(ordering: .relaxed), total, name); c.cancel()
          return t
        }
      ),
      (
        "OpenCombine",
        {
          let subject = SendableBox(value: OpenCombine.PassthroughSubject<Int, Never>())
          let tally = AtomicTally()
          let c = subject.value.sink { @Sendable _ in tally.count.add(1, ordering: .relaxed) }
          let t = concurrentDirectSends(senders: senders, perSender: total / senders, into: subject)
          check(tally.count.load(ordering: .relaxed), total, name); c.cancel()
          return t
        }
      ),
    ])
}

// MARK: - Run

func median(_ samples: [Double]) -> Double {
  let sorted = samples.sorted()
  return sorted[sorted.count / 2]
}

let model =
  (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.split(separator: "\n")
  .first { $0.hasPrefix("model name") }?.split(separator: ":").last?
  .trimmingCharacters(in: .whitespaces) ?? "?"
let load =
  (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?
  .split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
if let profileSamples {
  for shape in shapes where shape.name.contains(filter) {
    for _ in 0..<profileSamples { _ = shape.implementations[profiledImplementation].sample() }
  }
  exit(0)
}
print("CPU: \(model); load average at start: \(load); \(rounds) alternating rounds, median")
print(
  "| shape | Sluice ns/unit | OpenCombine ns/unit | OpenCombine/Sluice | Sluice M values/s | OpenCombine M values/s |"
)
print("|---|---|---|---|---|---|")
for shape in shapes where shape.name.contains(filter) {
  // Warm-up, then alternating rounds.
  let measured = sluiceOnly ? Array(shape.implementations.prefix(1)) : shape.implementations
  for implementation in measured { _ = implementation.sample() }
  var samples = Array(repeating: [0.0], count: shape.implementations.count)
  for index in measured.indices { samples[index] = [] }
  for _ in 0..<rounds {
    for (index, implementation) in measured.enumerated() {
      samples[index].append(implementation.sample())
    }
  }
  let medians = samples.map(median)
  let sluice = medians[0]
  let anchor = medians[1]
  let rate = shape.unit == "value" || shape.unit == "send"
  print(
    "| \(shape.name) (per \(shape.unit)) | \(String(format: "%.1f", sluice)) | \(String(format: "%.1f", anchor)) | \(String(format: "%.2fx", anchor / sluice)) | \(rate ? String(format: "%.2f", 1e3 / sluice) : "") | \(rate ? String(format: "%.2f", 1e3 / anchor) : "") |"
  )
  fflush(nil)
}
let loadEnd =
  (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?
  .split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
print("load average at end: \(loadEnd)")
