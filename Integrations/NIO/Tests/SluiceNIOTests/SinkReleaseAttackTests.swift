import Foundation
import NIOCore
import NIOPosix
import Sluice
import SluiceNIO
import Synchronization
import Testing

/// Attacks, written by an adversary, on the release of a sink's closure by `RemoteSubscription`
/// and on the writer's two demand counters.
@Suite("Attacks on a sink's release by RemotePipeline and on the writer's demand", .serialized)
struct SinkReleaseAttackTests {
  typealias Sink = Subscribers.Sink<Int, RemotePipelineError>

  /// What a test observes of one sink: values, completion, the captured object's release, and
  /// values seen after the test's cancel began / after the release.
  final class Probe: @unchecked Sendable {
    // Safety: everything behind `lock` (NSLock: TSan sees it) or atomic.
    let lock = NSLock()
    let released = Flag()
    let values = Counter()
    var completions: [Subscribers.Completion<RemotePipelineError>] = []
    var last: Int = -1
    var outOfOrder = 0
    let cancelStarted = Flag()
    var afterCancel = 0
    func completed(_ completion: Subscribers.Completion<RemotePipelineError>) {
      lock.withLock { completions.append(completion) }
    }
    func value(_ value: Int) {
      values.add()
      lock.withLock {
        if cancelStarted.isSet { afterCancel += 1 }
        if value <= last { outOfOrder += 1 }
        last = value
      }
    }
    var completionList: [Subscribers.Completion<RemotePipelineError>] {
      lock.withLock { completions }
    }
    var afterCancelCount: Int { lock.withLock { afterCancel } }
    var outOfOrderCount: Int { lock.withLock { outOfOrder } }
  }

  enum Shape: String, CaseIterable, CustomStringConvertible, Sendable {
    case direct, erased, deferred, mapped, anySubscriber
    var description: String { rawValue }
  }

  /// A sink whose closures capture a `Captured` (nothing else holds it).
  static func makeSink(probe: Probe, onValue: @escaping @Sendable (Int) -> Void = { _ in })
    -> Sink
  {
    let captured = Captured(probe.released, values: probe.values)
    return Sink(
      receiveCompletion: { [captured] in
        _ = captured
        probe.completed($0)
      },
      receiveValue: { [captured] value in
        _ = captured
        probe.value(value)
        onValue(value)
      })
  }

  /// Subscribes a sink (kept by the caller) whose closures capture a `Captured`, in `shape`.
  static func subscribe(
    _ pipeline: RemotePipeline<Int>, _ shape: Shape, probe: Probe,
    onValue: @escaping @Sendable (Int) -> Void = { _ in }
  ) -> Sink {
    let captured = Captured(probe.released, values: probe.values)
    let sink = Sink(
      receiveCompletion: { [captured] in
        _ = captured
        probe.completed($0)
      },
      receiveValue: { [captured] value in
        _ = captured
        probe.value(value)
        onValue(value)
      })
    switch shape {
    case .direct: pipeline.subscribe(sink)
    case .erased: pipeline.eraseToAnyPublisher().subscribe(sink)
    case .deferred: Deferred { pipeline }.subscribe(sink)
    case .mapped: pipeline.map { $0 }.subscribe(sink)
    case .anySubscriber: pipeline.subscribe(AnySubscriber(sink))
    }
    return sink
  }

  // MARK: Cancel racing the drain

  /// A cancel from another thread, at varying points of a fast stream, concurrently from
  /// several threads: the closure is released, at most one value lands after cancel() began
  /// returning, order is kept.
  @Test(arguments: Shape.allCases)
  func cancelFromOtherThreadsAtVaryingPoints(shape: Shape) async throws {
    let server = try await ServerProcess([])
    let port = try #require(server.port)
    for round in 0..<12 {
      let probe = Probe()
      var sink: Sink? = Self.subscribe(RemotePipeline<Int>(port: port), shape, probe: probe)
      let threshold = [1, 100, 257, 10_000][round % 4]
      #expect(await eventually(within: 30) { probe.values.value >= threshold })
      let shared = SharedCancellable(cancellable: try #require(sink))
      DispatchQueue.concurrentPerform(iterations: 3) { _ in shared.cancellable.cancel() }
      probe.cancelStarted.set()
      #expect(await eventually(within: 30) { probe.released.isSet }, "round \(round) \(shape)")
      try await Task.sleep(for: .milliseconds(20))
      #expect(probe.afterCancelCount <= 1)
      #expect(probe.outOfOrderCount == 0)
      #expect(probe.completionList.isEmpty, "no completion after cancel")
      #expect(sink != nil)
      sink = nil
    }
  }

  /// Cancel from inside receiveValue at every position of a chunk (chunks are 256), with a
  /// cancel from another thread racing it.
  @Test(arguments: [Shape.direct, .erased])
  func cancelInsideValueAtChunkBoundariesWithARacingCancel(shape: Shape) async throws {
    let server = try await ServerProcess([])
    let port = try #require(server.port)
    for target in [0, 1, 254, 255, 256, 511, 512, 3000] {
      let probe = Probe()
      let holder = CancellableHolder()
      let other = CancellableHolder()
      let after = Atomic<Int>(0)
      let cancelled = Flag()
      var sink: Sink? = Self.subscribe(
        RemotePipeline<Int>(port: port), shape, probe: probe,
        onValue: { value in
          if cancelled.isSet {
            after.add(1, ordering: .relaxed)
          } else if value == target {
            cancelled.set()
            DispatchQueue.global().async { other.cancel() }
            holder.cancel()
          }
        })
      holder.set(sink)
      other.set(sink)
      #expect(await eventually(within: 30) { probe.released.isSet }, "target \(target)")
      #expect(after.load(ordering: .relaxed) == 0, "nothing after a cancel from inside")
      #expect(probe.completionList.isEmpty)
      holder.set(nil)
      other.set(nil)
      #expect(sink != nil)
      sink = nil
    }
  }

  /// The closure cancels, then the server fails right after (the failure frame is in the same
  /// read): no completion, the closure released once.
  @Test(arguments: [Shape.direct, .erased])
  func cancelInsideValueThenServerFails(shape: Shape) async throws {
    let server = try await ServerProcess(["--fail-after", "10"])
    let probe = Probe()
    let holder = CancellableHolder()
    var sink: Sink? = Self.subscribe(
      RemotePipeline<Int>(port: try #require(server.port)), shape, probe: probe,
      onValue: { if $0 == 9 { holder.cancel() } })
    holder.set(sink)
    #expect(await eventually(within: 30) { probe.released.isSet })
    try await Task.sleep(for: .milliseconds(50))
    #expect(probe.values.value == 10)
    #expect(probe.completionList.isEmpty)
    holder.set(nil)
    #expect(sink != nil)
    sink = nil
  }

  /// Cancel racing the completion: a short stream, cancelled from another thread around its
  /// end, many times. Exactly one of: completion delivered, or not; the closure released.
  @Test func cancelRacingCompletion() async throws {
    let server = try await ServerProcess(["--count", "300"])
    let port = try #require(server.port)
    for round in 0..<40 {
      let probe = Probe()
      var sink: Sink? = Self.subscribe(
        RemotePipeline<Int>(port: port), round % 2 == 0 ? .direct : .erased, probe: probe)
      let threshold = 250 + round
      #expect(await eventually(within: 30) { probe.values.value >= threshold })
      sink?.cancel()
      #expect(await eventually(within: 30) { probe.released.isSet }, "round \(round)")
      #expect(probe.completionList.count <= 1)
      if probe.completionList.count == 1 {
        #expect(probe.completionList == [.finished])
        #expect(probe.values.value == 300)
      }
      #expect(sink != nil)
      sink = nil
    }
  }

  /// A value in flight (the closure blocks) while another thread cancels: the closure must not
  /// be released under it (its captures would be freed mid-call), and must be released after.
  @Test(arguments: [Shape.direct, .erased])
  func cancelWhileAValueBlocksDoesNotReleaseUnderIt(shape: Shape) async throws {
    let server = try await ServerProcess([])
    let port = try #require(server.port)
    for target in [3, 255, 256, 700] {
      let probe = Probe()
      let holder = CancellableHolder()
      let releasedInside = Flag()
      let after = Atomic<Int>(0)
      let blocked = Flag()
      let cancelReturned = Flag()
      var sink: Sink? = Self.subscribe(
        RemotePipeline<Int>(port: port), shape, probe: probe,
        onValue: { value in
          if cancelReturned.isSet { after.add(1, ordering: .relaxed) }
          guard value == target else { return }
          blocked.set()
          let deadline = Date().addingTimeInterval(2)
          while !cancelReturned.isSet, Date() < deadline { usleep(1000) }
          usleep(50_000)  // the cancel has returned; still inside the value
          if probe.released.isSet { releasedInside.set() }
        })
      holder.set(sink)
      #expect(await eventually(within: 30) { blocked.isSet })
      let cancelled = Thread {
        holder.cancel()
        cancelReturned.set()
      }
      cancelled.start()
      #expect(await eventually(within: 30) { probe.released.isSet }, "target \(target)")
      #expect(!releasedInside.isSet, "released while its value was in flight")
      #expect(after.load(ordering: .relaxed) == 0, "a value after the blocked one")
      holder.set(nil)
      #expect(sink != nil)
      sink = nil
    }
  }

  /// Many sinks on one server, cancelled at random moments from random threads while others
  /// complete: each closure released exactly when its subscription ends.
  @Test func manySinksCancelledAtRandom() async throws {
    let server = try await ServerProcess(["--count", "5000"])
    let port = try #require(server.port)
    var probes: [Probe] = []
    var sinks: [Sink] = []
    for index in 0..<24 {
      let probe = Probe()
      probes.append(probe)
      sinks.append(
        Self.subscribe(
          RemotePipeline<Int>(port: port), index % 2 == 0 ? .direct : .erased, probe: probe))
    }
    let shared = sinks.map { SharedCancellable(cancellable: $0) }
    DispatchQueue.concurrentPerform(iterations: 24) { index in
      if index % 3 != 0 {
        usleep(UInt32.random(in: 0..<20_000))
        shared[index].cancellable.cancel()
      }
    }
    #expect(await eventually(within: 30) { probes.allSatisfy { $0.released.isSet } })
    for (index, probe) in probes.enumerated() where index % 3 == 0 {
      #expect(probe.completionList == [.finished])
      #expect(probe.values.value == 5000)
    }
    for probe in probes {
      #expect(probe.outOfOrderCount == 0)
      #expect(probe.completionList.count <= 1)
    }
    #expect(sinks.count == 24)
  }

  // MARK: Completions of every kind, the sink kept

  @Test(arguments: [Shape.direct, .erased, .deferred, .anySubscriber])
  func malformedFrameMidChunkReleases(shape: Shape) async throws {
    var bytes: [UInt8] = []
    for value in 0..<100 { bytes += HostilePeerTests.frame(1, Array("\(value)".utf8)) }
    bytes += HostilePeerTests.frame(1, Array("x!".utf8))
    for value in 100..<200 { bytes += HostilePeerTests.frame(1, Array("\(value)".utf8)) }
    let server = try await ServerProcess(["--raw-hex", hex(bytes), "--then", "silent"])
    let probe = Probe()
    var sink: Sink? = Self.subscribe(
      RemotePipeline<Int>(port: try #require(server.port)), shape, probe: probe)
    #expect(await eventually(within: 30) { !probe.completionList.isEmpty })
    #expect(probe.values.value == 100)
    if case .failure(.malformedFrame) = probe.completionList.first {
    } else {
      Issue.record("expected malformedFrame: \(probe.completionList)")
    }
    #expect(await eventually(within: 30) { probe.released.isSet })
    #expect(sink != nil)
    sink = nil
  }

  @Test(arguments: [Shape.direct, .erased])
  func readTimeoutReleases(shape: Shape) async throws {
    let bytes = HostilePeerTests.frame(1, Array("1".utf8))
    let server = try await ServerProcess(["--raw-hex", hex(bytes), "--then", "silent"])
    let probe = Probe()
    var sink: Sink? = Self.subscribe(
      RemotePipeline<Int>(
        port: try #require(server.port),
        configuration: .init(readTimeout: .milliseconds(300), heartbeatInterval: .seconds(10))),
      shape, probe: probe)
    #expect(await eventually(within: 30) { !probe.completionList.isEmpty })
    if case .failure(.timedOut) = probe.completionList.first {
    } else {
      Issue.record("expected timedOut: \(probe.completionList)")
    }
    #expect(await eventually(within: 30) { probe.released.isSet })
    #expect(sink != nil)
    sink = nil
  }

  @Test(arguments: [Shape.direct, .erased])
  func droppedConnectionReleases(shape: Shape) async throws {
    let server = try await ServerProcess([])
    let probe = Probe()
    var sink: Sink? = Self.subscribe(
      RemotePipeline<Int>(port: try #require(server.port)), shape, probe: probe)
    #expect(await eventually(within: 30) { probe.values.value > 1000 })
    server.process.terminate()
    #expect(await eventually(within: 30) { !probe.completionList.isEmpty })
    #expect(await eventually(within: 30) { probe.released.isSet })
    #expect(sink != nil)
    sink = nil
  }

  @Test(arguments: [Shape.direct, .erased])
  func connectFailureReleases(shape: Shape) async throws {
    // A port nobody listens on: a server started and killed.
    let port: Int
    do {
      let server = try await ServerProcess([])
      port = try #require(server.port)
      server.process.terminate()
      server.process.waitUntilExit()
    }
    let probe = Probe()
    var sink: Sink? = Self.subscribe(RemotePipeline<Int>(port: port), shape, probe: probe)
    #expect(await eventually(within: 30) { !probe.completionList.isEmpty })
    if case .failure(.connectionFailed) = probe.completionList.first {
    } else {
      Issue.record("expected connectionFailed: \(probe.completionList)")
    }
    #expect(await eventually(within: 30) { probe.released.isSet })
    #expect(sink != nil)
    sink = nil
  }

  /// Cancel while connecting (before any value) releases too.
  @Test(arguments: [Shape.direct, .erased])
  func cancelWhileConnecting(shape: Shape) async throws {
    let server = try await ServerProcess([])
    let port = try #require(server.port)
    for _ in 0..<20 {
      let probe = Probe()
      var sink: Sink? = Self.subscribe(RemotePipeline<Int>(port: port), shape, probe: probe)
      sink?.cancel()
      #expect(await eventually(within: 30) { probe.released.isSet })
      try await Task.sleep(for: .milliseconds(5))
      #expect(probe.values.value == 0)
      #expect(sink != nil)
      sink = nil
    }
  }

  // MARK: One sink, two pipelines

  /// The second subscription is cancelled and must not steal the release: the values come
  /// from the first only; cancelling the sink releases its closure.
  @Test(arguments: [Shape.direct, .erased])
  func oneSinkTwoPipelines(shape: Shape) async throws {
    let first = try await ServerProcess(["--interval-ms", "5"])
    let second = try await ServerProcess([])
    let probe = Probe()
    var sink: Sink? = Self.subscribe(
      RemotePipeline<Int>(port: try #require(first.port)), shape, probe: probe)
    let again = try #require(sink)
    switch shape {
    case .erased:
      RemotePipeline<Int>(port: try #require(second.port)).eraseToAnyPublisher().subscribe(again)
    default:
      RemotePipeline<Int>(port: try #require(second.port)).subscribe(again)
    }
    #expect(await eventually(within: 30) { probe.values.value >= 5 })
    try await Task.sleep(for: .milliseconds(100))
    #expect(probe.values.value < 1000, "values came from the fast second pipeline")
    #expect(second.subscribed == 0, "the second pipeline was connected")
    sink?.cancel()
    #expect(await eventually(within: 30) { probe.released.isSet })
    #expect(sink != nil)
    sink = nil
  }

  /// The same sink subscribed from two threads at once to two fast pipelines.
  @Test func oneSinkTwoPipelinesConcurrently() async throws {
    let a = try await ServerProcess([])
    let b = try await ServerProcess([])
    let ports = (try #require(a.port), try #require(b.port))
    for _ in 0..<20 {
      let probe = Probe()
      let sink = Self.makeSink(probe: probe)
      let shared = SharedSink(sink: sink)
      DispatchQueue.concurrentPerform(iterations: 2) { index in
        let pipeline = RemotePipeline<Int>(port: index == 0 ? ports.0 : ports.1)
        if index == 0 {
          pipeline.subscribe(shared.sink)
        } else {
          pipeline.eraseToAnyPublisher().subscribe(shared.sink)
        }
      }
      #expect(await eventually(within: 30) { probe.values.value >= 500 })
      #expect(probe.outOfOrderCount == 0, "values of both pipelines interleaved")
      sink.cancel()
      #expect(await eventually(within: 30) { probe.released.isSet })
    }
  }

  // MARK: Server side: demand

  /// A synchronous or asynchronous source that records the largest outstanding demand, and
  /// optionally sends more than demanded and from several threads at once.
  struct Recording: Publisher, Sendable {
    typealias Output = Int
    typealias Failure = Never
    enum Mode: Sendable {
      case synchronous, asyncThread, overSend, overSendFromThread, manyThreads, slowThenFast
      /// Synchronous; only `request` adds demand: what `receive` returns is dropped.
      case ignoresReturnedDemand
    }
    let mode: Mode
    let count: Int
    let stats: Stats

    final class Stats: @unchecked Sendable {
      // Safety: under `lock`.
      let lock = NSLock()
      var requested = 0
      var sent = 0
      var maxOutstanding = 0
      var requests = 0
      var cancelled = false
      func snapshot() -> (requested: Int, sent: Int, maxOutstanding: Int, requests: Int) {
        lock.withLock { (requested, sent, maxOutstanding, requests) }
      }
    }

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
      subscriber.receive(
        subscription: Subscription(
          downstream: AnySubscriber(subscriber), mode: mode, count: count, stats: stats))
    }

    final class Subscription: Sluice.Subscription, @unchecked Sendable {
      // Safety: `next`, `demand`, `emitting`, `done` under `stats.lock`.
      let downstream: AnySubscriber<Int, Never>
      let mode: Mode
      let count: Int
      let stats: Stats
      var next = 0
      var demand = 0
      var emitting = false
      var done = false
      init(downstream: AnySubscriber<Int, Never>, mode: Mode, count: Int, stats: Stats) {
        self.downstream = downstream
        self.mode = mode
        self.count = count
        self.stats = stats
      }

      func request(_ more: Subscribers.Demand) {
        let n = more.max ?? 1_000_000
        let start: Bool = stats.lock.withLock {
          stats.requests += 1
          stats.requested += n
          demand += n
          stats.maxOutstanding = Swift.max(stats.maxOutstanding, stats.requested - stats.sent)
          if emitting || done { return false }
          emitting = true
          return true
        }
        guard start else { return }
        switch mode {
        case .synchronous, .overSend, .slowThenFast, .ignoresReturnedDemand: emit()
        case .asyncThread, .overSendFromThread: Thread.detachNewThread { self.emit() }
        case .manyThreads:
          Thread.detachNewThread {
            DispatchQueue.concurrentPerform(iterations: 4) { _ in self.emit(threaded: true) }
            let finish = self.stats.lock.withLock { () -> Bool in
              if self.done { return false }
              self.done = true
              return true
            }
            if finish { self.downstream.receive(completion: .finished) }
          }
        }
      }

      /// Emits while there is demand (ignoring the serial rule when threaded). When
      /// over-sending, a value nobody asked for comes after every third value and before the
      /// last value of each demand. The synchronous over-sender (inside the writer's request
      /// call) drops the demand their `receive` returns: a subscriber that counts on that
      /// demand stalls. The one on a thread of its own adds it, as Combine's rules have a source
      /// do (the writer gives an asynchronous source its demand that way).
      func emit(threaded: Bool = false) {
        let overSends = mode == .overSend || mode == .overSendFromThread
        while true {
          let taken: (value: Int, last: Bool)? = stats.lock.withLock {
            if done { return nil }
            if demand <= 0 && !threaded {
              emitting = false
              return nil
            }
            if next >= count {
              if threaded { return nil }
              done = true
              return (-1, false)
            }
            let last = demand == 1
            if demand > 0 { demand -= 1 }
            stats.sent += 1
            let value = next
            next += 1
            return (value, last)
          }
          guard let (value, last) = taken else { return }
          if value == -1 {
            downstream.receive(completion: .finished)
            return
          }
          if mode == .slowThenFast, value < 60 || (value / 1000) % 5 == 4 && value % 1000 < 20 {
            usleep(3000)  // a blocking read per value, now and then
          }
          var more = Subscribers.Demand.none
          if overSends, last { more += sendUnrequested() }
          more += downstream.receive(value)
          if overSends, value % 3 == 0 { more += sendUnrequested() }
          if more > 0, mode != .ignoresReturnedDemand {
            stats.lock.withLock {
              demand += more.max ?? 1_000_000
              stats.requested += more.max ?? 1_000_000
              stats.maxOutstanding = Swift.max(stats.maxOutstanding, stats.requested - stats.sent)
            }
          }
        }
      }

      /// Sends the next value although nobody asked for it; the demand its `receive` returns,
      /// unless this is the synchronous over-sender, which drops it.
      func sendUnrequested() -> Subscribers.Demand {
        let extra: Int? = stats.lock.withLock {
          guard next < count else { return nil }
          stats.sent += 1
          defer { next += 1 }
          return next
        }
        guard let extra else { return .none }
        let more = downstream.receive(extra)
        return mode == .overSend ? .none : more
      }

      func cancel() {
        stats.lock.withLock {
          done = true; stats.cancelled = true
        }
      }
    }
  }

  /// Runs an in-process server of `publisher` and collects its values with a sink.
  static func serve(
    _ makePipeline: @escaping @Sendable () -> Recording, prefetch: Int = 16,
    expecting count: Int, within seconds: Int = 30
  ) async throws -> (values: Int, completion: [Subscribers.Completion<RemotePipelineError>]) {
    let portBox = Atomic<Int>(0)
    var configuration = PipelineServerConfiguration()
    configuration.prefetch = prefetch
    let server = PipelineServer<Int>(configuration: configuration) { makePipeline() }
    let task = Task { try await server.run(bound: { portBox.store($0, ordering: .relaxed) }) }
    defer { task.cancel() }
    #expect(await eventually(within: 30) { portBox.load(ordering: .relaxed) != 0 })
    let probe = Probe()
    let sink = Self.subscribe(
      RemotePipeline<Int>(port: portBox.load(ordering: .relaxed)), .direct, probe: probe)
    let done = await eventually(within: seconds) { !probe.completionList.isEmpty }
    #expect(done, "stalled at \(probe.values.value) of \(count)")
    sink.cancel()
    task.cancel()
    _ = try? await task.value
    return (probe.values.value, probe.completionList)
  }

  @Test(arguments: [Recording.Mode.synchronous, .asyncThread, .slowThenFast])
  func wellBehavedSourcesNeverOweMoreThanPrefetch(mode: Recording.Mode) async throws {
    for prefetch in [1, 2, 16] {
      let stats = Recording.Stats()
      let count = 50_000
      let (values, completion) = try await Self.serve(
        { Recording(mode: mode, count: count, stats: stats) }, prefetch: prefetch,
        expecting: count)
      #expect(values == count)
      #expect(completion == [.finished])
      let s = stats.snapshot()
      #expect(s.maxOutstanding <= prefetch, "prefetch \(prefetch) \(mode): \(s)")
    }
  }

  /// A hand-written source that emits what `request` asks for and ignores the demand
  /// `receive` returns (a common shortcut) is served to its end, never owing more than
  /// `prefetch`: the writer asks only with `request`.
  @Test func aSourceThatIgnoresReturnedDemandIsServed() async throws {
    for prefetch in [1, 16] {
      let stats = Recording.Stats()
      let count = 20_000
      let (values, completion) = try await Self.serve(
        { Recording(mode: .ignoresReturnedDemand, count: count, stats: stats) },
        prefetch: prefetch, expecting: count)
      #expect(values == count, "prefetch \(prefetch): \(stats.snapshot())")
      #expect(completion == [.finished])
      #expect(stats.snapshot().maxOutstanding <= prefetch, "prefetch \(prefetch)")
    }
  }

  @Test(arguments: [Recording.Mode.overSend, .overSendFromThread, .manyThreads])
  func misbehavingSourcesLoseNothing(mode: Recording.Mode) async throws {
    let stats = Recording.Stats()
    let count = 40_000
    let (values, completion) = try await Self.serve(
      { Recording(mode: mode, count: count, stats: stats) }, prefetch: 16, expecting: count)
    #expect(values == count, "\(stats.snapshot())")
    #expect(completion == [.finished])
  }
}

/// A sink handed to several threads.
struct SharedSink: @unchecked Sendable {
  // Safety: a sink's `receive(subscription:)` is thread-safe.
  let sink: Subscribers.Sink<Int, RemotePipelineError>
}
