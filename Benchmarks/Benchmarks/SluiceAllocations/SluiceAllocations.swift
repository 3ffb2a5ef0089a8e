// Allocation counts of the shapes apps write (issue 38), checked in CI against the static
// thresholds in Benchmarks/Thresholds (package-benchmark's `thresholds check`): an allocation
// count is exact and does not move with the machine's load, so a regression — an engine that
// starts allocating per value, a pipeline that gains an object per subscription — fails CI on
// any host.
//
//   swift package --disable-sandbox benchmark thresholds check --target SluiceAllocations \
//     --path Thresholds                                          # what CI runs
//   swift package --disable-sandbox --allow-writing-to-package-directory benchmark thresholds \
//     update --target SluiceAllocations --path Thresholds        # after an intended change
//
// Each iteration builds the pipeline, moves `values` values through it and cancels it, so the
// count is what a subscription costs plus what its values cost (merge.erased: `s1.merge(with:
// s2).eraseToAnyPublisher().sink`, and so on). Names have no " | ", so compare.sh, which pairs
// "<scenario> | <implementation>" rows, leaves them out.
import Benchmark
import Sluice

/// Values per iteration.
let values = 1_000

/// Counts what a sink received.
final class Tally: @unchecked Sendable {
  // Safety: each iteration uses its own tally, from one thread.
  var count = 0
}

@inline(never)
func consume(_ tally: Tally, _ value: Int) { tally.count &+= 1 }

/// Stops a row that lost or duplicated values.
func check(_ delivered: Int, _ expected: Int, _ row: String) {
  if delivered != expected { fatalError("\(row): delivered \(delivered), expected \(expected)") }
}

/// Registers `body` as "alloc.<name>", measuring only allocations, with no tolerance: any
/// allocation more than the stored threshold fails `thresholds check`. (Names without spaces:
/// package-benchmark 1.38 writes a threshold file with spaces made underscores but reads it by
/// the name as it is.)
func allocations(_ name: String, _ body: @escaping @Sendable () -> Void) {
  let configuration = Benchmark.Configuration(
    metrics: [.mallocCountTotal], maxDuration: .seconds(1), maxIterations: 200,
    thresholds: [.mallocCountTotal: .init(absolute: [.p90: 0])])
  Benchmark("alloc.\(name)", configuration: configuration) { benchmark in
    for _ in benchmark.scaledIterations { body() }
  }
}

let benchmarks: @Sendable () -> Void = {
  allocations("subject.sink") {
    let subject = PassthroughSubject<Int, Never>()
    let tally = Tally()
    let cancellable = subject.sink { consume(tally, $0) }
    for value in 0..<values { subject.send(value) }
    cancellable.cancel()
    check(tally.count, values, "subject.sink")
  }
  allocations("subject.erased.sink") {
    let subject = PassthroughSubject<Int, Never>()
    let tally = Tally()
    let cancellable = subject.eraseToAnyPublisher().sink { consume(tally, $0) }
    for value in 0..<values { subject.send(value) }
    cancellable.cancel()
    check(tally.count, values, "erased")
  }
  allocations("subject.map.filter.erased.sink") {
    let subject = PassthroughSubject<Int, Never>()
    let tally = Tally()
    let cancellable = subject.map { $0 &+ 1 }.filter { $0 >= 0 }.eraseToAnyPublisher()
      .sink { consume(tally, $0) }
    for value in 0..<values { subject.send(value) }
    cancellable.cancel()
    check(tally.count, values, "map.filter.erased")
  }
  for erased in [false, true] {
    let suffix = erased ? ".erased" : ""
    allocations("merge\(suffix).sink") {
      let a = PassthroughSubject<Int, Never>()
      let b = PassthroughSubject<Int, Never>()
      let tally = Tally()
      let merged = a.merge(with: b)
      let cancellable =
        erased
        ? merged.eraseToAnyPublisher().sink { consume(tally, $0) }
        : merged.sink { consume(tally, $0) }
      for value in 0..<values / 2 {
        a.send(value)
        b.send(value)
      }
      cancellable.cancel()
      check(tally.count, values, "merge")
    }
    allocations("flatMap\(suffix).sink") {
      let outer = PassthroughSubject<PassthroughSubject<Int, Never>, Never>()
      let inner = PassthroughSubject<Int, Never>()
      let tally = Tally()
      let flat = outer.flatMap { $0 }
      let cancellable =
        erased
        ? flat.eraseToAnyPublisher().sink { consume(tally, $0) }
        : flat.sink { consume(tally, $0) }
      outer.send(inner)
      for value in 0..<values { inner.send(value) }
      cancellable.cancel()
      check(tally.count, values, "flatMap")
    }
    allocations("zip\(suffix).sink.\(values / 2)-pairs") {
      let a = PassthroughSubject<Int, Never>()
      let b = PassthroughSubject<Int, Never>()
      let tally = Tally()
      let zipped = a.zip(b)
      let cancellable =
        erased
        ? zipped.eraseToAnyPublisher().sink { consume(tally, $0.0) }
        : zipped.sink { consume(tally, $0.0) }
      for value in 0..<values / 2 {
        a.send(value)
        b.send(value)
      }
      cancellable.cancel()
      check(tally.count, values / 2, "zip")
    }
    allocations("share\(suffix).sink") {
      let subject = PassthroughSubject<Int, Never>()
      let tally = Tally()
      let shared = subject.share()
      let cancellable =
        erased
        ? shared.eraseToAnyPublisher().sink { consume(tally, $0) }
        : shared.sink { consume(tally, $0) }
      for value in 0..<values { subject.send(value) }
      cancellable.cancel()
      check(tally.count, values, "share")
    }
    allocations("Just\(suffix).sink.\(values / 10)-subscriptions") {
      let tally = Tally()
      for value in 0..<values / 10 {
        if erased {
          _ = Just(value).eraseToAnyPublisher().sink { consume(tally, $0) }
        } else {
          _ = Just(value).sink { consume(tally, $0) }
        }
      }
      check(tally.count, values / 10, "Just")
    }
    allocations("Future\(suffix).sink.\(values / 10)-subscriptions") {
      let tally = Tally()
      for value in 0..<values / 10 {
        let future = Future<Int, Never> { $0(.success(value)) }
        if erased {
          _ = future.eraseToAnyPublisher().sink { consume(tally, $0) }
        } else {
          _ = future.sink { consume(tally, $0) }
        }
      }
      check(tally.count, values / 10, "Future")
    }
  }
  allocations("multicast.2-sinks.connected") {
    let subject = PassthroughSubject<Int, Never>()
    let tally = Tally()
    let multicast = subject.multicast(subject: PassthroughSubject<Int, Never>())
    let first = multicast.sink { consume(tally, $0) }
    let second = multicast.sink { consume(tally, $0) }
    let connection = multicast.connect()
    for value in 0..<values { subject.send(value) }
    first.cancel()
    second.cancel()
    connection.cancel()
    check(tally.count, 2 * values, "multicast")
  }
}
