import Foundation
import SluiceAsync
import SluiceCore
import SluiceTestSupport
import Synchronization
import Testing

/// Attacks on `stream.publisher.values` read directly (`DirectIteration`), each
/// compared with the bridge (`stream.publisher.map { $0 }.values`, which subscribes).
@Suite("values read directly, attacked")
struct DirectIterationAttackTests {
  enum Path: String, CaseIterable, CustomStringConvertible {
    case direct, erased, bridge
    var description: String { rawValue }

    func iterator<Base: AsyncSequence & Sendable>(
      _ base: Base
    ) -> AsyncPublisher<AnyPublisher<Base.Element, Base.Failure>>.Iterator {
      switch self {
      case .direct, .erased: base.publisher.eraseToAnyPublisher().values.makeAsyncIterator()
      case .bridge: base.publisher.map { $0 }.eraseToAnyPublisher().values.makeAsyncIterator()
      }
    }

    func plainIterator<Base: AsyncSequence & Sendable>(
      _ base: Base
    ) -> AsyncPublisher<AsyncSequencePublisher<Base>>.Iterator {
      base.publisher.values.makeAsyncIterator()
    }
  }

  static func isDirect<Upstream>(_ iterator: AsyncPublisher<Upstream>.Iterator) -> Bool {
    String(describing: type(of: iterator.bridgeForTesting)).hasPrefix("DirectIteration")
  }

  struct Box<Base: AsyncIteratorProtocol>: @unchecked Sendable {
    let base: Base
    func next() async throws -> Base.Element? {
      var copy = base
      return try await copy.next()
    }
  }

  /// A producer that awaits something which ignores cancellation (a callback API, a queue).
  final class Gate: Sendable {
    let state = Mutex<(calls: Int, waiter: CheckedContinuation<Int?, Never>?)>((0, nil))
    func produce() async -> Int? {
      await withCheckedContinuation { continuation in
        state.withLock {
          $0.calls += 1
          $0.waiter = continuation
        }
      }
    }
    var isWaiting: Bool { state.withLock { $0.waiter != nil } }
    func open(_ value: Int?) {
      let waiter = state.withLock { state in
        defer { state.waiter = nil }
        return state.waiter
      }
      waiter?.resume(returning: value)
    }
  }

  final class Flag: Sendable {
    let value = Mutex<Int?>(nil)
    let done = Atomic<Bool>(false)
  }

  // MARK: 1. AsyncStream(unfolding:) with a producer that ignores cancellation

  /// Starts `read` in a task, cancels the task once the gate's producer waits, and checks that
  /// the read ended with `nil` before the producer was released.
  static func checkCancelledReadEndsAtOnce(
    _ path: Path, gate: Gate, _ read: sending @escaping () async -> Int?
  ) async {
    let flag = Flag()
    let consumer = Task {
      let value = await read()
      flag.value.withLock { $0 = value }
      flag.done.store(true, ordering: .sequentiallyConsistent)
    }
    #expect(await eventually(timeout: .seconds(120)) { gate.isWaiting })
    consumer.cancel()
    let endedAtOnce = await eventually(timeout: .seconds(120)) {
      flag.done.load(ordering: .sequentiallyConsistent)
    }
    gate.open(42)  // release the producer either way
    await consumer.value
    let value = flag.value.withLock { $0 }
    #expect(endedAtOnce, "\(path): a cancelled read waited for the producer")
    #expect(value == nil, "\(path): a cancelled read got \(String(describing: value))")
  }

  @Test(
    "cancelling a consumer reading an unfolding stream ends its next() with nil at once",
    arguments: Path.allCases)
  func unfoldingStreamCancelled(path: Path) async {
    let gate = Gate()
    let stream = AsyncStream<Int>(unfolding: { await gate.produce() })
    await Self.checkCancelledReadEndsAtOnce(path, gate: gate) {
      var iterator = path.iterator(stream)
      return await iterator.next()
    }
  }

  @Test(
    "firstValue() of an unfolding stream's publisher ends at once when cancelled",
    arguments: Path.allCases)
  func firstValueCancelled(path: Path) async {
    let gate = Gate()
    let stream = AsyncStream<Int>(unfolding: { await gate.produce() })
    let publisher: AnyPublisher<Int, Never> =
      path == .bridge
      ? stream.publisher.map { $0 }.eraseToAnyPublisher() : stream.publisher.eraseToAnyPublisher()
    await Self.checkCancelledReadEndsAtOnce(path, gate: gate) { try? await publisher.firstValue() }
  }

  @Test(
    "AsyncThrowingStream(unfolding:): a cancelled consumer's next() ends at once",
    arguments: Path.allCases)
  func unfoldingThrowingStreamCancelled(path: Path) async {
    let gate = Gate()
    let stream = AsyncThrowingStream<Int, any Error>(unfolding: { await gate.produce() })
    await Self.checkCancelledReadEndsAtOnce(path, gate: gate) {
      var iterator = path.iterator(stream)
      return try? await iterator.next()
    }
  }

  @Test(
    "cancelled between two reads: the stream goes on for a later reader", arguments: Path.allCases)
  func cancelledBetweenReads(path: Path) async throws {
    let terminated = Atomic<Bool>(false)
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    continuation.onTermination = { _ in terminated.store(true, ordering: .sequentiallyConsistent) }
    continuation.yield(1)
    let consumer = Task {
      var iterator = path.iterator(stream)
      let first = await iterator.next()
      withUnsafeCurrentTask { $0?.cancel() }
      let second = await iterator.next()
      return (first, second)
    }
    let (first, second) = await consumer.value
    #expect(first == 1)
    #expect(second == nil)
    // Nothing ended the stream: the consumer's task was between reads (the bridge's pulling
    // task parked for demand, the direct read not begun).
    let wasTerminated = terminated.load(ordering: .sequentiallyConsistent)
    #expect(!wasTerminated, "\(path)")
    #expect("\(continuation.yield(2))".hasPrefix("enqueued"), "\(path)")
    var later = path.iterator(stream)
    let next = await later.next()
    #expect(next == 2, "\(path)")
    continuation.finish()
  }

  // MARK: 2. A copy cancelled while another reads: see DirectIterationTests.aWaitingCopyCancelled
  // (the documented difference: the reader goes on). Starting a second iteration of the stream
  // while that reader still reads makes two readers, which `AsyncStream` traps, as it does for
  // two subscriptions of its publisher at once.

  // MARK: 3. Many short-lived iterators, cancelled at random, a producer thread at full speed

  @Test("rounds: a consumer cancelled at random while a thread yields", arguments: Path.allCases)
  func randomCancellation(path: Path) async throws {
    for round in 0..<300 {
      let (stream, continuation) = AsyncStream<Int>.makeStream()
      let count = 2_000
      let producer = Thread {
        for value in 0..<count { continuation.yield(value) }
        if round % 3 == 0 { continuation.finish() }
      }
      producer.start()
      let consumer = Task {
        var iterator = path.iterator(stream)
        var received: [Int] = []
        while let value = await iterator.next() { received.append(value) }
        let afterEnd = await iterator.next()
        return (received, afterEnd)
      }
      if round % 2 == 0 { await Task.yield() }
      if round % 5 != 0 {
        try await Task.sleep(for: .microseconds(Int.random(in: 0...300)))
      }
      consumer.cancel()
      let (received, afterEnd) = await consumer.value
      #expect(received == Array(0..<received.count), "\(path) round \(round)")
      #expect(afterEnd == nil)
      continuation.finish()
    }
  }

  // MARK: 4. Copies from several tasks, cancellations and finish racing

  @Test("shared copies: random cancels and finish race", arguments: Path.allCases)
  func sharedCopiesRace(path: Path) async throws {
    for round in 0..<200 {
      let (stream, continuation) = AsyncStream<Int>.makeStream()
      let shared = Box(base: path.iterator(stream))
      let consumers = (0..<6).map { _ in
        Task {
          var received: [Int] = []
          while let value = try await shared.next() { received.append(value) }
          let again = try await shared.next()
          return (received, again)
        }
      }
      let count = 1_000
      let producer = Thread {
        for value in 0..<count { continuation.yield(value) }
        continuation.finish()
      }
      producer.start()
      if round % 2 == 0 {
        try await Task.sleep(for: .microseconds(Int.random(in: 0...200)))
        consumers[Int.random(in: 0..<6)].cancel()
      }
      var all: [Int] = []
      for consumer in consumers {
        let (received, again) = try await consumer.value
        #expect(received == received.sorted())
        #expect(again == nil)
        all += received
      }
      all.sort()
      #expect(all == Array(0..<all.count), "\(path) round \(round): duplicates or holes")
      if round % 2 == 1 { #expect(all.count == count, "\(path) round \(round): lost values") }
    }
  }

  // MARK: 5. A throwing stream failing while copies wait

  @Test("a throwing stream fails while three copies wait", arguments: Path.allCases)
  func failureWhileWaiting(path: Path) async throws {
    for _ in 0..<100 {
      let (stream, continuation) = AsyncThrowingStream<Int, any Error>.makeStream()
      let shared = Box(base: path.iterator(stream))
      let consumers = (0..<4).map { _ in
        Task { () -> (values: [Int], threw: Bool, after: Int?) in
          var values: [Int] = []
          var threw = false
          do {
            while let value = try await shared.next() { values.append(value) }
          } catch { threw = true }
          let after = try? await shared.next()
          return (values, threw, after)
        }
      }
      continuation.yield(1)
      continuation.yield(2)
      try await Task.sleep(for: .milliseconds(1))
      continuation.finish(throwing: TestError())
      var failures = 0
      var all: [Int] = []
      for consumer in consumers {
        let result = await consumer.value
        if result.threw { failures += 1 }
        all += result.values
        #expect(result.after == nil)
      }
      #expect(failures == 1, "\(path): \(failures) copies got the failure")
      #expect(all.sorted() == [1, 2])
    }
  }

  // MARK: 6. Dropped mid-read, released after

  @Test("the iterator is released once a pending read ends", arguments: Path.allCases)
  func droppedMidRead(path: Path) async throws {
    weak var weakIteration: AnyObject?
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    var consumer: Task<Int?, any Error>?
    do {
      let iterator = path.iterator(stream)
      weakIteration = iterator.bridgeForTesting
      let shared = Box(base: iterator)
      consumer = Task { try await shared.next() }
    }
    try await Task.sleep(for: .milliseconds(20))
    continuation.yield(5)
    #expect(try await consumer?.value == 5)
    consumer = nil
    #expect(await eventually(timeout: .seconds(10)) { weakIteration == nil })
    continuation.finish()
  }

  // MARK: 7. Actor-isolated consumers

  actor Collector {
    var values: [Int] = []
    func collect(_ stream: AsyncStream<Int>, limit: Int) async -> [Int] {
      for await value in stream.publisher.values {
        assertIsolated()
        values.append(value)
        if values.count == limit { break }
      }
      return values
    }
    func collectCancelled(_ stream: AsyncStream<Int>) async -> ([Int], Int?) {
      var iterator = stream.publisher.values.makeAsyncIterator()
      while let value = await iterator.next() { values.append(value) }
      return (values, await iterator.next())
    }
  }

  @Test("for await in an actor and on the main actor")
  func actorConsumers() async throws {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    let collector = Collector()
    let task = Task { await collector.collect(stream, limit: 500) }
    Thread { for value in 0..<1_000 { continuation.yield(value) } }.start()
    #expect(await task.value == Array(0..<500))
    let (stream2, continuation2) = AsyncStream<Int>.makeStream()
    let main = Task { @MainActor in
      var received: [Int] = []
      for await value in stream2.publisher.eraseToAnyPublisher().values {
        MainActor.assertIsolated()
        received.append(value)
      }
      return received
    }
    Thread {
      for value in 0..<1_000 { continuation2.yield(value) }
      continuation2.finish()
    }.start()
    #expect(await main.value == Array(0..<1_000))
    // Cancelled in an actor while it waits on an idle stream.
    let (stream3, continuation3) = AsyncStream<Int>.makeStream()
    continuation3.yield(1)
    let waiting = Collector()
    let cancelled = Task { await waiting.collectCancelled(stream3) }
    #expect(await eventually(timeout: .seconds(120)) { await waiting.values == [1] })
    cancelled.cancel()
    let (received, after) = await cancelled.value
    #expect(received == [1])
    #expect(after == nil)
  }

  // MARK: 8. Nested

  @Test("values re-published and read again")
  func nested() async throws {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    let twice = stream.publisher.values.publisher.values.publisher.eraseToAnyPublisher()
    Thread {
      for value in 0..<1_000 { continuation.yield(value) }
      continuation.finish()
    }.start()
    var received: [Int] = []
    for await value in twice.values { received.append(value) }
    #expect(received == Array(0..<1_000))
    // Cancelled while the innermost read waits on an idle stream (or before it begins).
    let (stream2, continuation2) = AsyncStream<Int>.makeStream()
    let nestedAgain = stream2.publisher.values.publisher.values.publisher.values
    let consumer = Task {
      var iterator = nestedAgain.makeAsyncIterator()
      return await iterator.next()
    }
    try await Task.sleep(for: .milliseconds(20))
    consumer.cancel()
    #expect(await consumer.value == nil)
    continuation2.finish()
  }

  // MARK: 9. Many short-lived iterators over one long-lived stream

  @Test("a fresh iterator per value over one stream", arguments: Path.allCases)
  func shortLivedIterators(path: Path) async throws {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    Thread {
      for value in 0..<2_000 { continuation.yield(value) }
      continuation.finish()
    }.start()
    var received: [Int] = []
    while true {
      var iterator = path.iterator(stream)
      guard let value = await iterator.next() else { break }
      received.append(value)
    }
    #expect(received == Array(0..<2_000))
  }

  @Test("the selection: direct only for the plain and erased stream publishers")
  func selection() {
    let (stream, _) = AsyncStream<Int>.makeStream()
    #expect(Self.isDirect(Path.direct.iterator(stream)))
    #expect(!Self.isDirect(Path.bridge.iterator(stream)))
    #expect(Self.isDirect(Path.direct.plainIterator(stream)))
    let (throwing, _) = AsyncThrowingStream<Int, any Error>.makeStream()
    #expect(Self.isDirect(Path.direct.iterator(throwing)))
  }

  final class Flags: Sendable {
    let stop = Atomic<Bool>(false)
    let done = Atomic<Int>(0)
    let target = Mutex<Shared<AnyObject>?>(nil)
  }

  // MARK: 10. A copy cancelled while it parks (the second adversary's find)

  /// A cancellation landing after a copy entered and before it parked ran `onCancel` first,
  /// whose `withdraw` found nothing queued; the copy then queued as not cancelled, waited for
  /// the reader's read (forever on an idle stream), and took the turn in a cancelled task,
  /// ending the iteration for every copy. Now `withdraw` marks a ticket still parking. Threads
  /// reading the iteration's mirror (which takes its lock) widen the window.
  @Test("a copy cancelled while it queues behind an idle reader returns at once, alone")
  func cancelledWhileQueueing() async throws {
    let flags = Flags()
    let hammers = (0..<3).map { _ in
      Thread {
        while !flags.stop.load(ordering: .relaxed) {
          if let target = flags.target.withLock({ $0 }) {
            _ = Mirror(reflecting: target.value).children.count
          }
        }
      }
    }
    for hammer in hammers { hammer.start() }
    defer { flags.stop.store(true, ordering: .relaxed) }
    var stuck = 0
    var endedForAll = 0
    for round in 0..<stressScaled(5_000) {
      let (stream, continuation) = AsyncStream<Int>.makeStream()
      let iterator = stream.publisher.values.makeAsyncIterator()
      let direct = iterator.bridgeForTesting
      let shared = Box(base: iterator)
      let reader = Task { try await shared.next() }
      let target = Shared(direct)
      #expect(
        await eventually(timeout: .seconds(120)) {
          Mirror(reflecting: target.value).descendant("pulling") as? Bool == true
        })
      flags.target.withLock { $0 = target }
      flags.done.store(0, ordering: .sequentiallyConsistent)
      let waiters = (0..<4).map { _ in
        Task { () -> Int? in
          defer { flags.done.add(1, ordering: .sequentiallyConsistent) }
          return try await shared.next()
        }
      }
      let spins = (0..<4).map { _ in Int.random(in: 0..<(round % 2 == 0 ? 2_000 : 20_000)) }
      Thread {
        for (index, waiter) in waiters.enumerated() {
          var sum = 0
          for i in 0..<spins[index] { sum &+= i }
          if sum == -1 { print(sum) }
          waiter.cancel()
        }
      }.start()
      // A net only: cancelled waiters end at once.
      if !(await eventually(timeout: .seconds(120)) {
        flags.done.load(ordering: .sequentiallyConsistent) == 4
      }) {
        stuck += 1
      }
      flags.target.withLock { $0 = nil }
      continuation.yield(1)
      #expect(try await reader.value == 1)
      for waiter in waiters { #expect(try await waiter.value == nil) }
      // The reader went on: the iteration did not end, the next value is read.
      continuation.yield(2)
      if try await shared.next() == nil { endedForAll += 1 }
      continuation.finish()
      if stuck > 0 { break }
    }
    #expect(stuck == 0, "a cancelled copy stayed queued behind an idle reader")
    #expect(endedForAll == 0, "a cancelled copy ended the iteration for every copy")
  }
}
