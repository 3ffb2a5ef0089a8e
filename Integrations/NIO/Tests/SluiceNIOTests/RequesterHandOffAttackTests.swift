import Dispatch
import Foundation
import NIOCore
import NIOPosix
import Sluice
import SluiceNIO
import Synchronization
import Testing

/// A third adversary's attacks on the hand-off between the writer's request calls
/// (`becomeRequester` / `askAsRequester`, eabe643): a call that finds another one requesting
/// leaves it a request (`askWanted`), which the requester makes by looping. Uses the first
/// suite's harness.
@Suite("Attacks on the writer's requester hand-off", .serialized)
struct RequesterHandOffAttackTests {
  typealias H = WriterDemandAttackTests
  typealias Received = WriterDemandAttackTests.Received<Int>

  // MARK: A source

  /// What the source saw, and how the writer's calls held their threads: a *run* is a series
  /// of `request` calls made one after another from the same task on the same thread, each
  /// within a millisecond of the last one's end (the writer's request call runs in a task of
  /// its own, and asks again from its loop at once; a task's identity is its address, which a
  /// later task can reuse, so a pause ends the run).
  final class Log: @unchecked Sendable {
    // Safety: behind `lock`.
    let lock = NSLock()
    var requested = 0
    var sent = 0
    var maxOutstanding = 0
    var requests = 0
    var cancelled = false
    var sentAfterCancel = 0
    // The current run.
    var runTask = 0
    var runThread = 0
    var runStart = ContinuousClock.now
    var runEnd = ContinuousClock.now
    var runRequests = 0
    var runValues = 0
    var runMaxGap: Duration = .zero
    // The longest run.
    var longest: Duration = .zero
    var longestRequests = 0
    var longestValues = 0
    var longestMaxGap: Duration = .zero

    func add(_ n: Int) {
      requested += n
      maxOutstanding = Swift.max(maxOutstanding, requested - sent)
    }

    /// Notes a `request` call beginning (under `lock`).
    func began(task: Int, thread: Int, at now: ContinuousClock.Instant) {
      requests += 1
      if task == runTask, thread == runThread, runRequests > 0,
        now - runEnd < .milliseconds(1)
      {
        runMaxGap = Swift.max(runMaxGap, now - runEnd)
      } else {
        runTask = task
        runThread = thread
        runStart = now
        runRequests = 0
        runValues = 0
        runMaxGap = .zero
      }
      runRequests += 1
    }

    /// Notes a `request` call ending (under `lock`), `emitted` values in it.
    func ended(task: Int, thread: Int, emitted: Int, at now: ContinuousClock.Instant) {
      guard task == runTask, thread == runThread else { return }
      runEnd = now
      runValues += emitted
      if now - runStart > longest {
        longest = now - runStart
        longestRequests = runRequests
        longestValues = runValues
        longestMaxGap = runMaxGap
      }
    }

    var snapshot: String {
      lock.withLock {
        "requested \(requested) sent \(sent) maxOutstanding \(maxOutstanding) requests \(requests) "
          + "longest run \(longest) (\(longestRequests) requests, \(longestValues) values, "
          + "largest gap between them \(longestMaxGap)) cancelled \(cancelled)"
      }
    }
  }

  /// A synchronous source that reads: `request` emits what it was asked for on the calling
  /// thread (unless another call is emitting), some values (`offThread(i)`) from a helper
  /// thread while it waits, then reads ahead (`linger(requestIndex)` µs, a blocking read)
  /// before it returns. `honoursReturnedDemand: false` ignores what `receive` returns.
  struct Reader: Publisher, Sendable {
    typealias Output = Int
    typealias Failure = Never
    let count: Int
    var honoursReturnedDemand = true
    var offThread: @Sendable (Int) -> Bool = { _ in false }
    var linger: @Sendable (Int) -> UInt32 = { _ in 1_000 }
    let log: Log

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
      subscriber.receive(subscription: Inner(downstream: AnySubscriber(subscriber), source: self))
    }

    final class Inner: Subscription, @unchecked Sendable {
      // Safety: `demand`, `next`, `emitting`, `done` behind `source.log.lock`.
      let downstream: AnySubscriber<Int, Never>
      let source: Reader
      var demand = 0
      var next = 0
      var emitting = false
      var done = false
      init(downstream: AnySubscriber<Int, Never>, source: Reader) {
        self.downstream = downstream
        self.source = source
      }
      var log: Log { source.log }

      func request(_ more: Subscribers.Demand) {
        let task = withUnsafeCurrentTask { $0?.hashValue ?? 0 }
        let thread = Int(bitPattern: pthread_self())
        var emitted = 0
        let (start, index): (Bool, Int) = log.lock.withLock {
          log.began(task: task, thread: thread, at: .now)
          log.add(more.max ?? 1 << 40)
          demand += more.max ?? 1 << 40
          if emitting || done { return (false, log.requests) }
          emitting = true
          return (true, log.requests)
        }
        if start {
          while true {
            let value: Int? = log.lock.withLock {
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
              log.sent += 1
              return next - 1
            }
            guard let value else { break }
            if value == -1 {
              downstream.receive(completion: .finished)
              break
            }
            emitted += 1
            let returned: Subscribers.Demand
            if source.offThread(value) {
              let box = WriterCallOverlapAttackTests.DemandBox()
              let finished = DispatchSemaphore(value: 0)
              Thread.detachNewThread {
                box.demand = self.downstream.receive(value)
                finished.signal()
              }
              finished.wait()
              returned = box.demand
            } else {
              returned = downstream.receive(value)
            }
            if source.honoursReturnedDemand, returned > 0 {
              log.lock.withLock {
                demand += returned.max ?? 1 << 40
                log.add(returned.max ?? 1 << 40)
              }
            }
          }
        }
        let micros = source.linger(index)
        if micros > 0 { usleep(micros) }  // the read-ahead
        log.lock.withLock { log.ended(task: task, thread: thread, emitted: emitted, at: .now) }
      }

      func cancel() {
        log.lock.withLock {
          done = true
          log.cancelled = true
        }
      }
    }
  }
}

// MARK: Attacks

extension RequesterHandOffAttackTests {
  /// A requester that loops for requests other calls left it never checks its deadline or its
  /// byte budget: those are checked only on the value that uses up a demand while the writer
  /// is not stalled. With tiny batches every demand ends stalled; the write that lifts each
  /// stall starts a call while the source still reads ahead (2 ms), that call leaves
  /// `askWanted`, and the requester asks again — the same call serves the whole stream.
  @Test(arguments: [(64, 16), (16, 16)])
  func aRequesterAskedAgainByOverlappingCallsYields(prefetch: Int, batchBytes: Int)
    async throws
  {
    for round in 0..<10 {
      let log = Log()
      let count = 150 * prefetch
      let received = try await H.serve(prefetch: prefetch, batchBytes: batchBytes, within: 30) {
        Reader(count: count, linger: { _ in 2_000 }, log: log).eraseToAnyPublisher()
      }
      H.check(received[0], Array(0..<count), "round \(round)")
      let (longest, owed) = log.lock.withLock { (log.longest, log.maxOutstanding) }
      #expect(owed <= prefetch, "\(log.snapshot)")
      // 50 ms plus a value's time is claimed; 4 times the deadline leaves no doubt.
      let held = longest > .milliseconds(200)
      #expect(
        !held,
        "prefetch \(prefetch) batch \(batchBytes) round \(round): one call held its thread: \(log.snapshot)"
      )
      if held { break }
    }
  }
}

extension RequesterHandOffAttackTests {
  /// Reads of varying lengths (0–400 µs, some none) after emitting, returned demand ignored or
  /// honoured, some values from a helper thread, tiny batches: every stall lifted while a call
  /// still reads starts an overlapping call that leaves a request; 10 rounds of each shape.
  @Test(arguments: [1, 2, 3, 16])
  func variedReadsWithOverlappingCallsAreServed(prefetch: Int) async throws {
    for round in 0..<10 {
      let log = Log()
      let count = 400 + 37 * round
      let honours = round % 2 == 0
      // A value from a helper thread has its demand returned: only a source that adds it.
      let mixed = honours && round % 3 != 1
      let seed = UInt32(round * 7919 + prefetch)
      let batchBytes = round % 4 < 2 ? 16 : 40
      let received = try await H.serve(prefetch: prefetch, batchBytes: batchBytes, within: 30) {
        Reader(
          count: count, honoursReturnedDemand: honours,
          offThread: { mixed && ($0 % 5 == 4 || $0 % 11 == 0) },
          linger: { index in
            let x = (UInt32(index) &* 2_654_435_761 &+ seed) >> 7
            return x % 4 == 0 ? 0 : x % 400
          },
          log: log
        ).eraseToAnyPublisher()
      }
      let label = "prefetch \(prefetch) round \(round) honours \(honours) mixed \(mixed)"
      H.check(received[0], Array(0..<count), "\(label): \(log.snapshot)")
      #expect(log.lock.withLock { log.maxOutstanding } <= prefetch, "\(label): \(log.snapshot)")
    }
  }

  /// A slow client (one value a request, small buffers) of a reading source: the writer stalls
  /// again and again while the source reads inside a call; served to its end, then the same
  /// with the client going away in the middle of a stall: the source is cancelled and stops.
  @Test(arguments: [1, 3, 16])
  func slowClientStallsAndDisconnects(prefetch: Int) async throws {
    for disconnect in [false, true] {
      let log = Log()
      let count = 3_000
      let (client, server) = await WriterDemandAttackTests.startSlowClient(
        prefetch: prefetch, batchBytes: 32, sendBufferSize: 1024, readSize: 64,
        receiveBufferSize: 256
      ) {
        Reader(
          count: count, honoursReturnedDemand: false, linger: { $0 % 3 == 0 ? 300 : 50 },
          log: log
        ).eraseToAnyPublisher()
      }
      if disconnect {
        #expect(await eventually(within: 30) { client.received.count > count / 3 })
        client.cancel()
        #expect(
          await eventually(within: 30) { log.lock.withLock { log.cancelled } },
          "prefetch \(prefetch): not cancelled: \(log.snapshot)")
        try await Task.sleep(for: .milliseconds(100))
        let settled = log.lock.withLock { log.sent }
        try await Task.sleep(for: .milliseconds(200))
        #expect(log.lock.withLock { log.sent } == settled, "went on: \(log.snapshot)")
        let values = client.received
        #expect(values == Array(0..<values.count))
      } else {
        let done = await eventually(within: 30) { client.completion != nil }
        #expect(done, "prefetch \(prefetch): stalled at \(client.received.count): \(log.snapshot)")
        #expect(
          client.received == Array(0..<count), "prefetch \(prefetch): \(client.received.count)")
        client.cancel()
      }
      #expect(log.lock.withLock { log.maxOutstanding } <= prefetch, "\(log.snapshot)")
      await WriterDemandAttackTests.stop(server)
    }
  }

  /// Many connections at once on 2 cores, each a reading source of another shape, prefetch
  /// 1, 2, 3: pool threads held by requesters, calls overlapping on every connection.
  @Test func manyReadingConnectionsAreServed() async throws {
    for round in 0..<3 {
      let index = Atomic<Int>(0)
      let logs = (0..<10).map { _ in Log() }
      let count = 500
      let received = try await H.serve(prefetch: 1 + round, batchBytes: 16, clients: 10, within: 30)
      {
        let mine = index.add(1, ordering: .relaxed).oldValue
        return Reader(
          count: count, honoursReturnedDemand: mine % 2 == 0,
          offThread: { mine % 6 == 0 && $0 % 4 == 1 },
          linger: { ($0 &* 31 &+ mine) % 5 == 0 ? 0 : UInt32(50 + ($0 % 7) * 40) },
          log: logs[mine % 10]
        ).eraseToAnyPublisher()
      }
      for (client, box) in received.enumerated() {
        H.check(box, Array(0..<count), "round \(round) client \(client)")
      }
    }
  }
}
