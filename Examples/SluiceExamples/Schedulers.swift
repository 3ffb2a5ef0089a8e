import Dispatch
import Sluice
import SluiceTesting

/// A `TestScheduler` moves time only when told; a real `DispatchQueue` runs actions in order.
@Sendable func schedulersTour() async -> [String] {
  var lines: [String] = []

  let scheduler = DispatchQueue.test
  let start = scheduler.now
  scheduler.schedule(after: start.advanced(by: .seconds(2))) { lines.append("2s: second") }
  scheduler.schedule(after: start.advanced(by: .seconds(1))) { lines.append("1s: first") }
  let ticking = scheduler.schedule(after: start, interval: .milliseconds(500)) {
    lines.append("tick at \(Double(start.distance(to: scheduler.now).magnitude) / 1e9)s")
  }
  scheduler.advance(by: .seconds(1))
  ticking.cancel()
  scheduler.advance(by: .seconds(5))
  lines.append(
    "virtual clock now at +\(start.distance(to: scheduler.now).magnitude / 1_000_000_000)s")

  let queue = DispatchQueue(label: "tour.serial")
  let order = await withCheckedContinuation { (continuation: CheckedContinuation<[Int], Never>) in
    var seen: [Int] = []
    for index in 1...3 { queue.schedule { seen.append(index) } }
    queue.schedule { continuation.resume(returning: seen) }
  }
  lines.append("DispatchQueue ran actions in order: \(order)")
  return lines
}
