import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import Synchronization
import Testing

/// A running run loop does not grow with the actions scheduled on it (issue 40).
///
/// swift-corelibs-foundation keeps ~350 bytes of every one-shot `Timer` added to a run loop
/// (~500 of every repeating one invalidated); the scheduler made one per action (to wake the
/// loop, or to fire a delayed action) and `Timer.publish` one per connection, so
/// `receive(on: RunLoop)` grew ~450 bytes per value (+22 MB over 50,000 values). Each test sends
/// 10^5 values (scaled by `SLUICE_STRESS_SCALE`) through a run loop running on a thread of its
/// own, in batches it waits for (a backlog would show up as resident memory too), after a warm-up
/// of a tenth, and allows 8 MiB of growth: 80 bytes a value. (Measured before the fix: 450 to
/// 880 bytes a value, 570 per `Timer.publish` connection.)
@Suite("RunLoop scheduler: memory per value on a running run loop", .onThreadsOfTheirOwn)
struct RunLoopMemoryTests {
  /// A thread of its own running its run loop (default mode) until `stop()`.
  final class RunningLoop: @unchecked Sendable {
    // Safety: `runLoop` is written once before `ready` is signalled and only read after.
    var runLoop: RunLoop!
    private let ready = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    private let ended = DispatchSemaphore(value: 0)

    init() {
      Thread.detachNewThread { [self] in
        runLoop = RunLoop.current
        // A source to keep `run(mode:before:)` from returning at once on an empty loop.
        let far = Timer(fire: .distantFuture, interval: 600, repeats: true) { _ in }
        runLoop.add(far, forMode: .default)
        ready.signal()
        while !stopped.load(ordering: .acquiring) {
          _ = runLoop.run(mode: .default, before: Date(timeIntervalSinceNow: 1))
        }
        far.invalidate()
        ended.signal()
      }
      ready.wait()
    }

    func stop() {
      stopped.store(true, ordering: .releasing)
      runLoop.schedule {}  // wakes it to see the flag
      _ = ended.wait(timeout: .now() + 600)
    }
  }

  static let values = stressScaled(100_000)
  static let batch = 100

  /// Runs `send(first, count)` for batches of values and waits for `delivered` to reach each
  /// batch's end; returns the resident memory grown after the warm-up.
  func growth(
    delivered: @escaping @Sendable () -> Int, send: (_ first: Int, _ count: Int) -> Void
  ) -> Int {
    let total = Self.values
    let warmUp = total / 10
    var before = residentBytes()
    var sent = 0
    while sent < total + warmUp {
      if sent == warmUp { before = residentBytes() }
      send(sent, Self.batch)
      sent += Self.batch
      let deadline = Date(timeIntervalSinceNow: 600)
      while delivered() < sent, Date() < deadline { usleep(50) }
      if delivered() < sent { break }
    }
    #expect(delivered() >= total + warmUp, "every value arrived")
    return residentBytes() - before
  }

  func check(_ grown: Int, _ what: String) {
    let perValue = grown / Self.values
    #expect(
      grown < 8 << 20,
      "\(what): resident memory grew by \(grown >> 10) KiB over \(Self.values) values (\(perValue) bytes a value)"
    )
  }

  @Test func receiveOnARunLoopFedFromAnotherThread() {
    let loop = RunningLoop()
    let subject = PassthroughSubject<Int, Never>()
    let count = Atomic<Int>(0)
    let sink = subject.receive(on: loop.runLoop).sink { _ in count.add(1, ordering: .releasing) }
    let grown = growth(delivered: { count.load(ordering: .acquiring) }) { first, number in
      for value in first..<(first + number) { subject.send(value) }
    }
    sink.cancel()
    loop.stop()
    check(grown, "receive(on: RunLoop)")
  }

  @Test func scheduleAfterOnARunLoop() {
    let loop = RunningLoop()
    let runLoop = loop.runLoop!
    let count = Atomic<Int>(0)
    let grown = growth(delivered: { count.load(ordering: .acquiring) }) { _, number in
      for _ in 0..<number {
        runLoop.schedule(after: runLoop.now) { count.add(1, ordering: .releasing) }
      }
    }
    loop.stop()
    check(grown, "RunLoop.schedule(after:)")
  }

  @Test func delayOnARunLoop() {
    let loop = RunningLoop()
    let subject = PassthroughSubject<Int, Never>()
    let count = Atomic<Int>(0)
    let sink = subject.delay(for: .microseconds(1), scheduler: loop.runLoop)
      .sink { _ in count.add(1, ordering: .releasing) }
    let grown = growth(delivered: { count.load(ordering: .acquiring) }) { first, number in
      for value in first..<(first + number) { subject.send(value) }
    }
    sink.cancel()
    loop.stop()
    check(grown, "delay on a RunLoop")
  }

  @Test func debounceOnARunLoop() {
    // One value at a time, each waited for: every value arms the debounce timer anew.
    let loop = RunningLoop()
    let subject = PassthroughSubject<Int, Never>()
    let count = Atomic<Int>(0)
    let sink = subject.debounce(for: .microseconds(1), scheduler: loop.runLoop)
      .sink { _ in count.add(1, ordering: .releasing) }
    let grown = growth(delivered: { count.load(ordering: .acquiring) }) { first, number in
      for value in first..<(first + number) {
        subject.send(value)
        let deadline = Date(timeIntervalSinceNow: 600)
        while count.load(ordering: .acquiring) <= value, Date() < deadline { usleep(20) }
      }
    }
    sink.cancel()
    loop.stop()
    check(grown, "debounce on a RunLoop")
  }

  @Test func timerPublishTicksOnARunLoop() {
    let loop = RunningLoop()
    let count = Atomic<Int>(0)
    let ticks = Timer.publish(every: 0.000_01, on: loop.runLoop, in: .default).autoconnect()
      .sink { _ in count.add(1, ordering: .releasing) }
    // The timer ticks on its own: each "batch" waits for the next hundred ticks.
    let grown = growth(delivered: { count.load(ordering: .acquiring) }) { _, _ in }
    ticks.cancel()
    loop.stop()
    check(grown, "Timer.publish")
  }
}

extension RunLoopMemoryTests {
  /// Each connection used to be a Foundation `Timer`, invalidated on cancel.
  @Test func timerPublishConnectCancelCycles() {
    let loop = RunningLoop()
    let count = Atomic<Int>(0)
    let grown = growth(delivered: { count.load(ordering: .acquiring) }) { _, number in
      for _ in 0..<number {
        let connection = Timer.publish(every: 1000, on: loop.runLoop, in: .default).connect()
        connection.cancel()
        count.add(1, ordering: .releasing)
      }
    }
    loop.stop()
    check(grown, "Timer.publish connect + cancel")
  }
}
