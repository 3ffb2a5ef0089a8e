// The liveness rows: how long a second thread's single call takes while another thread sends
// into the same pipeline without pause (issue 29's probe, as an app would meet it: a main
// thread reacting to a tap while a background thread streams).
//
// Thread B sends without pause into the pipeline, whose sink does about a microsecond of work
// per value; thread A makes one call every 5 ms, 200 times (a send, or a subscribe + cancel of a
// sink). The table gives A's worst and 99th-percentile call, and the resident memory before and
// after, for Sluice and, where it has the operator, OpenCombine, measured in the same run.
//
import Foundation
import OpenCombine
import Sluice

#if canImport(Glibc)
  import Glibc
#endif

/// About a microsecond of work, as a sink that updates a model might do.
@inline(never)
func work(_ value: Int) {
  var spin = value
  for step in 0..<300 { spin = spin &* 31 &+ step }
  if spin == 42 { print("") }
}

/// Resident memory of this process, in MiB (Linux: /proc/self/statm).
func residentMiB() -> Double {
  guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
    let pages = text.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
  else { return 0 }
  return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
}

/// One probe: `produce(i)` in a loop on thread B, `call(i)` every 5 ms on thread A, 200 times.
/// Returns A's call durations in microseconds, or `nil` if A's calls had not all returned
/// after `limit` seconds (the row is then reported as stuck).
func probe(
  limit: Double = 30, produce: @escaping @Sendable (Int) -> Void,
  call: @escaping @Sendable (Int) -> Void
) -> [Double]? {
  final class Flag: @unchecked Sendable {
    // Safety: written by one thread, read by another; a late read only delays a stop.
    var stopped = false
    var started = false
  }
  let flag = Flag()
  let producerDone = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    var index = 0
    while !flag.stopped {
      produce(index)
      index += 1
      flag.started = true
    }
    producerDone.signal()
  }
  while !flag.started { usleep(100) }
  final class Times: @unchecked Sendable {
    // Safety: written by thread A only, read after `done` is signalled.
    var micros: [Double] = []
  }
  let times = Times()
  let done = DispatchSemaphore(value: 0)
  Thread.detachNewThread {
    let clock = ContinuousClock()
    for index in 0..<200 {
      let elapsed = clock.measure { call(1_000_000 + index) }
      times.micros.append(
        Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12)
      usleep(5_000)
    }
    done.signal()
  }
  let finished = done.wait(timeout: .now() + limit) == .success
  flag.stopped = true
  producerDone.wait()
  if !finished { done.wait() }
  return finished ? times.micros : nil
}

struct Result {
  let worst: Double
  let p99: Double
  let memory: (before: Double, after: Double)
}

func run(_ body: () -> [Double]?) -> Result? {
  let before = residentMiB()
  guard let micros = body()?.sorted() else { return nil }
  return Result(
    worst: micros.last ?? 0, p99: micros[Int(Double(micros.count - 1) * 0.99)],
    memory: (before, residentMiB()))
}

/// The rows: a scenario, an implementation and its probe (built outside `main.swift`, whose
/// top-level code is main-actor isolated: the sinks' closures run on the probe's threads).
func livenessRows() -> [(String, String, () -> [Double]?)] {
  var rowsToRun: [(String, String, () -> [Double]?)] = []

  rowsToRun.append(
    (
      "PassthroughSubject → sink", "Sluice",
      {
        let subject = Sluice.PassthroughSubject<Int, Never>()
        let sink = subject.sink { work($0) }
        defer { sink.cancel() }
        let shared = subject
        return probe(produce: { shared.send($0) }, call: { shared.send($0) })
      }
    ))
  rowsToRun.append(
    (
      "PassthroughSubject → sink", "OpenCombine",
      {
        let subject = OpenCombine.PassthroughSubject<Int, Never>()
        let sink = subject.sink { work($0) }
        defer { sink.cancel() }
        nonisolated(unsafe) let shared = subject
        return probe(produce: { shared.send($0) }, call: { shared.send($0) })
      }
    ))
  rowsToRun.append(
    (
      "a.merge(with: b) → sink", "Sluice",
      {
        let a = Sluice.PassthroughSubject<Int, Never>()
        let b = Sluice.PassthroughSubject<Int, Never>()
        let sink = a.merge(with: b).sink { work($0) }
        defer { sink.cancel() }
        let (sharedA, sharedB) = (a, b)
        return probe(produce: { sharedB.send($0) }, call: { sharedA.send($0) })
      }
    ))
  rowsToRun.append(
    (
      "[a, b].publisher.flatMap { $0 } → sink", "Sluice",
      {
        let a = Sluice.PassthroughSubject<Int, Never>()
        let b = Sluice.PassthroughSubject<Int, Never>()
        let sink = [a, b].publisher.flatMap { $0 }.sink { work($0) }
        defer { sink.cancel() }
        let (sharedA, sharedB) = (a, b)
        return probe(produce: { sharedB.send($0) }, call: { sharedA.send($0) })
      }
    ))
  rowsToRun.append(
    (
      "[a, b].publisher.flatMap { $0 } → sink", "OpenCombine",
      {
        let a = OpenCombine.PassthroughSubject<Int, Never>()
        let b = OpenCombine.PassthroughSubject<Int, Never>()
        let sink = [a, b].publisher.flatMap { $0 }.sink { work($0) }
        defer { sink.cancel() }
        nonisolated(unsafe) let (sharedA, sharedB) = (a, b)
        return probe(produce: { sharedB.send($0) }, call: { sharedA.send($0) })
      }
    ))
  rowsToRun.append(
    (
      "a.combineLatest(b) → sink", "Sluice",
      {
        let a = Sluice.PassthroughSubject<Int, Never>()
        let b = Sluice.PassthroughSubject<Int, Never>()
        let sink = a.combineLatest(b).sink { work($0.0) }
        defer { sink.cancel() }
        let (sharedA, sharedB) = (a, b)
        return probe(produce: { sharedB.send($0) }, call: { sharedA.send($0) })
      }
    ))
  rowsToRun.append(
    (
      "subscribe + cancel a sink while another thread sends", "Sluice",
      {
        let subject = Sluice.PassthroughSubject<Int, Never>()
        let sink = subject.sink { work($0) }
        defer { sink.cancel() }
        let shared = subject
        return probe(
          produce: { shared.send($0) }, call: { _ in shared.sink { work($0) }.cancel() })
      }
    ))
  rowsToRun.append(
    (
      "subscribe + cancel a sink while another thread sends", "OpenCombine",
      {
        let subject = OpenCombine.PassthroughSubject<Int, Never>()
        let sink = subject.sink { work($0) }
        defer { sink.cancel() }
        nonisolated(unsafe) let shared = subject
        return probe(
          produce: { shared.send($0) }, call: { _ in shared.sink { work($0) }.cancel() })
      }
    ))
  return rowsToRun
}
