import AsyncAlgorithms
import Dispatch
import OpenCombine
import OpenCombineDispatch
import Sluice
import Synchronization

/// The rows that wait for threads, queues, timers or an actor's worker: receive(on:) a
/// `DispatchQueue` and an `ActorScheduler`, debounce and throttle under a burst. Each iteration
/// moves `elements` values and ends when the last one came out.
func registerRealTimeRows() {
  let receiveOnQueue = "subject → receive(on: DispatchQueue) → sink (per element)"
  let queue = DispatchQueue(label: "benchmarks.receive-on", qos: .userInitiated)
  register(receiveOnQueue, "Sluice") {
    let subject = Sluice.PassthroughSubject<Int, Never>()
    await untilDone { done in
      let tally = Tally()
      let cancellable = subject.receive(on: queue).sink { _ in
        tally.count += 1
        if tally.count == elements { done() }
      }
      for value in 0..<elements { subject.send(value) }
      return cancellable
    }
  }
  register(receiveOnQueue, "OpenCombine") {
    let subject = OpenCombine.PassthroughSubject<Int, Never>()
    await untilDone { done in
      let tally = Tally()
      let cancellable = subject.receive(on: queue.ocombine).sink { _ in
        tally.count += 1
        if tally.count == elements { done() }
      }
      for value in 0..<elements { subject.send(value) }
      return cancellable
    }
  }
  register(receiveOnQueue, "AsyncStream read from another task") {
    check(await streamReadFromAnotherTask(), elements, receiveOnQueue)
  }
  // The floor of any `receive(on:)` that schedules each value as its own action, as Combine's
  // does: one `DispatchQueue.async` of an already-made block per value, nothing else.
  register(receiveOnQueue, "DispatchQueue.async of a prepared block per value (floor)") {
    await untilDone { done in
      let tally = Tally()
      let block: @convention(block) @Sendable () -> Void = {
        tally.count += 1
        if tally.count == elements { done() }
      }
      for _ in 0..<elements { queue.async(execute: block) }
      return tally
    }
  }

  let receiveOnActor = "subject → receive(on: ActorScheduler) → actor (per element)"
  register(receiveOnActor, "Sluice") {
    let counter = Counter()
    let subject = Sluice.PassthroughSubject<Int, Never>()
    // Waits for the last value the way the anchor waits for its reader: one suspension, resumed
    // by the actor (polling the actor would compete with the deliveries for it). Releasing the
    // kept cancellable at the end cancels the subscription.
    await untilDone { done in
      let cancellable = subject.receive(on: ActorScheduler(counter)).sink { _ in
        counter.assumeIsolated { counter in
          counter.add()
          if counter.count == elements { done() }
        }
      }
      for value in 0..<elements { subject.send(value) }
      return cancellable
    }
  }
  register(receiveOnActor, "AsyncStream read by the actor") {
    let counter = Counter()
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    let reader = Task { await counter.read(stream) }
    for value in 0..<elements { continuation.yield(value) }
    continuation.finish()
    await reader.value
    check(await counter.count, elements, receiveOnActor)
  }

  // Time operators on real time: a burst of values sent as fast as possible, then the quiet
  // interval; the row ends when the burst's last value comes out. The quiet interval is a floor
  // every implementation pays (interval / elements per value sent), so it is kept short.
  let interval = 100  // microseconds
  let debounce = "subject burst → debounce(100 µs) → last value (per value sent)"
  register(debounce, "Sluice") {
    let subject = Sluice.PassthroughSubject<Int, Never>()
    await untilDone { done in
      let cancellable = subject.debounce(for: .microseconds(interval), scheduler: queue).sink {
        if $0 == elements - 1 { done() }
      }
      for value in 0..<elements { subject.send(value) }
      return cancellable
    }
  }
  register(debounce, "OpenCombine") {
    let subject = OpenCombine.PassthroughSubject<Int, Never>()
    await untilDone { done in
      let cancellable = subject.debounce(for: .microseconds(interval), scheduler: queue.ocombine)
        .sink { if $0 == elements - 1 { done() } }
      for value in 0..<elements { subject.send(value) }
      return cancellable
    }
  }
  register(debounce, "async-algorithms debounce over AsyncStream, read from another task") {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    let reader = Task.detached {
      for await value in stream.debounce(for: .microseconds(interval)) where value == elements - 1 {
        return
      }
    }
    for value in 0..<elements { continuation.yield(value) }
    await reader.value
    continuation.finish()
  }

  registerThrottleRows(burst: elements, queue: queue, interval: interval)
  // The same with a burst ten times longer: the quiet interval and the timer's latency (about
  // 140 µs here, paid once per burst) weigh a tenth as much per value, so the row shows the
  // operators' own cost per value under a real scheduler.
  registerThrottleRows(burst: 10 * elements, queue: queue, interval: interval)
  registerObservationRows()
}

/// Throttle under a burst of `burst` values on `queue`, for Sluice and both anchors.
func registerThrottleRows(burst: Int, queue: DispatchQueue, interval: Int) {
  let scenario =
    burst == elements
    ? "subject burst → throttle(100 µs, latest: true) → last value (per value sent)"
    : "subject burst of \(burst) → throttle(100 µs, latest: true) → last value (per value sent)"
  register(scenario, "Sluice", values: burst) {
    let subject = Sluice.PassthroughSubject<Int, Never>()
    await untilDone { done in
      let cancellable = subject.throttle(
        for: .microseconds(interval), scheduler: queue, latest: true
      ).sink {
        if $0 == burst - 1 { done() }
      }
      for value in 0..<burst { subject.send(value) }
      return cancellable
    }
  }
  register(scenario, "OpenCombine", values: burst) {
    let subject = OpenCombine.PassthroughSubject<Int, Never>()
    await untilDone { done in
      let cancellable = subject.throttle(
        for: .microseconds(interval), scheduler: queue.ocombine, latest: true
      ).sink { if $0 == burst - 1 { done() } }
      for value in 0..<burst { subject.send(value) }
      return cancellable
    }
  }
  register(
    scenario, "async-algorithms throttle over AsyncStream, read from another task", values: burst
  ) {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    let reader = Task.detached {
      for await value in stream._throttle(for: .microseconds(interval), latest: true)
      where value == burst - 1 {
        return
      }
    }
    for value in 0..<burst { continuation.yield(value) }
    // async-algorithms' throttle emits the burst's last value only when its base ends (it
    // measures the interval when the next element arrives; there is no timer), so the burst
    // ends the stream.
    continuation.finish()
    await reader.value
  }
}

/// Runs `body`, then suspends until it calls `done` (from a dispatch queue), keeping what it
/// returns (its cancellable) alive until then. Calls of `done` after the first are ignored:
/// OpenCombine's `debounce` on a `DispatchQueue` arms a repeating timer and cancels it after it
/// fires, so under load it was seen delivering the burst's last value twice (which resumed the
/// continuation twice and crashed the run).
func untilDone(_ body: (@escaping @Sendable () -> Void) -> Any) async {
  let kept = KeptAlive()
  let finished = Finished()
  await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
    kept.value = body {
      if !finished.flag.exchange(true, ordering: .acquiringAndReleasing) { continuation.resume() }
    }
  }
  withExtendedLifetime(kept) {}
}

/// Whether a row's `done` was called.
final class Finished: Sendable {
  let flag = Atomic(false)
}

/// Holds a row's cancellable from inside a non-escaping closure until the row ends.
final class KeptAlive: @unchecked Sendable {
  // Safety: written once by the row's own task before it suspends, read by nobody else.
  var value: Any?
}

/// Yields `elements` values into an `AsyncStream` read by a detached task; returns how many the
/// reader saw.
func streamReadFromAnotherTask() async -> Int {
  let (stream, continuation) = AsyncStream<Int>.makeStream()
  let reader = Task.detached {
    var count = 0
    for await _ in stream { count += 1 }
    return count
  }
  for value in 0..<elements { continuation.yield(value) }
  continuation.finish()
  return await reader.value
}

/// The actor an `ActorScheduler` row delivers on.
actor Counter {
  var count = 0
  func add() { count += 1 }
  func read(_ stream: AsyncStream<Int>) async {
    for await _ in stream { count += 1 }
  }
}
