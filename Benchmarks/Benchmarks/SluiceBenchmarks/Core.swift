import AppCode
import Dispatch
import OpenCombine
import Sluice

/// A counter the pipelines write into (one pipeline at a time, on one thread).
final class Tally: @unchecked Sendable {
  // Safety: each benchmark iteration uses its own tally from one thread at a time.
  var count = 0
}

@inline(never)
func consume(_ tally: Tally, _ value: Int) {
  tally.count &+= 1
}

/// Hides `value` from the optimizer, so a closure passed through it is called, not inlined.
@inline(never)
func opaque<T>(_ value: T) -> T { value }

func halfUnlessFifth(_ value: Int) -> Int? { value % 5 == 0 ? nil : value / 2 }

struct NegativeValue: Error {}

func doubleUnlessNegative(_ value: Int) throws -> Int {
  guard value >= 0 else { throw NegativeValue() }
  return value &* 2
}

func isNotMultipleOfThree(_ value: Int) throws -> Bool {
  guard value >= 0 else { throw NegativeValue() }
  return value % 3 != 0
}

func coreBenchmarks() {
  let synchronous = "Sequence.publisher → sink (per element)"
  measure(synchronous, "Sluice") {
    let tally = Tally()
    _ = Sluice.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements)
      .sink { consume(tally, $0) }
    check(tally.count, elements, synchronous)
  }
  measure(synchronous, "OpenCombine") {
    let tally = Tally()
    _ = OpenCombine.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements)
      .sink { consume(tally, $0) }
    check(tally.count, elements, synchronous)
  }
  measure(synchronous, "hand-written loop") {
    let tally = Tally()
    let body: (Int) -> Void = { consume(tally, $0) }
    for value in 0..<elements { body(value) }
    check(tally.count, elements, synchronous)
  }

  let chain = "Deferred(0..<n) → map → filter → scan → sink, streaming (per element)"
  measure(chain, "Sluice") {
    let tally = Tally()
    _ = Sluice.Deferred { Sluice.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements) }
      .map { $0 &* 2 }.filter { $0 % 3 != 0 }.scan(0, &+).sink { consume(tally, $0) }
    check(tally.count, elements * 2 / 3, chain)
  }
  measure(chain, "OpenCombine") {
    let tally = Tally()
    _ = OpenCombine.Deferred {
      OpenCombine.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements)
    }
    .map { $0 &* 2 }.filter { $0 % 3 != 0 }.scan(0, &+).sink { consume(tally, $0) }
    check(tally.count, elements * 2 / 3, chain)
  }
  measure(chain, "hand-written loop, non-inlined closures") {
    let tally = Tally()
    let transform: (Int) -> Int = opaque { $0 &* 2 }
    let isIncluded: (Int) -> Bool = opaque { $0 % 3 != 0 }
    let combine: (Int, Int) -> Int = opaque(&+)
    var sum = 0
    for value in 0..<elements {
      let doubled = transform(value)
      guard isIncluded(doubled) else { continue }
      sum = combine(sum, doubled)
      consume(tally, sum)
    }
    check(tally.count, elements * 2 / 3, chain)
  }

  // One value at the end: the sum of the distinct runs of `value / 2` for values not divisible by 5.
  let reducing = "Deferred(0..<n) → compactMap → removeDuplicates → reduce → sink (per element)"
  let reduced = (0..<elements).compactMap(halfUnlessFifth).reduce(into: [Int]()) {
    if $0.last != $1 { $0.append($1) }
  }.reduce(0, &+)
  measure(reducing, "Sluice") {
    let tally = Tally()
    _ = Sluice.Deferred { Sluice.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements) }
      .compactMap(halfUnlessFifth).removeDuplicates().reduce(0, &+)
      .sink { consume(tally, $0 == reduced ? 1 : 0) }
    check(tally.count, 1, reducing)
  }
  measure(reducing, "OpenCombine") {
    let tally = Tally()
    _ = OpenCombine.Deferred {
      OpenCombine.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements)
    }
    .compactMap(halfUnlessFifth).removeDuplicates().reduce(0, &+)
    .sink { consume(tally, $0 == reduced ? 1 : 0) }
    check(tally.count, 1, reducing)
  }

  let throwing = "Deferred(0..<n) → tryMap → map → tryFilter → sink, streaming (per element)"
  let kept = (0..<elements).filter { ($0 * 2 + 1) % 3 != 0 }.count
  measure(throwing, "Sluice") {
    let tally = Tally()
    _ = Sluice.Deferred { Sluice.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements) }
      .tryMap(doubleUnlessNegative).map { $0 &+ 1 }.tryFilter(isNotMultipleOfThree)
      .sink(receiveCompletion: { _ in }, receiveValue: { consume(tally, $0) })
    check(tally.count, kept, throwing)
  }
  measure(throwing, "OpenCombine") {
    let tally = Tally()
    _ = OpenCombine.Deferred {
      OpenCombine.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements)
    }
    .tryMap(doubleUnlessNegative).map { $0 &+ 1 }.tryFilter(isNotMultipleOfThree)
    .sink(receiveCompletion: { _ in }, receiveValue: { consume(tally, $0) })
    check(tally.count, kept, throwing)
  }

  for sinks in [1, 8] {
    let send = "PassthroughSubject.send, \(sinks) sink\(sinks == 1 ? "" : "s") (per send)"
    measure(send, "Sluice") {
      let tally = Tally()
      let subject = Sluice.PassthroughSubject<Int, Never>()
      let cancellables = (0..<sinks).map { _ in subject.sink { consume(tally, $0) } }
      for value in 0..<elements { subject.send(value) }
      check(tally.count, elements * sinks, send)
      withExtendedLifetime(cancellables) {}
    }
    measure(send, "OpenCombine") {
      let tally = Tally()
      let subject = OpenCombine.PassthroughSubject<Int, Never>()
      let cancellables = (0..<sinks).map { _ in subject.sink { consume(tally, $0) } }
      for value in 0..<elements { subject.send(value) }
      check(tally.count, elements * sinks, send)
      withExtendedLifetime(cancellables) {}
    }
  }

  // Two threads sending to one subject at once (a subject fed from a network callback and a
  // timer, say): one sender reads the subscriber list in place, the other copies it under the
  // lock, and both meet on the subscriber's serial delivery.
  let twoSenders = "PassthroughSubject.send from 2 threads at once, 1 sink (per send)"
  measure(twoSenders, "Sluice") {
    let tally = Tally()
    let subject = Sluice.PassthroughSubject<Int, Never>()  // Sendable
    let cancellable = subject.sink { consume(tally, $0) }
    DispatchQueue.concurrentPerform(iterations: 2) { sender in
      for value in 0..<(elements / 2) { subject.send(sender &* elements &+ value) }
    }
    check(tally.count, elements, twoSenders)
    withExtendedLifetime(cancellable) {}
  }
  measure(twoSenders, "OpenCombine") {
    let tally = Tally()
    let subject = ThreadSafe(OpenCombine.PassthroughSubject<Int, Never>())
    let cancellable = subject.value.sink { consume(tally, $0) }
    DispatchQueue.concurrentPerform(iterations: 2) { sender in
      for value in 0..<(elements / 2) { subject.value.send(sender &* elements &+ value) }
    }
    check(tally.count, elements, twoSenders)
    withExtendedLifetime(cancellable) {}
  }

  // A subject with a current value, set as a property (the shape `@Published` has): the value
  // is stored and the subscribers read in one lock round.
  let current = "CurrentValueSubject.value = v → 2 sinks (per set)"
  measure(current, "Sluice") {
    let tally = Tally()
    let subject = Sluice.CurrentValueSubject<Int, Never>(0)
    let cancellables = (0..<2).map { _ in subject.sink { consume(tally, $0) } }
    for value in 1...elements { subject.value = value }
    check(tally.count, 2 * (elements + 1), current)
    withExtendedLifetime(cancellables) {}
  }
  measure(current, "OpenCombine") {
    let tally = Tally()
    let subject = OpenCombine.CurrentValueSubject<Int, Never>(0)
    let cancellables = (0..<2).map { _ in subject.sink { consume(tally, $0) } }
    for value in 1...elements { subject.value = value }
    check(tally.count, 2 * (elements + 1), current)
    withExtendedLifetime(cancellables) {}
  }

  // App shapes: a sink that updates a view model's stored properties; operator closures that
  // are references to functions in another module (AppCode); a chain spelled with the
  // publishers' initialisers instead of the operator methods.
  let model = "PassthroughSubject.send → sink updating a view model's properties (per send)"
  measure(model, "Sluice") {
    let counter = CounterModel()
    let subject = Sluice.PassthroughSubject<Int, Never>()
    let cancellable = subject.sink { value in
      counter.count += 1
      counter.last = value
      counter.total &+= value
    }
    for value in 0..<elements { subject.send(value) }
    check(counter.count, elements, model)
    withExtendedLifetime(cancellable) {}
  }
  measure(model, "OpenCombine") {
    let counter = CounterModel()
    let subject = OpenCombine.PassthroughSubject<Int, Never>()
    let cancellable = subject.sink { value in
      counter.count += 1
      counter.last = value
      counter.total &+= value
    }
    for value in 0..<elements { subject.send(value) }
    check(counter.count, elements, model)
    withExtendedLifetime(cancellable) {}
  }

  let references =
    "Deferred(0..<n) → map → filter → scan → sink, functions from another module (per element)"
  measure(references, "Sluice") {
    let counter = CounterModel()
    _ = Sluice.Deferred { Sluice.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements) }
      .map(doubled).filter(notMultipleOfThree).scan(0, runningSum)
      .sink {
        counter.count += 1; counter.last = $0
      }
    check(counter.count, elements * 2 / 3, references)
  }
  measure(references, "OpenCombine") {
    let counter = CounterModel()
    _ = OpenCombine.Deferred {
      OpenCombine.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements)
    }
    .map(doubled).filter(notMultipleOfThree).scan(0, runningSum)
    .sink {
      counter.count += 1; counter.last = $0
    }
    check(counter.count, elements * 2 / 3, references)
  }
  measure(references, "hand-written loop") {
    let counter = CounterModel()
    var sum = 0
    for value in 0..<elements {
      let twice = doubled(value)
      guard notMultipleOfThree(twice) else { continue }
      sum = runningSum(sum, twice)
      counter.count += 1
      counter.last = sum
    }
    check(counter.count, elements * 2 / 3, references)
  }

  let initialisers =
    "Publishers.Scan(upstream: Filter(upstream: Map(upstream: …))) → sink (per element)"
  measure(initialisers, "Sluice") {
    let tally = Tally()
    let source = Sluice.Deferred {
      Sluice.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements)
    }
    let mapped = Sluice.Publishers.Map(upstream: source, transform: doubled)
    let filtered = Sluice.Publishers.Filter(upstream: mapped, isIncluded: notMultipleOfThree)
    let scanned = Sluice.Publishers.Scan(
      upstream: filtered, initialResult: 0, nextPartialResult: runningSum)
    _ = scanned.sink { consume(tally, $0) }
    check(tally.count, elements * 2 / 3, initialisers)
  }
  measure(initialisers, "OpenCombine") {
    let tally = Tally()
    let source = OpenCombine.Deferred {
      OpenCombine.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements)
    }
    let mapped = OpenCombine.Publishers.Map(upstream: source, transform: doubled)
    let filtered = OpenCombine.Publishers.Filter(upstream: mapped, isIncluded: notMultipleOfThree)
    let scanned = OpenCombine.Publishers.Scan(
      upstream: filtered, initialResult: 0, nextPartialResult: runningSum)
    _ = scanned.sink { consume(tally, $0) }
    check(tally.count, elements * 2 / 3, initialisers)
  }

  let cycle = "subscribe + cancel a sink on a subject (per cycle)"
  measure(cycle, "Sluice") {
    let subject = Sluice.PassthroughSubject<Int, Never>()
    for _ in 0..<elements { subject.sink { _ in }.cancel() }
  }
  measure(cycle, "OpenCombine") {
    let subject = OpenCombine.PassthroughSubject<Int, Never>()
    for _ in 0..<elements { subject.sink { _ in }.cancel() }
  }

  // The shape an app has: a short chain, its cancellable kept in a set, the set cleared later.
  let stored =
    "subscribe map → sink on a subject, store in a Set<AnyCancellable>, clear the set (per subscription)"
  measure(stored, "Sluice") {
    let subject = Sluice.PassthroughSubject<Int, Never>()
    let tally = Tally()
    var cancellables = Set<Sluice.AnyCancellable>()
    for _ in 0..<elements {
      subject.map { $0 &+ 1 }.sink { consume(tally, $0) }.store(in: &cancellables)
    }
    check(cancellables.count, elements, stored)
    cancellables.removeAll()
  }
  measure(stored, "OpenCombine") {
    let subject = OpenCombine.PassthroughSubject<Int, Never>()
    let tally = Tally()
    var cancellables = Set<OpenCombine.AnyCancellable>()
    for _ in 0..<elements {
      subject.map { $0 &+ 1 }.sink { consume(tally, $0) }.store(in: &cancellables)
    }
    check(cancellables.count, elements, stored)
    cancellables.removeAll()
  }
}
