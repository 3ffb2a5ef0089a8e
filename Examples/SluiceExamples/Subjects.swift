import Sluice
import SluiceTesting

/// A `PassthroughSubject` feeding a fast and a slow subscriber, a `CurrentValueSubject` whose
/// subscriber catches up with the latest value, a subscriber that clamps the value from inside
/// `receive`, and one subscription shared by `autoconnect()`.
@Sendable func subjectsTour() async -> [String] {
  var lines: [String] = []

  let prices = PassthroughSubject<Int, Never>()
  let everything = RecordingSubscriber<Int, Never>()
  let firstTwo = RecordingSubscriber<Int, Never>(initialDemand: .max(2))
  prices.subscribe(everything)
  prices.subscribe(firstTwo)
  for price in [100, 101, 99, 102] { prices.send(price) }
  prices.send(completion: .finished)
  lines.append("unlimited demand got \(everything.values), then \(everything.completion!)")
  lines.append("demand of 2 got \(firstTwo.values): the rest was dropped, as in Combine")

  let status = CurrentValueSubject<String, Never>("idle")
  let watcher = RecordingSubscriber<String, Never>(initialDemand: .max(1))
  status.subscribe(watcher)
  status.value = "loading"  // no demand: missed...
  status.value = "ready"  // ...and this too
  watcher.request(.max(1))  // ...but the next request delivers the latest value
  lines.append("CurrentValueSubject subscriber saw \(watcher.values)")
  watcher.cancel()  // a subscription lasts until it is cancelled or completes

  // A subscriber that clamps the value from inside `receive`: its `value = 10` is queued behind
  // the value being delivered, so every subscriber sees the values in one order and ends on 10.
  let volume = CurrentValueSubject<Int, Never>(5)
  var shown: [Int] = []
  let clamp = volume.sink { if $0 > 10 { volume.value = 10 } }
  let label = volume.sink { shown.append($0) }
  volume.value = 42
  lines.append("clamped from inside receive: the label saw \(shown), the value is \(volume.value)")
  withExtendedLifetime((clamp, label)) {}

  // One upstream subscription shared by every subscriber: connected by the first, and
  // disconnected when the last cancels.
  let ticker = PassthroughSubject<String, Never>()
  let shared = ticker.makeConnectable().autoconnect()
  var board: [String] = []
  let left = shared.sink { board.append("left saw \($0)") }
  let right = shared.sink { board.append("right saw \($0)") }
  ticker.send("AAPL")
  left.cancel()
  ticker.send("MSFT")
  right.cancel()
  ticker.send("GOOG")  // nobody connected any more
  lines.append("autoconnect: \(board)")
  return lines
}
