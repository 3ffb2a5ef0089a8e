import Foundation
import SluiceAsync
import SluiceTestSupport
import SluiceTesting
import Synchronization
import Testing

/// `asyncMap`'s delivery is bounded per drain: whoever delivers the results in order (a step's
/// task when it finishes, or a `request` that finds results ready) delivers at most a batch and
/// leaves the rest to a task of its own — so neither a caller's `request` nor a cooperative-pool
/// thread is kept delivering while other threads keep requesting and steps keep finishing.
@Suite("Liveness: asyncMap delivers in bounded batches")
struct AsyncMapLivenessTests {
  @Test("99 results waiting behind the first are delivered 32 at a time, each batch by a task")
  func burstIsDeliveredInBatches() async {
    let (gate, open) = AsyncStream<Void>.makeStream()
    let finished = Atomic<Int>(0)
    let runs = Mutex((key: 0, length: 0, longest: 0, values: [Int]()))
    let done = Box<Void>()
    let sink = (0..<100).publisher.asyncMap(maxConcurrent: 100) { value in
      if value == 0 {
        for await _ in gate { break }
      } else {
        finished.add(1, ordering: .relaxed)
      }
      return value
    }.sink(
      receiveCompletion: { _ in done.set(()) },
      receiveValue: { value in
        // Each delivery's task: a run of consecutive deliveries by one task is one drain (the
        // steps have all finished, so only the drain's own tasks deliver).
        let task = withUnsafeCurrentTask { $0?.hashValue } ?? 0
        runs.withLock { runs in
          runs.length = runs.key == task ? runs.length + 1 : 1
          runs.key = task
          runs.longest = max(runs.longest, runs.length)
          runs.values.append(value)
        }
      })
    while finished.load(ordering: .relaxed) < 99 { await Task.yield() }
    try? await Task.sleep(for: .milliseconds(20))  // their results stored
    open.yield()
    while done.value == nil { try? await Task.sleep(for: .milliseconds(1)) }
    let state = runs.withLock { $0 }
    #expect(state.values == Array(0..<100), "every value, in order")
    #expect(state.longest <= 32, "one drain delivered \(state.longest) values")
    sink.cancel()
  }

  @Test("request from a second thread returns while another requests without pause")
  func requestsReturn() async {
    let subscription = Box<any Subscription>()
    let order = Mutex((last: -1, inOrder: true))
    (0..<Int.max).publisher.asyncMap(maxConcurrent: 4) { $0 }.subscribe(
      AnySubscriber<Int, Never>(
        receiveSubscription: { subscription.set($0) },
        receiveValue: { value in
          order.withLock { order in
            if value != order.last + 1 { order.inOrder = false }
            order.last = value
          }
          var spin = 0
          for step in 0..<2_000 { spin &+= step }  // a few microseconds of work per value
          withExtendedLifetime(spin) {}
          return .none
        },
        receiveCompletion: { _ in }))
    let shared = UncheckedSendable(subscription.value!)
    let producer = RacingProducer { _ in shared.value.request(.max(1)) }
    let returned = await callsReturn(whileRunning: producer) { progress in
      for _ in 0..<2_000 {
        shared.value.request(.max(1))
        progress.tick()
      }
    }
    #expect(returned, "every request returned while the other thread kept requesting")
    shared.value.cancel()
    #expect(order.withLock { $0.inOrder })
  }
}
