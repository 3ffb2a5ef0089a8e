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

  let cycle = "subscribe + cancel a sink on a subject (per cycle)"
  measure(cycle, "Sluice") {
    let subject = Sluice.PassthroughSubject<Int, Never>()
    for _ in 0..<elements { subject.sink { _ in }.cancel() }
  }
  measure(cycle, "OpenCombine") {
    let subject = OpenCombine.PassthroughSubject<Int, Never>()
    for _ in 0..<elements { subject.sink { _ in }.cancel() }
  }
}
