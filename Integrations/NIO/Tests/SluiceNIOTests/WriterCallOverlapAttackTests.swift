import Dispatch
import Foundation
import NIOCore
import NIOPosix
import Sluice
import SluiceNIO
import Synchronization
import Testing

/// A second adversary's attacks on the server writer's demand: sources that switch between
/// emitting inside the writer's own `request` call and from other threads, sources that go on
/// inside `request` after emitting (a read-ahead), and the writer's own calls overlapping (a
/// stall lifted while a call still runs). The first two attacks found that an overlapping call
/// asked on its own — its source then emitted on a thread no budget counted, and dropped
/// returned demand stalled the connection; since, only one call of the writer's asks at a time
/// (`becomeRequester`). Uses the first suite's harness.
@Suite("Attacks on the writer's overlapping calls", .serialized)
struct WriterCallOverlapAttackTests {
  typealias H = WriterCallOverlapAttackTests

  // MARK: Harness: the first suite's

  typealias Received = WriterDemandAttackTests.Received<Int>
  typealias Meter = WriterDemandAttackTests.Meter

  static func serve(
    prefetch: Int, batchBytes: Int = 16 * 1024, sendBufferSize: Int? = nil, clients: Int = 1,
    within seconds: Int = 30, _ make: @escaping @Sendable () -> AnyPublisher<Int, Never>
  ) async throws -> [Received] {
    try await WriterDemandAttackTests.serve(
      prefetch: prefetch, batchBytes: batchBytes, sendBufferSize: sendBufferSize,
      clients: clients, within: seconds, make)
  }

  static func check(
    _ received: Received, _ expected: [Int], _ label: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    WriterDemandAttackTests.check(received, expected, label, sourceLocation: sourceLocation)
  }

  // MARK: Sources

  /// A demand handed from a helper thread (ordered by a semaphore).
  final class DemandBox: @unchecked Sendable {
    var demand = Subscribers.Demand.none
  }

  /// What a hand-written source saw.
  final class Stats: @unchecked Sendable {
    // Safety: behind `lock`.
    let lock = NSLock()
    var requested = 0
    var sent = 0
    var maxOutstanding = 0
    var requests = 0
    var calls = 0
    var maxConcurrentCalls = 0
    var longestCall: Duration = .zero
    var mostValuesInACall = 0
    var valuesOffCallThread = 0
    var cancelled = false
    /// When a `request` that ended the stream from a thread of its own finished its 300 ms.
    var lingerEnded: ContinuousClock.Instant?
    func add(_ n: Int) {
      requested += n
      maxOutstanding = Swift.max(maxOutstanding, requested - sent)
    }
    var snapshot: String {
      lock.withLock {
        "requested \(requested) sent \(sent) maxOutstanding \(maxOutstanding) requests \(requests) "
          + "maxConcurrentCalls \(maxConcurrentCalls) longestCall \(longestCall) "
          + "mostValuesInACall \(mostValuesInACall) "
          + "cancelled \(cancelled)"
      }
    }
  }

  /// A synchronous source with a read-ahead: `request` emits what it was asked for on the
  /// calling thread (when no other call is emitting), then reads ahead for the next values
  /// (`lingerMicros`, a blocking read) before it returns. `honoursReturnedDemand: false`: the
  /// common shortcut of ignoring what `receive` returns (only `request` adds demand) — the
  /// writer claims to serve such a synchronous source to its end.
  struct ReadAhead: Publisher, Sendable {
    typealias Output = Int
    typealias Failure = Never
    let count: Int
    let lingerMicros: UInt32
    let honoursReturnedDemand: Bool
    /// Only the first this many `request` calls read ahead.
    var lingeringCalls = Int.max
    /// From this value on, each value costs `slowMicros` of work (a spin) before it is sent.
    var slowFrom = Int.max
    var slowMicros = 0
    /// Sends the completion from a thread of its own, then `request` goes on for 300 ms.
    var endOnAThread = false
    let stats: Stats

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
      subscriber.receive(subscription: Inner(downstream: AnySubscriber(subscriber), source: self))
    }

    final class Inner: Subscription, @unchecked Sendable {
      // Safety: `demand`, `next`, `emitting`, `done` behind `source.stats.lock`.
      let downstream: AnySubscriber<Int, Never>
      let source: ReadAhead
      var demand = 0
      var next = 0
      var emitting = false
      var done = false
      init(downstream: AnySubscriber<Int, Never>, source: ReadAhead) {
        self.downstream = downstream
        self.source = source
      }
      var stats: Stats { source.stats }

      func request(_ more: Subscribers.Demand) {
        let began = ContinuousClock.now
        var emitted = 0
        var ended = false
        let (start, linger): (Bool, Bool) = stats.lock.withLock {
          stats.requests += 1
          let linger = stats.requests <= source.lingeringCalls
          stats.calls += 1
          stats.maxConcurrentCalls = Swift.max(stats.maxConcurrentCalls, stats.calls)
          stats.add(more.max ?? 1 << 40)
          demand += more.max ?? 1 << 40
          if emitting || done { return (false, linger) }
          emitting = true
          return (true, linger)
        }
        if start {
          while true {
            let value: Int? = stats.lock.withLock {
              if done { return nil }
              if next == source.count {
                done = true
                return -1
              }
              guard demand > 0 else {
                emitting = false
                return nil
              }
              demand -= 1
              next += 1
              stats.sent += 1
              return next - 1
            }
            guard let value else { break }
            if value == -1 {
              if source.endOnAThread {
                ended = true
                Thread.detachNewThread { self.downstream.receive(completion: .finished) }
              } else {
                downstream.receive(completion: .finished)
              }
              break
            }
            emitted += 1
            if value >= source.slowFrom {
              let until = ContinuousClock.now + .microseconds(source.slowMicros)
              while ContinuousClock.now < until {}
            }
            let returned = downstream.receive(value)
            if source.honoursReturnedDemand, returned > 0 {
              stats.lock.withLock {
                demand += returned.max ?? 1 << 40
                stats.add(returned.max ?? 1 << 40)
              }
            }
          }
        }
        if linger, source.lingerMicros > 0 { usleep(source.lingerMicros) }  // the read-ahead
        if ended {
          usleep(300_000)  // the end's clean-up, while the completion goes out
          stats.lock.withLock { stats.lingerEnded = .now }
        }
        stats.lock.withLock {
          stats.calls -= 1
          stats.mostValuesInACall = Swift.max(stats.mostValuesInACall, emitted)
          stats.longestCall = Swift.max(stats.longestCall, ContinuousClock.now - began)
        }
      }

      func cancel() {
        stats.lock.withLock {
          done = true
          stats.cancelled = true
        }
      }
    }
  }

  /// A well-behaved source (serial, honours every demand, returned or requested) that emits
  /// each value either on the thread that is emitting (inside the writer's `request` when that
  /// is where emission began) or on a helper thread while the emitting thread waits for it — so
  /// within one demand values come from the writer's call thread and from another thread.
  /// `pattern(i)` says where value `i` goes: `true` to the helper thread. Optionally the rest of
  /// a demand left when `request` returns goes on from a thread of its own (`asyncTail`).
  struct Switching: Publisher, Sendable {
    typealias Output = Int
    typealias Failure = Never
    let count: Int
    let pattern: @Sendable (Int) -> Bool
    var asyncTail = false
    let stats: Stats

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
      subscriber.receive(subscription: Inner(downstream: AnySubscriber(subscriber), source: self))
    }

    final class Inner: Subscription, @unchecked Sendable {
      // Safety: `demand`, `next`, `emitting`, `done` behind `source.stats.lock`.
      let downstream: AnySubscriber<Int, Never>
      let source: Switching
      var demand = 0
      var next = 0
      var emitting = false
      var done = false
      init(downstream: AnySubscriber<Int, Never>, source: Switching) {
        self.downstream = downstream
        self.source = source
      }
      var stats: Stats { source.stats }

      func request(_ more: Subscribers.Demand) {
        let start: Bool = stats.lock.withLock {
          stats.requests += 1
          stats.add(more.max ?? 1 << 40)
          demand += more.max ?? 1 << 40
          if emitting || done { return false }
          emitting = true
          return true
        }
        guard start else { return }
        if source.asyncTail {
          // Emits the first value here, the rest of the demand from a thread of its own.
          if emitOne() { Thread.detachNewThread { self.drain() } }
        } else {
          drain()
        }
      }

      /// Emits while there is demand.
      func drain() {
        while emitOne() {}
      }

      /// Emits the next value (on this thread or a helper's); whether emission goes on (this
      /// thread still holds the emitter's role).
      func emitOne() -> Bool {
        let value: Int? = stats.lock.withLock {
          if done { return nil }
          if next == source.count {
            done = true
            return -1
          }
          guard demand > 0 else {
            emitting = false
            return nil
          }
          demand -= 1
          next += 1
          stats.sent += 1
          return next - 1
        }
        guard let value else { return false }
        if value == -1 {
          downstream.receive(completion: .finished)
          return false
        }
        let returned: Subscribers.Demand
        if source.pattern(value) {
          let box = DemandBox()
          let finished = DispatchSemaphore(value: 0)
          Thread.detachNewThread {
            box.demand = self.downstream.receive(value)
            finished.signal()
          }
          finished.wait()
          returned = box.demand
          stats.lock.withLock { stats.valuesOffCallThread += 1 }
        } else {
          returned = downstream.receive(value)
        }
        if returned > 0 {
          stats.lock.withLock {
            demand += returned.max ?? 1 << 40
            stats.add(returned.max ?? 1 << 40)
          }
        }
        return true
      }

      func cancel() {
        stats.lock.withLock {
          done = true
          stats.cancelled = true
        }
      }
    }
  }

  /// Runs an in-process server of `make` with a slow client (one value a request, a small
  /// receive buffer, pauses): what it received and how it ended.
  static func serveSlowly(
    prefetch: Int, batchBytes: Int, sendBufferSize: Int = 2048, within seconds: Int = 30,
    _ make: @escaping @Sendable () -> AnyPublisher<Int, Never>
  ) async throws -> (values: [Int], completion: Subscribers.Completion<RemotePipelineError>?) {
    let (client, server) = await WriterDemandAttackTests.startSlowClient(
      prefetch: prefetch, batchBytes: batchBytes, sendBufferSize: sendBufferSize, make)
    let done = await eventually(within: seconds) { client.completion != nil }
    #expect(done, "slow client stalled at \(client.received.count)")
    let result = (client.received, client.completion)
    client.cancel()
    await WriterDemandAttackTests.stop(server)
    return result
  }
}

// MARK: Attacks

extension WriterCallOverlapAttackTests {
  /// A synchronous source that ignores returned demand and reads ahead inside `request` after
  /// emitting: the batch fills two batches inside the writer's call (a stall), the write that
  /// takes them lifts the stall and starts a new call (`resume`) while the first still reads
  /// ahead — the new call cannot mark itself the requester, so the values it makes the source
  /// emit, on its own thread, count as from another thread, and the last of them returns its
  /// demand (dropped by this source) instead of asking again: nothing asks any more.
  @Test(arguments: [(16, 40), (4, 8), (64, 100)])
  func readAheadSourceIgnoringReturnedDemandIsServed(prefetch: Int, batchBytes: Int)
    async throws
  {
    let stats = Stats()
    let count = 150 * prefetch
    let received = try await H.serve(prefetch: prefetch, batchBytes: batchBytes, within: 30) {
      ReadAhead(count: count, lingerMicros: 2_000, honoursReturnedDemand: false, stats: stats)
        .eraseToAnyPublisher()
    }
    H.check(received[0], Array(0..<count), "prefetch \(prefetch) batch \(batchBytes)")
    #expect(
      stats.lock.withLock { stats.maxOutstanding } <= prefetch,
      "prefetch \(prefetch): \(stats.snapshot)")
    if !received[0].completed { Issue.record("stalled: \(stats.snapshot)") }
  }

  /// The read-ahead source honouring returned demand, reading ahead (2 ms) in its first 4
  /// calls only, fast for its first 4,000 values and 20 µs a value after them. An overlapping
  /// call of the writer's (a stall lifted while the first call read ahead: not marked the
  /// requester) makes the source emit on that call's thread; every value is then "from
  /// another thread", the writer returns the demand value after value, and the source, slow
  /// enough that the writes keep up (no stall stops it), goes on inside that one call to its
  /// end — a thread of the cooperative pool held with no byte budget and no deadline. A call
  /// is claimed to yield after 16 batches or 50 ms: a marked call produces at most
  /// 16 × `batchBytes` bytes plus one demand (under 16 × 400 / 6 + 1000 values here).
  @Test func anOverlappingRequestCallHasNoBudget() async throws {
    let prefetch = 1000
    let batchBytes = 400
    let budget = 16 * batchBytes / 6 + prefetch
    for round in 0..<12 {
      let stats = Stats()
      let count = 19_000
      let received = try await H.serve(prefetch: prefetch, batchBytes: batchBytes, within: 30) {
        ReadAhead(
          count: count, lingerMicros: 2_000, honoursReturnedDemand: true, lingeringCalls: 4,
          slowFrom: 4_000, slowMicros: 20, stats: stats
        )
        .eraseToAnyPublisher()
      }
      H.check(received[0], Array(0..<count), "round \(round)")
      let (owed, most) = stats.lock.withLock { (stats.maxOutstanding, stats.mostValuesInACall) }
      #expect(owed <= prefetch, "\(stats.snapshot)")
      let snapshot = stats.snapshot
      // Twice the budget, and 4 times the deadline: no doubt left.
      let longest = stats.lock.withLock { stats.longestCall }
      let held = most > 2 * budget && longest > .milliseconds(200)
      #expect(
        !held, "round \(round): one call emitted \(most) values (budget \(budget)): \(snapshot)")
      if held { break }
    }
  }

  /// Values of one demand from the writer's call thread and from helper threads (the call
  /// waiting), in patterns: the last of a demand on the helper, the first on the helper,
  /// alternate, every third; prefetch 1, 2, 3, 1000.
  @Test(arguments: [1, 2, 3, 1000])
  func valuesSwitchingThreadsWithinADemand(prefetch: Int) async throws {
    let patterns: [(String, @Sendable (Int) -> Bool)] = [
      ("alternate", { $0 % 2 == 1 }),
      ("every third", { $0 % 3 == 2 }),
      ("runs of five", { ($0 / 5) % 2 == 1 }),
      ("sparse", { $0 % 97 == 13 }),
    ]
    for (label, pattern) in patterns {
      let stats = Stats()
      let meter = H.Meter()
      let count = 3_000
      let received = try await H.serve(prefetch: prefetch, batchBytes: 64, within: 30) {
        Switching(count: count, pattern: pattern, stats: stats)
          .handleEvents(
            receiveOutput: { _ in meter.value() }, receiveRequest: { meter.request($0) }
          )
          .eraseToAnyPublisher()
      }
      H.check(received[0], Array(0..<count), "\(label) prefetch \(prefetch): \(stats.snapshot)")
      #expect(meter.max <= prefetch, "\(label) prefetch \(prefetch): \(meter.max) owed")
    }
  }

  /// The first value of each demand inside the writer's `request`, the rest from a thread of
  /// the source's own (started inside `request`, so values from it arrive while the writer's
  /// call is still inside `subscription.request` or looping), with a slow client.
  @Test(arguments: [1, 2, 3, 1000])
  func firstValueInsideRequestRestFromAThread(prefetch: Int) async throws {
    for slow in [false, true] {
      let stats = Stats()
      let meter = H.Meter()
      let count = 4_000
      let make: @Sendable () -> AnyPublisher<Int, Never> = {
        Switching(count: count, pattern: { _ in false }, asyncTail: true, stats: stats)
          .handleEvents(
            receiveOutput: { _ in meter.value() }, receiveRequest: { meter.request($0) }
          )
          .eraseToAnyPublisher()
      }
      if slow {
        let (values, completion) = try await Self.serveSlowly(
          prefetch: prefetch, batchBytes: 16, within: 30, make)
        #expect(values == Array(0..<count), "slow, prefetch \(prefetch): \(values.count) values")
        #expect(completion == .finished)
      } else {
        let received = try await H.serve(prefetch: prefetch, batchBytes: 64, within: 30, make)
        H.check(received[0], Array(0..<count), "prefetch \(prefetch): \(stats.snapshot)")
      }
      #expect(meter.max <= prefetch, "slow \(slow) prefetch \(prefetch): \(meter.max) owed")
    }
  }
}

extension WriterCallOverlapAttackTests {
  /// The read-ahead source ending from another thread while its last `request` still reads
  /// ahead (the writer's call running: the completion frame must not wait for the call),
  /// counts at, just under and just over a demand's end; prefetch 1, 2, 3, 16.
  @Test(arguments: [1, 2, 3, 16])
  func completionFromAnotherThreadWhileTheCallReadsAhead(prefetch: Int) async throws {
    for count in [0, 1, prefetch - 1, prefetch, prefetch + 1, 5 * prefetch + 2] where count >= 0 {
      let stats = Stats()
      let received = try await H.serve(prefetch: prefetch, batchBytes: 64, within: 30) {
        ReadAhead(
          count: count, lingerMicros: 0, honoursReturnedDemand: true, endOnAThread: true,
          stats: stats
        )
        .eraseToAnyPublisher()
      }
      H.check(received[0], Array(0..<count), "prefetch \(prefetch) count \(count)")
      // The completion went out while the call still ran (not after its 300 ms): an order,
      // not a duration, so that a loaded pool cannot fail it.
      let completedAt = received[0].lock.withLock { received[0].completedAt }
      if let completedAt, let lingerEnded = stats.lock.withLock({ stats.lingerEnded }) {
        #expect(
          completedAt < lingerEnded,
          "prefetch \(prefetch) count \(count): the completion waited for the call")
      }
    }
  }

  /// A synchronous sequence merged with a buffered subject whose sender starts from inside the
  /// sequence's first value (so inside the writer's request call): values from the sender's
  /// thread arrive while the call is inside `subscription.request`, with small batches, prefetch
  /// 1, 2, 3, 1000; each source's values once and in order, never more than `prefetch` owed.
  @Test(arguments: [1, 2, 3, 1000])
  func mergeWithASubjectStartedInsideTheCall(prefetch: Int) async throws {
    let meter = Meter()
    let syncCount = 20_000
    let asyncCount = 20_000
    let received = try await H.serve(prefetch: prefetch, batchBytes: 32, within: 30) {
      let subject = PassthroughSubject<Int, Never>()
      let started = Flag()
      let subscribed = Flag()
      let sequence = (0..<syncCount).publisher.handleEvents(receiveOutput: { _ in
        guard !started.isSet else { return }
        started.set()
        Thread.detachNewThread {
          // Merge may subscribe to the subject after the sequence's first value.
          while !subscribed.isSet { usleep(50) }
          for index in 0..<asyncCount { subject.send(1_000_000 + index) }
          subject.send(completion: .finished)
        }
      })
      return sequence.merge(
        with: subject.buffer(size: 1_000_000, prefetch: .keepFull, whenFull: .dropNewest)
          .handleEvents(receiveSubscription: { _ in subscribed.set() })
      )
      .handleEvents(receiveOutput: { _ in meter.value() }, receiveRequest: { meter.request($0) })
      .eraseToAnyPublisher()
    }
    let (values, completions) = received[0].snapshot
    let grouped = Dictionary(grouping: values) { $0 / 1_000_000 }
    let fromSequence = grouped[0] ?? []
    let fromSubject = grouped[1] ?? []
    #expect(fromSequence == Array(0..<syncCount), "sequence: \(fromSequence.count) values")
    #expect(
      fromSubject == (0..<asyncCount).map { 1_000_000 + $0 }, "subject: \(fromSubject.count) values"
    )
    #expect(completions == [.finished])
    #expect(meter.max <= prefetch, "prefetch \(prefetch): \(meter.max) owed")
  }

  /// Many connections at once (6 per core), each a different switching shape, half of them
  /// behind small batches: everything served, in order.
  @Test func manyConnectionsOfSwitchingSources() async throws {
    let count = 3_000
    let index = Counter()
    let received = try await H.serve(prefetch: 3, batchBytes: 24, clients: 12, within: 10) {
      let mine = index.count.add(1, ordering: .relaxed).oldValue
      let stats = Stats()
      switch mine % 4 {
      case 0:
        return Switching(count: count, pattern: { $0 % 3 == 2 }, stats: stats).eraseToAnyPublisher()
      case 1:
        return Switching(count: count, pattern: { _ in false }, asyncTail: true, stats: stats)
          .eraseToAnyPublisher()
      case 2:
        return ReadAhead(
          count: count, lingerMicros: 200, honoursReturnedDemand: true, lingeringCalls: 50,
          stats: stats
        ).eraseToAnyPublisher()
      default:
        return Switching(count: count, pattern: { $0 % 2 == 0 }, asyncTail: true, stats: stats)
          .eraseToAnyPublisher()
      }
    }
    for (client, box) in received.enumerated() {
      H.check(box, Array(0..<count), "client \(client)")
    }
  }
}
