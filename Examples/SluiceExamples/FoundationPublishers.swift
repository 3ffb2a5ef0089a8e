import Foundation
import Sluice

/// Foundation's publishers — `Timer.publish` on a run loop, `NotificationCenter.publisher` — and a
/// hand-written `ObservableObjectPublisher`, consumed from async code.
@Sendable func foundationTour() async -> [String] {
  var lines: [String] = []

  // Timer.publish: a connectable publisher of dates on a run loop. Here the run loop of a thread
  // of its own; autoconnect() starts the timer at the first subscription, prefix(3) ends it.
  let ticks = await RunLoopThread.run { runLoop in
    Timer.publish(every: 0.01, on: runLoop, in: .default).autoconnect().prefix(3)
  }
  lines.append(
    "Timer.publish(every: 0.01).autoconnect().prefix(3): \(ticks.count) ticks, in order: "
      + "\(ticks == ticks.sorted())")

  // NotificationCenter.publisher(for:): posts become values, read by `for await`. A notification
  // publisher is hot: `values` keeps what is posted before the consumer asks for it.
  let center = NotificationCenter()
  let downloaded = Notification.Name("downloaded")
  var sizes = center.publisher(for: downloaded)
    .compactMap { $0.userInfo?["bytes"] as? Int }
    .prefix(3)
    .values.makeAsyncIterator()
  for bytes in [512, 2048, 128] {
    center.post(name: downloaded, object: nil, userInfo: ["bytes": bytes])
  }
  var total = 0
  while let bytes = await sizes.next() { total += bytes }
  lines.append("NotificationCenter.publisher(for:): 3 downloads, \(total) bytes")

  // ObservableObjectPublisher, written by hand where a type announces its own changes.
  let cart = Cart()
  var announcements = 0
  let watching = cart.objectWillChange.sink { announcements += 1 }
  cart.add("tea")
  cart.add("milk")
  watching.cancel()
  lines.append("ObservableObjectPublisher: \(announcements) announcements for \(cart.items)")
  return lines
}

/// A model that announces changes through its own `ObservableObjectPublisher`.
final class Cart: ObservableObject {
  let objectWillChange = ObservableObjectPublisher()
  private(set) var items: [String] = []

  func add(_ item: String) {
    objectWillChange.send()
    items.append(item)
  }
}

/// A thread running its own run loop, for run-loop publishers in code that has none.
enum RunLoopThread {
  /// Subscribes to the publisher `make` builds on the thread's run loop, runs the loop until the
  /// publisher completes, and returns its values.
  static func run<P: Publisher & SendableMetatype>(
    _ make: @escaping @Sendable (RunLoop) -> P
  ) async -> [P.Output] where P.Output: Sendable, P.Failure == Never {
    await withCheckedContinuation { continuation in
      let thread = Thread {
        let runLoop = RunLoop.current
        var values: [P.Output] = []
        var finished = false
        let cancellable = make(runLoop).sink(
          receiveCompletion: { _ in finished = true }, receiveValue: { values.append($0) })
        while !finished { _ = runLoop.run(mode: .default, before: Date().addingTimeInterval(0.01)) }
        cancellable.cancel()
        continuation.resume(returning: values)
      }
      thread.start()
    }
  }
}
