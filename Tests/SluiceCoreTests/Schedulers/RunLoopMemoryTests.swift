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
/// own, in batches it waits for (a backlog would show up as memory too), after a warm-up of a
/// tenth, and allows the heap to grow by 80 bytes a value plus 64 KiB (7.7 MiB at full size).
/// (Measured in resident memory before the fix: 450 to 880 bytes a value, 570 per
/// `Timer.publish` connection.)
///
/// What grows is counted as the allocator counts it, the bytes still allocated
/// (``liveHeapBytes()``), not as resident memory: under the address sanitizer every freed block
/// stays resident for a while (its quarantine), which made these tests fail there with nothing
/// leaked. And each measurement runs in a process of its own (an exit test): the heap is the
/// whole process's, and the tests running beside it allocate and free megabytes at a time.
@Suite("RunLoop scheduler: memory per value on a running run loop")
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
  /// What the heap may grow by: 80 bytes a value, and 64 KiB for what Foundation and the run
  /// loop keep once (the first values after the warm-up still fill caches).
  static let allowance = 80 * values + (64 << 10)

  /// Runs `send(first, count)` for batches of values and waits for `delivered` to reach each
  /// batch's end; returns the heap bytes grown after the warm-up (resident memory where the
  /// allocator cannot tell), or `nil` if values stopped arriving (for ten minutes).
  static func growth(
    delivered: @escaping @Sendable () -> Int, send: (_ first: Int, _ count: Int) -> Void
  ) -> Int? {
    let total = values
    let warmUp = total / 10
    let memory = { liveHeapBytes() ?? residentBytes() }
    var before = memory()
    var sent = 0
    while sent < total + warmUp {
      if sent == warmUp { before = memory() }
      send(sent, batch)
      sent += batch
      let deadline = Date(timeIntervalSinceNow: 600)
      while delivered() < sent, Date() < deadline { usleep(50) }
      if delivered() < sent { return nil }
    }
    return memory() - before
  }

  /// In the exit test's process: runs `measure` on a thread of its own and writes its figure to
  /// standard error for ``check(_:_:)``.
  static func measureAlone(_ measure: @escaping @Sendable () -> Int?) async {
    let grown = await onThreadOfItsOwn(measure)
    let figure = grown.map(String.init) ?? "values stopped arriving"
    FileHandle.standardError.write(Data("heap growth: \(figure)\n".utf8))
  }

  /// In the test's process: checks the figure the exit test's process wrote.
  func check(_ result: ExitTest.Result?, _ what: String) {
    let output = standardError(of: result)
    let figure = output.split(separator: "\n").last { $0.hasPrefix("heap growth: ") }?
      .dropFirst("heap growth: ".count)
    guard let figure, let grown = Int(figure) else {
      Issue.record(
        "\(what): \(figure.map(String.init) ?? "no figure"); its process wrote: \(output)")
      return
    }
    let line =
      "\(what): the heap grew by \(grown >> 10) KiB over \(Self.values) values "
      + "(\(grown / Self.values) bytes a value; allowed: \(Self.allowance >> 10) KiB)"
    print(line)
    #expect(grown < Self.allowance, "\(line)")
    if result?.exitStatus != .exitCode(EXIT_SUCCESS) { print(output) }  // e.g. a leak report
  }

  @Test func receiveOnARunLoopFedFromAnotherThread() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      await RunLoopMemoryTests.measureAlone(RunLoopMemoryTests.receiveOnARunLoop)
    }
    check(result, "receive(on: RunLoop)")
  }

  static func receiveOnARunLoop() -> Int? {
    let loop = RunningLoop()
    let subject = PassthroughSubject<Int, Never>()
    let count = Atomic<Int>(0)
    let sink = subject.receive(on: loop.runLoop).sink { _ in count.add(1, ordering: .releasing) }
    let grown = growth(delivered: { count.load(ordering: .acquiring) }) { first, number in
      for value in first..<(first + number) { subject.send(value) }
    }
    sink.cancel()
    loop.stop()
    return grown
  }

  @Test func scheduleAfterOnARunLoop() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      await RunLoopMemoryTests.measureAlone(RunLoopMemoryTests.scheduleAfter)
    }
    check(result, "RunLoop.schedule(after:)")
  }

  static func scheduleAfter() -> Int? {
    let loop = RunningLoop()
    let runLoop = loop.runLoop!
    let count = Atomic<Int>(0)
    let grown = growth(delivered: { count.load(ordering: .acquiring) }) { _, number in
      for _ in 0..<number {
        runLoop.schedule(after: runLoop.now) { count.add(1, ordering: .releasing) }
      }
    }
    loop.stop()
    return grown
  }

  @Test func delayOnARunLoop() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      await RunLoopMemoryTests.measureAlone(RunLoopMemoryTests.delay)
    }
    check(result, "delay on a RunLoop")
  }

  static func delay() -> Int? {
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
    return grown
  }

  @Test func debounceOnARunLoop() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      await RunLoopMemoryTests.measureAlone(RunLoopMemoryTests.debounce)
    }
    check(result, "debounce on a RunLoop")
  }

  static func debounce() -> Int? {
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
    return grown
  }

  @Test func timerPublishTicksOnARunLoop() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      await RunLoopMemoryTests.measureAlone(RunLoopMemoryTests.timerTicks)
    }
    check(result, "Timer.publish")
  }

  static func timerTicks() -> Int? {
    let loop = RunningLoop()
    let count = Atomic<Int>(0)
    let ticks = Timer.publish(every: 0.000_01, on: loop.runLoop, in: .default).autoconnect()
      .sink { _ in count.add(1, ordering: .releasing) }
    // The timer ticks on its own: each "batch" waits for the next hundred ticks.
    let grown = growth(delivered: { count.load(ordering: .acquiring) }) { _, _ in }
    ticks.cancel()
    loop.stop()
    return grown
  }
}

extension RunLoopMemoryTests {
  /// Each connection used to be a Foundation `Timer`, invalidated on cancel.
  @Test func timerPublishConnectCancelCycles() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      await RunLoopMemoryTests.measureAlone(RunLoopMemoryTests.connectCancelCycles)
    }
    check(result, "Timer.publish connect + cancel")
  }

  static func connectCancelCycles() -> Int? {
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
    return grown
  }
}
