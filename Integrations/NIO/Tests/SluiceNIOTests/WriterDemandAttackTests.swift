import Dispatch
import Foundation
import NIOCore
import NIOPosix
import Sluice
import SluiceNIO
import Synchronization
import Testing

/// Attacks, written by an adversary, on the server writer's demand: inside its own request
/// call the writer asks again (with `request(_:)`) once the source returns; for a value from
/// another thread it returns the demand from `receive`. (65a044e asked reentrantly from inside
/// `receive` there: the first three attacks below broke it — recursion, a deadlock, a trap.)
@Suite("Attacks on the writer's demand", .serialized)
struct WriterDemandAttackTests {

  // MARK: Harness

  /// What one client received.
  final class Received<Value: Sendable>: @unchecked Sendable {
    // Safety: everything behind `lock`.
    let lock = NSLock()
    var values: [Value] = []
    var completions: [Subscribers.Completion<RemotePipelineError>] = []
    /// When the first completion arrived.
    var completedAt: ContinuousClock.Instant?
    var count: Int { lock.withLock { values.count } }
    var completed: Bool { lock.withLock { !completions.isEmpty } }
    var snapshot: (values: [Value], completions: [Subscribers.Completion<RemotePipelineError>]) {
      lock.withLock { (values, completions) }
    }
  }

  /// The largest demand outstanding at the writer's side of the pipeline, measured by
  /// `handleEvents` at the top of it (requests are counted before the source sees them, values
  /// before the writer does: what it reports is at most what the writer owes).
  final class Meter: @unchecked Sendable {
    // Safety: behind `lock`.
    let lock = NSLock()
    var requested = 0
    var sent = 0
    var maxOutstanding = 0
    var requests = 0
    func request(_ demand: Subscribers.Demand) {
      lock.withLock {
        requests += 1
        requested += demand.max ?? 1 << 40
        maxOutstanding = Swift.max(maxOutstanding, requested - sent)
      }
    }
    func value() { lock.withLock { sent += 1 } }
    var max: Int { lock.withLock { maxOutstanding } }
    var sentCount: Int { lock.withLock { sent } }
  }

  /// Runs an in-process server of `make` and `clients` clients reading every value as fast as
  /// it comes; returns what each received (waits up to `seconds` for every completion).
  static func serve<Value: WireCodable & Sendable>(
    prefetch: Int, batchBytes: Int = 16 * 1024, sendBufferSize: Int? = nil, clients: Int = 1,
    within seconds: Int = 30, _ make: @escaping @Sendable () -> AnyPublisher<Value, Never>
  ) async throws -> [Received<Value>] {
    let portBox = Atomic<Int>(0)
    var configuration = PipelineServerConfiguration()
    configuration.prefetch = prefetch
    configuration.batchBytes = batchBytes
    if let sendBufferSize { configuration.sendBufferSize = sendBufferSize }
    let server = PipelineServer<Value>(configuration: configuration) { make() }
    let task = Task { try await server.run(bound: { portBox.store($0, ordering: .relaxed) }) }
    defer { task.cancel() }
    #expect(await eventually(within: 5) { portBox.load(ordering: .relaxed) != 0 })
    let port = portBox.load(ordering: .relaxed)
    var received: [Received<Value>] = []
    var cancellables: [AnyCancellable] = []
    for _ in 0..<clients {
      let box = Received<Value>()
      received.append(box)
      cancellables.append(
        RemotePipeline<Value>(port: port).sink(
          receiveCompletion: { completion in
            box.lock.withLock {
              box.completions.append(completion)
              if box.completedAt == nil { box.completedAt = .now }
            }
          },
          receiveValue: { value in box.lock.withLock { box.values.append(value) } }))
    }
    let done = await eventually(within: seconds) { received.allSatisfy(\.completed) }
    #expect(done, "stalled at \(received.map(\.count))")
    for cancellable in cancellables { cancellable.cancel() }
    task.cancel()
    _ = try? await task.value
    return received
  }

  /// An in-process server of `make` and one slow client of it (one value a request, small
  /// reads and receive buffer), both started: the caller waits, checks, then cancels the
  /// client and ends the server with ``stop(_:)``.
  static func startSlowClient(
    prefetch: Int, batchBytes: Int, sendBufferSize: Int, readSize: Int = 256,
    receiveBufferSize: Int = 1024, _ make: @escaping @Sendable () -> AnyPublisher<Int, Never>
  ) async -> (client: SlowSubscriber<Int>, server: Task<Void, any Error>) {
    let portBox = Atomic<Int>(0)
    var configuration = PipelineServerConfiguration()
    configuration.prefetch = prefetch
    configuration.batchBytes = batchBytes
    configuration.sendBufferSize = sendBufferSize
    let server = PipelineServer<Int>(configuration: configuration) { make() }
    let task = Task { try await server.run(bound: { portBox.store($0, ordering: .relaxed) }) }
    #expect(await eventually(within: 5) { portBox.load(ordering: .relaxed) != 0 })
    let client = SlowSubscriber<Int>(pace: .zero)
    RemotePipeline<Int>(
      port: portBox.load(ordering: .relaxed),
      configuration: .init(readSize: readSize, receiveBufferSize: receiveBufferSize)
    ).subscribe(client)
    return (client, task)
  }

  /// Ends a server ``startSlowClient`` started.
  static func stop(_ server: Task<Void, any Error>) async {
    server.cancel()
    _ = try? await server.value
  }

  /// Every value of `expected` once, in order, then `.finished`.
  static func check(
    _ received: Received<Int>, _ expected: [Int], _ label: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let (values, completions) = received.snapshot
    if values != expected {
      let firstDifference = zip(values, expected).enumerated().first {
        $0.element.0 != $0.element.1
      }
      let at =
        firstDifference.map { "\($0.offset): \($0.element.0) for \($0.element.1)" } ?? "the end"
      Issue.record(
        Comment(
          rawValue:
            "\(label): \(values.count) values of \(expected.count); first difference at \(at)"),
        sourceLocation: sourceLocation)
    }
    #expect(completions == [.finished], "\(label)", sourceLocation: sourceLocation)
  }

  /// Every value of `expected` once, in any order, then `.finished`: for a source that emits
  /// on whichever thread calls its `request`, with nothing to serialise two such threads (it
  /// breaks Combine's rule that signals are serial, so only the order can suffer).
  static func checkOnce(
    _ received: Received<Int>, _ expected: [Int], _ label: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let (values, completions) = received.snapshot
    #expect(
      values.sorted() == expected, "\(label): \(values.count) values of \(expected.count)",
      sourceLocation: sourceLocation)
    #expect(completions == [.finished], "\(label)", sourceLocation: sourceLocation)
  }

  /// Values split by source (`value / 1_000_000`): each source's values once, in order.
  static func checkPerSource(
    _ received: Received<Int>, _ sources: [Int: Int], _ label: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let (values, completions) = received.snapshot
    let grouped = Dictionary(grouping: values) { $0 / 1_000_000 }
    for (source, count) in sources {
      let mine = grouped[source] ?? []
      let expected = (0..<count).map { source * 1_000_000 + $0 }
      if mine != expected {
        let at =
          zip(mine, expected).enumerated().first { $0.element.0 != $0.element.1 }
          .map { "\($0.offset)" } ?? "the end"
        Issue.record(
          Comment(
            rawValue:
              "\(label): source \(source): \(mine.count) values of \(count); first difference at \(at)"
          ),
          sourceLocation: sourceLocation)
      }
    }
    #expect(values.count == sources.values.reduce(0, +), "\(label)", sourceLocation: sourceLocation)
    #expect(completions == [.finished], "\(label)", sourceLocation: sourceLocation)
  }

  // MARK: Hand-written sources

  /// A hand-written source with no reentrancy guard, as apps write one: `request` emits what
  /// it was asked for on the calling thread (adding what `receive` returns), so a subscriber
  /// that requests from inside `receive` makes it recurse. The recursion is cut at `cap`
  /// (the deeper call only adds its demand, the frames below it emit it) so that the test
  /// reports the depth instead of crashing.
  struct Naive: Publisher, Sendable {
    typealias Output = Int
    typealias Failure = Never
    let count: Int
    let probe: Probe
    var cap = 200

    final class Probe: @unchecked Sendable {
      // Safety: behind `lock`.
      let lock = NSLock()
      var depth = 0
      var maxDepth = 0
      var cancelled = false
      var deepest: Int { lock.withLock { maxDepth } }
    }

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
      subscriber.receive(
        subscription: Inner(
          downstream: AnySubscriber(subscriber), count: count, probe: probe, cap: cap))
    }

    final class Inner: Subscription, @unchecked Sendable {
      // Safety: `demand`, `next`, `done` behind `probe.lock`.
      let downstream: AnySubscriber<Int, Never>
      let count: Int
      let probe: Probe
      let cap: Int
      var demand = 0
      var next = 0
      var done = false
      init(downstream: AnySubscriber<Int, Never>, count: Int, probe: Probe, cap: Int) {
        self.downstream = downstream
        self.count = count
        self.probe = probe
        self.cap = cap
      }

      func request(_ more: Subscribers.Demand) {
        let depth = probe.lock.withLock {
          demand += more.max ?? 1 << 40
          probe.depth += 1
          probe.maxDepth = Swift.max(probe.maxDepth, probe.depth)
          return probe.depth
        }
        defer { probe.lock.withLock { probe.depth -= 1 } }
        if depth > cap { return }
        while true {
          let value: Int? = probe.lock.withLock {
            if done || probe.cancelled { return nil }
            if next == count {
              done = true
              return -1
            }
            guard demand > 0 else { return nil }
            demand -= 1
            next += 1
            return next - 1
          }
          guard let value else { return }
          if value == -1 {
            downstream.receive(completion: .finished)
            return
          }
          let more = downstream.receive(value)
          if more > 0 { probe.lock.withLock { demand += more.max ?? 1 << 40 } }
        }
      }

      func cancel() { probe.lock.withLock { probe.cancelled = true } }
    }
  }

  /// A hand-written asynchronous source that emits from a thread of its own while holding its
  /// (non-recursive) lock, adding what `receive` returns — it worked while the writer returned
  /// its demand. Its `request` gives up on the lock after a second (a deadlock, recorded) so
  /// that the test ends.
  struct LockHeld: Publisher, Sendable {
    typealias Output = Int
    typealias Failure = Never
    let count: Int
    let deadlocked: Flag

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
      subscriber.receive(
        subscription: Inner(
          downstream: AnySubscriber(subscriber), count: count, deadlocked: deadlocked))
    }

    final class Inner: Subscription, @unchecked Sendable {
      // Safety: `demand`, `next`, `running` behind `gate`; `cancelled` atomic.
      let downstream: AnySubscriber<Int, Never>
      let count: Int
      let deadlocked: Flag
      let gate = DispatchSemaphore(value: 1)
      let cancelled = Flag()
      var demand = 0
      var next = 0
      var running = false
      init(downstream: AnySubscriber<Int, Never>, count: Int, deadlocked: Flag) {
        self.downstream = downstream
        self.count = count
        self.deadlocked = deadlocked
      }

      func request(_ more: Subscribers.Demand) {
        guard gate.wait(timeout: .now() + .seconds(1)) == .success else {
          deadlocked.set()
          return
        }
        demand += more.max ?? 1 << 40
        let start = !running
        running = true
        gate.signal()
        if start { Thread.detachNewThread { self.run() } }
      }

      func run() {
        gate.wait()
        while !cancelled.isSet, demand > 0, next < count {
          demand -= 1
          next += 1
          let more = downstream.receive(next - 1)  // under the lock
          demand += more.max ?? 0
        }
        let finish = next == count && !cancelled.isSet
        if finish { next += 1 }
        running = false
        gate.signal()
        if finish { downstream.receive(completion: .finished) }
      }

      func cancel() { cancelled.set() }
    }
  }

  /// A hand-written asynchronous source whose state lives on a serial queue: `request` adds
  /// its demand with `queue.sync` and values are sent from `queue.async` blocks, adding what
  /// `receive` returns. A `request` from inside `receive` is a `queue.sync` on the queue it
  /// runs on — libdispatch traps ("dispatch_sync called on queue already owned by current
  /// thread"); the test's copy records it instead and goes on.
  struct QueueSerialized: Publisher, Sendable {
    typealias Output = Int
    typealias Failure = Never
    let count: Int
    let reentered: Flag

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
      subscriber.receive(
        subscription: Inner(
          downstream: AnySubscriber(subscriber), count: count, reentered: reentered))
    }

    final class Inner: Subscription, @unchecked Sendable {
      // Safety: `demand`, `next`, `cancelled` only on `queue`.
      static let key = DispatchSpecificKey<Int>()
      let downstream: AnySubscriber<Int, Never>
      let count: Int
      let reentered: Flag
      let queue = DispatchQueue(label: "QueueSerialized")
      var demand = 0
      var next = 0
      var cancelled = false
      init(downstream: AnySubscriber<Int, Never>, count: Int, reentered: Flag) {
        self.downstream = downstream
        self.count = count
        self.reentered = reentered
        queue.setSpecific(key: Self.key, value: 1)
      }

      func request(_ more: Subscribers.Demand) {
        if DispatchQueue.getSpecific(key: Self.key) == 1 {
          reentered.set()  // the app's code would trap here, in queue.sync
          demand += more.max ?? 1 << 40
        } else {
          queue.sync { demand += more.max ?? 1 << 40 }
        }
        queue.async { self.drain() }
      }

      func drain() {
        while !cancelled, demand > 0, next < count {
          demand -= 1
          next += 1
          demand += downstream.receive(next - 1).max ?? 0
        }
        if next == count, !cancelled {
          next += 1
          downstream.receive(completion: .finished)
        }
      }

      func cancel() { queue.async { self.cancelled = true } }
    }
  }

  /// A buffered subject fed by `senders` threads (values `source * 1_000_000 + i`, sources 1…),
  /// started once the pipeline is subscribed; finished when every sender is done.
  static func fedSubject(senders: Int, each: Int, pace: Int = 0) -> AnyPublisher<Int, Never> {
    let subject = PassthroughSubject<Int, Never>()
    return subject.buffer(size: 10_000_000, prefetch: .keepFull, whenFull: .dropNewest)
      .handleEvents(receiveSubscription: { _ in
        let group = DispatchGroup()
        for sender in 1...senders {
          group.enter()
          Thread.detachNewThread {
            for index in 0..<each {
              subject.send(sender * 1_000_000 + index)
              if pace > 0, index % pace == 0 { usleep(100) }
            }
            group.leave()
          }
        }
        Thread.detachNewThread {
          group.wait()
          subject.send(completion: .finished)
        }
      })
      .eraseToAnyPublisher()
  }
}

// MARK: Attacks

extension WriterDemandAttackTests {
  /// A naive source (no reentrancy guard) appended to a subject: the subject finishes on
  /// another thread, so the naive source runs there, outside the writer's call, and each value
  /// that spends the demand requests again from inside `receive` (`Concatenate` forwards it
  /// straight to the source) — one more level of recursion per `prefetch` values, had the
  /// writer requested from inside `receive` (65a044e did: uncapped, 40,000 values at the
  /// default prefetch, 2,500 levels, crashed the server with SIGSEGV in a debug build). The
  /// writer returns its demand there: the depth stays 1. Order is not checked: the naive source
  /// emits on the subject's thread while a request call of the writer's (after a stall) may
  /// make it emit on another at the same time — it serialises nothing (`checkOnce`).
  @Test(arguments: [1, 16])
  func naiveSourceAfterASubjectDoesNotRecurse(prefetch: Int) async throws {
    let probe = Naive.Probe()
    let count = 20_000
    let received = try await Self.serve(prefetch: prefetch) {
      let subject = PassthroughSubject<Int, Never>()
      return subject.append(Naive(count: count, probe: probe))
        .handleEvents(receiveSubscription: { _ in
          Thread.detachNewThread { subject.send(completion: .finished) }
        })
        .eraseToAnyPublisher()
    }
    Self.checkOnce(received[0], Array(0..<count), "prefetch \(prefetch)")
    #expect(probe.deepest < 64, "prefetch \(prefetch): recursion \(probe.deepest) deep")
  }

  /// The same source behind a `flatMap` of a value delivered on another thread (a request
  /// per message, each answered by a naive source); order unchecked, as above.
  @Test(arguments: [1, 16])
  func naiveSourceInsideFlatMapOnAnotherThreadDoesNotRecurse(prefetch: Int) async throws {
    let probe = Naive.Probe()
    let count = 20_000
    let received = try await Self.serve(prefetch: prefetch) {
      Just(0).receive(on: DispatchQueue(label: "attack.outer"))
        .flatMap(maxPublishers: .max(1)) { _ in Naive(count: count, probe: probe) }
        .eraseToAnyPublisher()
    }
    Self.checkOnce(received[0], Array(0..<count), "prefetch \(prefetch)")
    #expect(probe.deepest < 64, "prefetch \(prefetch): recursion \(probe.deepest) deep")
  }

  /// Control: the naive source served directly runs inside the writer's own calls, which ask
  /// again only after it returns: no recursion.
  @Test(arguments: [1, 16])
  func naiveSourceServedDirectlyDoesNotRecurse(prefetch: Int) async throws {
    let probe = Naive.Probe()
    let count = 20_000
    let received = try await Self.serve(prefetch: prefetch) {
      Naive(count: count, probe: probe).eraseToAnyPublisher()
    }
    Self.check(received[0], Array(0..<count), "prefetch \(prefetch)")
    #expect(probe.deepest < 4, "prefetch \(prefetch): recursion \(probe.deepest) deep")
  }

  /// A hand-written asynchronous source that holds its lock while it emits and honours the
  /// demand `receive` returns: a request from inside `receive`, on the source's thread while
  /// it holds its lock, would deadlock (65a044e: with a plain lock the connection hung after
  /// `prefetch` values for good).
  @Test func sourceHoldingItsLockWhileEmittingIsServed() async throws {
    let deadlocked = Flag()
    let count = 5_000
    let received = try await Self.serve(prefetch: 16, within: 15) {
      LockHeld(count: count, deadlocked: deadlocked).eraseToAnyPublisher()
    }
    #expect(!deadlocked.isSet, "the writer requested from inside receive while the lock was held")
    Self.check(received[0], Array(0..<count), "lock held")
  }

  /// The serial-queue variant of the same shape: uncapped (a plain `queue.sync` in `request`),
  /// a request from inside `receive` traps in libdispatch (`__DISPATCH_WAIT_FOR_QUEUE__`,
  /// SIGILL; 65a044e did).
  @Test func sourceSerializedOnAQueueIsNotReenteredFromItsQueue() async throws {
    let reentered = Flag()
    let count = 5_000
    let received = try await Self.serve(prefetch: 16) {
      QueueSerialized(count: count, reentered: reentered).eraseToAnyPublisher()
    }
    #expect(!reentered.isSet, "the writer requested from inside receive, on the source's queue")
    Self.check(received[0], Array(0..<count), "queue")
  }

  /// A synchronous sequence merged with a subject fed from two other threads: each source's
  /// values once and in order, and never more than `prefetch` owed (the writer's own call and
  /// a value from another thread must not both ask).
  @Test(arguments: [1, 64])
  func syncMergedWithSubjectFromTwoThreads(prefetch: Int) async throws {
    var worst = 0
    for round in 0..<2 {
      let meter = Meter()
      let received = try await Self.serve(prefetch: prefetch) {
        (0..<30_000).publisher
          .merge(with: Self.fedSubject(senders: 2, each: 20_000, pace: 50))
          .handleEvents(
            receiveOutput: { _ in meter.value() }, receiveRequest: { meter.request($0) }
          )
          .eraseToAnyPublisher()
      }
      Self.checkPerSource(
        received[0], [0: 30_000, 1: 20_000, 2: 20_000], "prefetch \(prefetch) round \(round)")
      worst = max(worst, meter.max)
    }
    #expect(worst <= prefetch, "prefetch \(prefetch): \(worst) owed at once")
  }

  /// `Just` then a subject fed from another thread, and a sequence prepended to one: the
  /// synchronous part inside the writer's call, the rest from other threads.
  @Test(arguments: [1, 16])
  func partlySynchronousSources(prefetch: Int) async throws {
    let appendMeter = Meter()
    let appended = try await Self.serve(prefetch: prefetch) {
      Just(0).append(Self.fedSubject(senders: 1, each: 30_000))
        .handleEvents(
          receiveOutput: { _ in appendMeter.value() }, receiveRequest: { appendMeter.request($0) }
        )
        .eraseToAnyPublisher()
    }
    Self.check(appended[0], [0] + (0..<30_000).map { 1_000_000 + $0 }, "append")
    #expect(appendMeter.max <= prefetch, "append, prefetch \(prefetch): \(appendMeter.max) owed")
    let prependMeter = Meter()
    let prepended = try await Self.serve(prefetch: prefetch) {
      Self.fedSubject(senders: 1, each: 30_000).prepend(0..<100_000)
        .handleEvents(
          receiveOutput: { _ in prependMeter.value() }, receiveRequest: { prependMeter.request($0) }
        )
        .eraseToAnyPublisher()
    }
    Self.check(prepended[0], Array(0..<100_000) + (0..<30_000).map { 1_000_000 + $0 }, "prepend")
    #expect(prependMeter.max <= prefetch, "prepend, prefetch \(prefetch): \(prependMeter.max) owed")
  }

  /// Scheduler hops: `receive(on:)` (values from a queue's thread, the writer asking from
  /// inside `receive` there) and `subscribe(on:)` (requests on a queue), and `share()`.
  @Test(arguments: [1, 16])
  func schedulerHops(prefetch: Int) async throws {
    let count = 30_000
    for (label, make) in [
      (
        "receive(on:)",
        { @Sendable in
          (0..<count).publisher.receive(on: DispatchQueue(label: "hop")).eraseToAnyPublisher()
        }
      ),
      (
        "subscribe(on:)",
        { @Sendable in
          (0..<count).publisher.subscribe(on: DispatchQueue(label: "hop")).eraseToAnyPublisher()
        }
      ),
      (
        "both",
        { @Sendable in
          (0..<count).publisher.subscribe(on: DispatchQueue.global())
            .receive(on: DispatchQueue(label: "hop"))
            .eraseToAnyPublisher()
        }
      ),
    ] as [(String, @Sendable () -> AnyPublisher<Int, Never>)] {
      let meter = Meter()
      let received = try await Self.serve(prefetch: prefetch) { () -> AnyPublisher<Int, Never> in
        make().handleEvents(
          receiveOutput: { _ in meter.value() }, receiveRequest: { meter.request($0) }
        ).eraseToAnyPublisher()
      }
      Self.check(received[0], Array(0..<count), "\(label) prefetch \(prefetch)")
      #expect(meter.max <= prefetch, "\(label) prefetch \(prefetch): \(meter.max) owed")
    }
  }

  /// `flatMap(maxPublishers:)` of a subject fed from another thread, each value answered by a
  /// short sequence (values arrive on the sender's thread, inside the subject's send).
  @Test(arguments: [1, 16])
  func flatMapOfSubjectIntoSequences(prefetch: Int) async throws {
    let meter = Meter()
    let received = try await Self.serve(prefetch: prefetch) {
      Self.fedSubject(senders: 1, each: 2_000)
        .flatMap(maxPublishers: .max(2)) { value in
          (0..<10).publisher.map { (value - 1_000_000) * 10 + $0 }
        }
        .handleEvents(receiveOutput: { _ in meter.value() }, receiveRequest: { meter.request($0) })
        .eraseToAnyPublisher()
    }
    Self.check(received[0], Array(0..<20_000), "flatMap prefetch \(prefetch)")
    #expect(meter.max <= prefetch, "prefetch \(prefetch): \(meter.max) owed")
  }

  /// Sources that complete inside `request` exactly when the demand runs out (a count that is
  /// a multiple of `prefetch`, of the ramp, and of neither).
  @Test func completionInsideRequestAtTheDemandsEnd() async throws {
    for prefetch in [1, 2, 16] {
      for count in [0, 1, prefetch, 2 * prefetch, 4 * prefetch + 1, 1023, 1024] {
        let received = try await Self.serve(prefetch: prefetch) {
          (0..<count).publisher.eraseToAnyPublisher()
        }
        Self.check(received[0], Array(0..<count), "prefetch \(prefetch) count \(count)")
      }
    }
  }

  /// Strings whose frames land just under, at and just over `batchBytes`, synchronous and
  /// from another thread.
  @Test(arguments: [1, 1000])
  func valuesNearBatchBoundaries(prefetch: Int) async throws {
    let batch = 1024
    let sizes = (0..<1_500).map { index in batch - 12 + (index * 7) % 24 }
    let expected = sizes.enumerated().map {
      String(repeating: Character(String($0.offset % 10)), count: $0.element)
    }
    for hop in [false, true] {
      let received = try await Self.serve(prefetch: prefetch, batchBytes: batch) {
        () -> AnyPublisher<String, Never> in
        let base = expected.publisher
        return hop
          ? base.receive(on: DispatchQueue(label: "attack.strings")).eraseToAnyPublisher()
          : base.eraseToAnyPublisher()
      }
      let (values, completions) = received[0].snapshot
      #expect(values == expected, "prefetch \(prefetch) hop \(hop): \(values.count) values")
      #expect(completions == [.finished])
    }
  }

  /// A slow client (one value at a time, a pause every few) of a fast synchronous source and of
  /// a source from another thread, with a small send buffer: the writer stalls and resumes
  /// many times; nothing lost, never more than `prefetch` owed.
  @Test(arguments: [1, 16])
  func slowClientStallsAndResumes(prefetch: Int) async throws {
    for hop in [false, true] {
      let meter = Meter()
      let count = 30_000
      let (client, server) = await Self.startSlowClient(
        prefetch: prefetch, batchBytes: 512, sendBufferSize: 2048
      ) {
        let base = (0..<count).publisher
        return
          (hop
          ? base.receive(on: DispatchQueue(label: "slow")).eraseToAnyPublisher()
          : base.eraseToAnyPublisher())
          .handleEvents(
            receiveOutput: { _ in meter.value() }, receiveRequest: { meter.request($0) }
          )
          .eraseToAnyPublisher()
      }
      // Pauses: the client stops reading for a moment while the server is mid-stream.
      var paused = 0
      while client.completion == nil, paused < 20 {
        try await Task.sleep(for: .milliseconds(15))
        paused += 1
      }
      #expect(await eventually(within: 30) { client.completion != nil }, "\(client.received.count)")
      #expect(client.received == Array(0..<count), "hop \(hop): \(client.received.count) values")
      #expect(meter.max <= prefetch, "hop \(hop) prefetch \(prefetch): \(meter.max) owed")
      client.cancel()
      await Self.stop(server)
    }
  }

  /// Clients that disconnect mid-stream from an endless synchronous source, from one from
  /// another thread, and from a naive source that ignores its cancel: the pipeline stops
  /// (nothing is sent for long after the disconnect).
  @Test func disconnectMidStreamStopsThePipeline() async throws {
    for shape in 0..<3 {
      let meter = Meter()
      let naive = Naive.Probe()
      let portBox = Atomic<Int>(0)
      let server = PipelineServer<Int>(configuration: .init(prefetch: 16)) {
        let base: AnyPublisher<Int, Never>
        switch shape {
        case 0: base = (0..<Int.max).publisher.eraseToAnyPublisher()
        case 1:
          base = (0..<Int.max).publisher.receive(on: DispatchQueue(label: "dc"))
            .eraseToAnyPublisher()
        default: base = Naive(count: Int.max, probe: naive).eraseToAnyPublisher()
        }
        return base.handleEvents(
          receiveOutput: { _ in meter.value() }, receiveRequest: { meter.request($0) })
      }
      let task = Task { try await server.run(bound: { portBox.store($0, ordering: .relaxed) }) }
      defer { task.cancel() }
      #expect(await eventually(within: 5) { portBox.load(ordering: .relaxed) != 0 })
      let box = Received<Int>()
      let cancellable = RemotePipeline<Int>(port: portBox.load(ordering: .relaxed)).sink(
        receiveCompletion: { _ in },
        receiveValue: { value in box.lock.withLock { box.values.append(value) } })
      #expect(await eventually(within: 5) { box.count > 50_000 })
      cancellable.cancel()
      try await Task.sleep(for: .milliseconds(300))
      let settled = meter.sentCount
      try await Task.sleep(for: .milliseconds(300))
      #expect(meter.sentCount == settled, "shape \(shape): the source went on after the disconnect")
      let values = box.snapshot.values
      #expect(values == Array(0..<values.count), "shape \(shape)")
      task.cancel()
      _ = try? await task.value
    }
  }

  /// Many connections at once (more than cores), each a different shape, prefetch 1.
  @Test func manyConnectionsOfMixedShapes() async throws {
    let count = 20_000
    let index = Counter()
    let received = try await Self.serve(prefetch: 1, clients: 12, within: 30) {
      let mine = index.count.add(1, ordering: .relaxed).oldValue
      switch mine % 4 {
      case 0: return (0..<count).publisher.eraseToAnyPublisher()
      case 1:
        return (0..<count).publisher.receive(on: DispatchQueue(label: "m\(mine)"))
          .eraseToAnyPublisher()
      case 2:
        return Self.fedSubject(senders: 1, each: count).map { $0 - 1_000_000 }.eraseToAnyPublisher()
      default:
        return Just(0).append((1..<count).publisher.subscribe(on: DispatchQueue.global()))
          .eraseToAnyPublisher()
      }
    }
    for (client, box) in received.enumerated() {
      Self.check(box, Array(0..<count), "client \(client)")
    }
  }
}
