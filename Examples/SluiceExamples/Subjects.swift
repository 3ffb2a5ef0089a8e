import Foundation
import Sluice
import SluiceTesting
import Synchronization

/// A `PassthroughSubject` feeding a fast and a slow subscriber, a `CurrentValueSubject` whose
/// subscriber catches up with the latest value, a subscriber that clamps the value from inside
/// `receive`, one subscription shared by `autoconnect()`, and feedback from two threads.
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
  lines.append(await feedbackFromTwoThreads())
  return lines
}

/// Feedback across threads: a sink on `a.merge(with: b)` sends every fifth value back into `b`
/// while one thread sends into `a` and another into `b`. Combine holds its locks across delivery,
/// so each thread can end up waiting for the lock the other holds; in Sluice a send made inside
/// a delivery never waits (it is queued, and its call waits at its end holding nothing), so both
/// threads finish and every value arrives once.
private func feedbackFromTwoThreads() async -> String {
  final class Tally: Sendable {
    let received = Mutex(0)
    let senders = Mutex(2)
  }
  let tally = Tally()
  let a = PassthroughSubject<Int, Never>()
  let b = PassthroughSubject<Int, Never>()
  let sink = a.merge(with: b).sink { value in
    tally.received.withLock { $0 += 1 }
    if value > 0, value % 5 == 0 { b.send(-value) }
  }
  await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
    for subject in [a, b] {
      Thread.detachNewThread {  // blocking work on threads of their own, not the task's
        for value in 1...10_000 { subject.send(value) }
        if tally.senders.withLock({
          $0 -= 1; return $0
        }) == 0 {
          done.resume()
        }
      }
    }
  }
  withExtendedLifetime(sink) {}
  let received = tally.received.withLock { $0 }
  return "feedback through merge from two threads: \(received) values (20,000 sent, 4,000 fed back)"
}
