import AsyncAlgorithms
import Dispatch
import OpenCombine
import OpenCombineDispatch
import Sluice
import Synchronization

/// Combining and scheduling operators: Sluice against OpenCombine where it has the operator, and
/// against swift-async-algorithms over `AsyncSequence`s carrying the same values, read from
/// another task (how a structured-concurrency program would combine them without publishers).
func operatorBenchmarks() {
  typealias Numbers = Sluice.Publishers.Sequence<Range<Int>, Never>
  typealias Values = Sluice.Publishers.Sequence<[Int], Never>
  let half = elements / 2
  let left = Array(0..<half)
  let right = Array(half..<elements)

  let merge = "merge of two sources → sink (per element)"
  measure(merge, "Sluice") {
    let tally = Tally()
    _ = Values(sequence: left).merge(with: Values(sequence: right)).sink { consume(tally, $0) }
    check(tally.count, elements, merge)
  }
  // swift-async-algorithms' merge of two synchronous sequences hung (every task suspended) in
  // three runs out of three after some hundred iterations on a 2-vCPU host, read from a
  // detached task or from the benchmark's own; the anchor is what structured concurrency offers
  // without it: two child tasks yielding into one AsyncStream.
  measureAsync(merge, "task group yielding into an AsyncStream") {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    let producers = Task {
      await withTaskGroup(of: Void.self) { group in
        group.addTask { for value in left { continuation.yield(value) } }
        group.addTask { for value in right { continuation.yield(value) } }
      }
      continuation.finish()
    }
    var count = 0
    for await _ in stream { count += 1 }
    await producers.value
    check(count, elements, merge)
  }

  let mergeEight = "merge of 8 subjects, values sent round-robin → sink (per element)"
  measure(mergeEight, "Sluice") {
    let tally = Tally()
    let subjects = (0..<8).map { _ in Sluice.PassthroughSubject<Int, Never>() }
    let cancellable = Sluice.Publishers.MergeMany(subjects).sink { consume(tally, $0) }
    for value in 0..<elements { subjects[value % 8].send(value) }
    check(tally.count, elements, mergeEight)
    cancellable.cancel()
  }
  measure(mergeEight, "one subject, no merge") {
    let tally = Tally()
    let subject = Sluice.PassthroughSubject<Int, Never>()
    let cancellable = subject.sink { consume(tally, $0) }
    for value in 0..<elements { subject.send(value) }
    check(tally.count, elements, mergeEight)
    cancellable.cancel()
  }

  let zip = "zip of two sources → sink (per pair)"
  measure(zip, "Sluice") {
    let tally = Tally()
    _ = Numbers(sequence: 0..<elements).zip(Numbers(sequence: 0..<elements))
      .sink { consume(tally, $0.0) }
    check(tally.count, elements, zip)
  }
  measure(zip, "OpenCombine") {
    let tally = Tally()
    _ = OpenCombine.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements)
      .zip(OpenCombine.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements))
      .sink { consume(tally, $0.0) }
    check(tally.count, elements, zip)
  }
  measureAsync(zip, "async-algorithms zip, read from another task") {
    let count = await Task.detached {
      var count = 0
      for await _ in AsyncAlgorithms.zip((0..<elements).async, (0..<elements).async) {
        count += 1
      }
      return count
    }.value
    check(count, elements, zip)
  }

  let latest = "combineLatest of two subjects, sent alternately → sink (per value sent)"
  measure(latest, "Sluice") {
    let tally = Tally()
    let a = Sluice.PassthroughSubject<Int, Never>()
    let b = Sluice.PassthroughSubject<Int, Never>()
    let cancellable = a.combineLatest(b).sink { consume(tally, $0.0) }
    for value in 0..<half {
      a.send(value)
      b.send(value)
    }
    check(tally.count, elements - 1, latest)
    cancellable.cancel()
  }
  measureAsync(latest, "async-algorithms combineLatest over channels, read from another task") {
    let a = AsyncChannel<Int>()
    let b = AsyncChannel<Int>()
    let reader = Task.detached {
      var count = 0
      for await _ in AsyncAlgorithms.combineLatest(a, b) { count += 1 }
      return count
    }
    for value in 0..<half {
      await a.send(value)
      await b.send(value)
    }
    a.finish()
    b.finish()
    // The channels hand over one value at a time, so every send is combined.
    check(await reader.value, elements - 1, latest)
  }

  let flatMap = "flatMap(maxPublishers: .max(4)) of 100 inner sequences of 10 → sink (per element)"
  measure(flatMap, "Sluice") {
    let tally = Tally()
    _ = Numbers(sequence: 0..<elements / 10)
      .flatMap(maxPublishers: Sluice.Subscribers.Demand.max(4)) { _ in Numbers(sequence: 0..<10) }
      .sink { consume(tally, $0) }
    check(tally.count, elements, flatMap)
  }
  measure(flatMap, "OpenCombine") {
    let tally = Tally()
    _ = OpenCombine.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements / 10)
      .flatMap(maxPublishers: OpenCombine.Subscribers.Demand.max(4)) { _ in
        OpenCombine.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<10)
      }
      .sink { consume(tally, $0) }
    check(tally.count, elements, flatMap)
  }

  // The time and scheduling operators' own cost, on ImmediateScheduler (no thread hop, no
  // clock): what each value pays inside the operator.
  func immediate(
    _ scenario: String,
    sluice: @escaping @Sendable (Sluice.PassthroughSubject<Int, Never>) -> Sluice.AnyCancellable,
    openCombine:
      @escaping @Sendable (OpenCombine.PassthroughSubject<Int, Never>) ->
      OpenCombine.AnyCancellable
  ) {
    measure(scenario, "Sluice") {
      let subject = Sluice.PassthroughSubject<Int, Never>()
      let cancellable = sluice(subject)
      for value in 0..<elements { subject.send(value) }
      cancellable.cancel()
    }
    measure(scenario, "OpenCombine") {
      let subject = OpenCombine.PassthroughSubject<Int, Never>()
      let cancellable = openCombine(subject)
      for value in 0..<elements { subject.send(value) }
      cancellable.cancel()
    }
  }
  immediate(
    "subject → receive(on: ImmediateScheduler) → sink (per element)",
    sluice: { subject in
      let tally = Tally()
      return subject.receive(on: Sluice.ImmediateScheduler.shared).sink { consume(tally, $0) }
    },
    openCombine: { subject in
      let tally = Tally()
      return subject.receive(on: OpenCombine.ImmediateScheduler.shared).sink { consume(tally, $0) }
    })
  immediate(
    "subject → debounce(0, ImmediateScheduler) → sink (per element)",
    sluice: { subject in
      let tally = Tally()
      return subject.debounce(for: .zero, scheduler: Sluice.ImmediateScheduler.shared)
        .sink { consume(tally, $0) }
    },
    openCombine: { subject in
      let tally = Tally()
      return subject.debounce(for: .zero, scheduler: OpenCombine.ImmediateScheduler.shared)
        .sink { consume(tally, $0) }
    })
  immediate(
    "subject → throttle(0, ImmediateScheduler, latest) → sink (per element)",
    sluice: { subject in
      let tally = Tally()
      return subject.throttle(for: .zero, scheduler: Sluice.ImmediateScheduler.shared, latest: true)
        .sink { consume(tally, $0) }
    },
    openCombine: { subject in
      let tally = Tally()
      return subject.throttle(
        for: .zero, scheduler: OpenCombine.ImmediateScheduler.shared, latest: true
      ).sink { consume(tally, $0) }
    })

}
