import Dispatch
import Foundation
import NIOCore
import NIOPosix
import Sluice
import SluiceNIO
import Synchronization
import Testing

/// A fourth adversary's attacks on the writer's demand ramp and `prefetch`, written against
/// 3e9c2e9 (`prefetch` 64 by default, a connection's first request call asking for one value),
/// which they failed twice (a live feed behind a snapshot dropped values while the first call's
/// successor waited for the pool; a source turning slow held its thread for 64 slow values): that
/// change was reverted, and these keep both from coming back. Also `WireFrame.write(value:into:)`.
/// Uses the first suite's harness.
@Suite("Attacks on the prefetch ramp", .serialized)
struct PrefetchRampAttackTests {
  typealias H = WriterDemandAttackTests
  typealias Meter = WriterDemandAttackTests.Meter
  typealias Received = WriterDemandAttackTests.Received

  // MARK: Harness

  /// Starts an in-process server of `make` with `configuration`: its port and its task (cancel
  /// it, then await it, to stop the server).
  static func start<Value: WireCodable, Failure: Error>(
    _ configuration: PipelineServerConfiguration,
    _ make: @escaping @Sendable () -> AnyPublisher<Value, Failure>
  ) async -> (port: Int, task: Task<Void, any Error>) {
    let portBox = Atomic<Int>(0)
    let server = PipelineServer<Value>(configuration: configuration) { make() }
    let task = Task { try await server.run(bound: { portBox.store($0, ordering: .relaxed) }) }
    #expect(await eventually(within: 30) { portBox.load(ordering: .relaxed) != 0 })
    return (portBox.load(ordering: .relaxed), task)
  }

  static func stop(_ task: Task<Void, any Error>) async {
    task.cancel()
    _ = try? await task.value
  }

  /// A client of `port` that sinks every value into a ``Received``.
  static func client<Value: WireCodable & Sendable>(
    _ port: Int, _ configuration: RemotePipelineConfiguration = .init(),
    as: Value.Type = Value.self
  ) -> (Received<Value>, AnyCancellable) {
    let box = Received<Value>()
    let cancellable = RemotePipeline<Value>(port: port, configuration: configuration).sink(
      receiveCompletion: { completion in
        box.lock.withLock {
          box.completions.append(completion)
          if box.completedAt == nil { box.completedAt = .now }
        }
      },
      receiveValue: { value in box.lock.withLock { box.values.append(value) } })
    return (box, cancellable)
  }

  /// Serves `make` with `configuration` to `clients` clients and waits (up to `seconds`) for
  /// every completion; then waits a moment for a second completion (there must be none).
  static func serve<Value: WireCodable & Sendable, Failure: Error>(
    _ configuration: PipelineServerConfiguration, clients: Int = 1,
    client clientConfiguration: RemotePipelineConfiguration = .init(), within seconds: Int = 30,
    _ make: @escaping @Sendable () -> AnyPublisher<Value, Failure>
  ) async -> [Received<Value>] {
    let (port, task) = await start(configuration, make)
    var boxes: [Received<Value>] = []
    var cancellables: [AnyCancellable] = []
    for _ in 0..<clients {
      let (box, cancellable) = client(port, clientConfiguration, as: Value.self)
      boxes.append(box)
      cancellables.append(cancellable)
    }
    let done = await eventually(within: seconds) { boxes.allSatisfy(\.completed) }
    #expect(done, "stalled at \(boxes.map(\.count))")
    try? await Task.sleep(for: .milliseconds(20))
    for cancellable in cancellables { cancellable.cancel() }
    await stop(task)
    return boxes
  }

  static func configuration(
    prefetch: Int = PipelineServerConfiguration().prefetch, batchBytes: Int = 16 * 1024,
    maximumFrameLength: Int = 1 << 20, sendBufferSize: Int? = 64 * 1024
  ) -> PipelineServerConfiguration {
    var configuration = PipelineServerConfiguration()
    configuration.prefetch = prefetch
    configuration.batchBytes = batchBytes
    configuration.maximumFrameLength = maximumFrameLength
    configuration.sendBufferSize = sendBufferSize
    return configuration
  }

  /// `values` then exactly one `completion`, else an issue naming `label`.
  static func expect<Value: Equatable>(
    _ box: Received<Value>, _ values: [Value],
    _ completion: Subscribers.Completion<RemotePipelineError>, _ label: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let (got, completions) = box.snapshot
    if got != values {
      let at = zip(got, values).enumerated().first { $0.element.0 != $0.element.1 }?.offset
      Issue.record(
        Comment(
          rawValue:
            "\(label): \(got.count) values of \(values.count); first difference at "
            + "\(at.map(String.init) ?? "the end")"),
        sourceLocation: sourceLocation)
    }
    #expect(completions == [completion], "\(label)", sourceLocation: sourceLocation)
  }
}

// MARK: Sources

extension PrefetchRampAttackTests {
  /// A thread of its own sending 0, 1, 2, … into `subject` (and `current`), one every `pace`
  /// microseconds (a spin on the clock: no sleep's granularity), until stopped: a hot source
  /// (a ticker, a feed of events) that every connection subscribes to.
  final class Ticker: @unchecked Sendable {
    // Safety: the subjects are thread-safe; the rest is atomic.
    let events = PassthroughSubject<Int, Never>()
    let current = CurrentValueSubject<Int, Never>(-1)
    let sent = Atomic<Int>(0)
    let stopped = Flag()
    let finished = Flag()

    init(pace: Int) {
      Thread.detachNewThread { [self] in
        var next = 0
        var due = DispatchTime.now().uptimeNanoseconds
        while !stopped.isSet {
          current.send(next)
          events.send(next)
          next += 1
          sent.store(next, ordering: .releasing)
          due += UInt64(pace) * 1_000
          while DispatchTime.now().uptimeNanoseconds < due {}
        }
        finished.set()
      }
    }

    func stop() async {
      stopped.set()
      _ = await eventually(within: 30) { finished.isSet }
    }
  }

  /// What a hand-written source of `0..<count` emits next, behind its lock: the demand owed
  /// (with `extra` more per request or returned demand), the next value, and whether it ended.
  struct Emission {
    enum Step {
      case value(Int)
      case finished
      /// Nothing owed: the emitting loop stops until the next request.
      case idle
      /// Finished or cancelled already.
      case done
    }
    var owed = 0
    var next = 0
    var done = false

    mutating func add(_ demand: Subscribers.Demand, extra: Int) {
      owed = PrefetchRampAttackTests.saturating(owed, demand.max ?? 1 << 40, extra)
    }

    mutating func step(count: Int) -> Step {
      if done { return .done }
      if next == count {
        done = true
        return .finished
      }
      guard owed > 0 else { return .idle }
      owed -= 1
      next += 1
      return .value(next - 1)
    }
  }

  /// A hand-written source that sends more than it is asked for: `extra` more per `request`,
  /// then `count` values in all, then finished. Synchronous, on the requesting thread, ignoring
  /// what `receive` returns; or, `fromOwnThread`, from a thread of its own, adding what
  /// `receive` returns (plus `extra` again).
  struct OverSender: Publisher, Sendable {
    typealias Output = Int
    typealias Failure = Never
    let count: Int
    let extra: Int
    var fromOwnThread = false

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
      subscriber.receive(subscription: Inner(downstream: AnySubscriber(subscriber), source: self))
    }

    final class Inner: Subscription, @unchecked Sendable {
      // Safety: `emission` and `emitting` behind `lock`; signals are serial (a request from
      // inside `receive` only adds to what is owed).
      let lock = NSLock()
      let downstream: AnySubscriber<Int, Never>
      let source: OverSender
      var emission = Emission()
      var emitting = false
      init(downstream: AnySubscriber<Int, Never>, source: OverSender) {
        self.downstream = downstream
        self.source = source
      }

      func request(_ demand: Subscribers.Demand) {
        let go: Bool = lock.withLock {
          emission.add(demand, extra: source.extra)
          if emitting || emission.done { return false }
          emitting = true
          return true
        }
        guard go else { return }
        if source.fromOwnThread { Thread.detachNewThread { self.emit() } } else { emit() }
      }

      func emit() {
        while true {
          let step = lock.withLock {
            let step = emission.step(count: source.count)
            if case .idle = step { emitting = false }
            return step
          }
          switch step {
          case .value(let value):
            let more = downstream.receive(value)
            if source.fromOwnThread, more > 0 {
              lock.withLock { emission.add(more, extra: source.extra) }
            }
          case .finished:
            downstream.receive(completion: .finished)
            return
          case .idle, .done: return
          }
        }
      }

      func cancel() { lock.withLock { emission.done = true } }
    }
  }

  /// `a + b + c`, or `Int.max` when that overflows (a demand of `Int.max` is unlimited).
  static func saturating(_ a: Int, _ b: Int, _ c: Int) -> Int {
    let (ab, first) = a.addingReportingOverflow(b)
    let (abc, second) = ab.addingReportingOverflow(c)
    return first || second ? Int.max : abc
  }

  struct Boom: Error, CustomStringConvertible {
    var description: String { "boom" }
  }
}

// MARK: The first call of a connection, and hot sources

extension PrefetchRampAttackTests {
  /// A connection's first call must leave a hot source behind a snapshot with demand: when the
  /// pipeline gives the snapshot inside that call — a value `prepend`ed to a live feed (or
  /// `Just(snapshot).append(feed)`), a `CurrentValueSubject`'s current value — and the call
  /// asked for only that one value, it yields with nothing owed, and the next demand comes from
  /// a new task: the hot source sends meanwhile into no demand and drops. A feed's values from
  /// the moment it is subscribed to must all arrive (`lost`: how many it sent before the first
  /// that did); a current-value subject's client must see the value after its first. A ticker
  /// sends a value every 50 µs; `busy`: two other connections stream meanwhile, so a new task
  /// waits its turn in the pool, as on a server with other clients. (At 3e9c2e9, whose first
  /// call asked for one value, most connections lost tens to hundreds of values with `busy`.)
  @Test(arguments: [16, 64], [false, true])
  func aLiveFeedBehindASnapshotLosesNoValueAfterTheFirst(prefetch: Int, busy: Bool) async throws {
    let ticker = Ticker(pace: 50)
    // A busy server: two other connections stream a fast synchronous source meanwhile (their
    // request calls take the pool's threads in turns, as a server's other clients do).
    let (busyPort, busyServer) = await Self.start(Self.configuration()) {
      (0..<Int.max).publisher.eraseToAnyPublisher()
    }
    let busyClients = busy ? (0..<2).map { _ in Self.client(busyPort, as: Int.self).1 } : []
    /// The ticker's next value when the feed was first asked for values (the connections are
    /// served one after the other, each waiting for 301 values).
    let subscribedAt = Atomic<Int>(-1)
    var report: [String] = []
    var lost = 0
    for shape in ["prepend", "append", "current"] {
      let (port, task) = await Self.start(Self.configuration(prefetch: prefetch)) {
        () -> AnyPublisher<Int, Never> in
        // From this connection's first request to the feed: a value sent between its
        // subscription and that request meets no demand and is dropped, by Combine's rules,
        // whatever the server does (and a loaded machine can stretch that moment).
        let asked = Atomic<Bool>(false)
        let feed = ticker.events.handleEvents(receiveRequest: { _ in
          guard !asked.exchange(true, ordering: .acquiringAndReleasing) else { return }
          subscribedAt.store(ticker.sent.load(ordering: .acquiring), ordering: .releasing)
        })
        switch shape {
        case "prepend": return feed.prepend(-1).eraseToAnyPublisher()
        case "append": return Just(-1).append(feed).eraseToAnyPublisher()
        default: return ticker.current.eraseToAnyPublisher()
        }
      }
      for round in 0..<20 {
        subscribedAt.store(-1, ordering: .releasing)
        let (box, cancellable) = Self.client(port, as: Int.self)
        _ = await eventually(within: 30) { box.count >= 301 }
        cancellable.cancel()
        let values = box.snapshot.values
        guard values.count >= 301 else {
          Issue.record("\(shape) round \(round): \(values.count) values")
          continue
        }
        let feed = shape == "current" ? Array(values[0...300]) : Array(values[1...300])
        // Only what the first call costs: for a feed, the values it sent once first asked for
        // values before the first that arrived (the ticker may have been inside one send, and
        // the request may still have been on its way to the subject: two values of slack); for
        // the current-value subject, those between its first two values. (A gap
        // later is a stall's: the client fell behind, and a subject drops what it cannot send.)
        let dropped =
          shape == "current"
          ? feed[1] - feed[0] - 1 : max(0, feed[0] - subscribedAt.load(ordering: .acquiring) - 2)
        let later = zip(feed.dropFirst(), feed.dropFirst(2)).map { $1 - $0 - 1 }.reduce(0, +)
        if later > 0 { print("\(shape) round \(round): \(later) lost later (a stall)") }
        if dropped > 0 {
          lost += dropped
          report.append(
            "\(shape) round \(round): \(dropped) lost (first values \(values.prefix(4)), feed "
              + "subscribed at \(subscribedAt.load(ordering: .acquiring)))")
        }
      }
      await Self.stop(task)
      let mine = report.filter { $0.hasPrefix(shape) }
      print(
        "prefetch \(prefetch) busy \(busy) \(shape): \(mine.count) of 20 connections lost values: "
          + "\(mine.prefix(3))")
    }
    for cancellable in busyClients { cancellable.cancel() }
    await Self.stop(busyServer)
    await ticker.stop()
    #expect(report.isEmpty, "prefetch \(prefetch) busy \(busy): \(lost) values dropped: \(report)")
  }
}

// MARK: The demand bound

extension PrefetchRampAttackTests {
  /// The shapes the demand bound is attacked with: a name, the values each source sends (by
  /// `value / 1_000_000`) or `nil` for one ordered stream of `0..<count`, and the pipeline.
  static func demandShapes(count: Int) -> [(
    String, [Int: Int]?, @Sendable () -> AnyPublisher<Int, Never>
  )] {
    [
      ("sequence", nil, { (0..<count).publisher.eraseToAnyPublisher() }),
      (
        "subject from 3 threads", [1: count / 3, 2: count / 3, 3: count / 3],
        { H.fedSubject(senders: 3, each: count / 3) }
      ),
      (
        "receive(on:)", nil,
        { (0..<count).publisher.receive(on: DispatchQueue(label: "ramp.r")).eraseToAnyPublisher() }
      ),
      (
        "subscribe(on:)", nil,
        {
          (0..<count).publisher.subscribe(on: DispatchQueue(label: "ramp.s")).eraseToAnyPublisher()
        }
      ),
      (
        "subscribe(on:) then receive(on:)", nil,
        {
          (0..<count).publisher.subscribe(on: DispatchQueue.global())
            .receive(on: DispatchQueue(label: "ramp.sr")).eraseToAnyPublisher()
        }
      ),
      (
        "sequence merged with a subject from 2 threads",
        [0: count, 1: count / 4, 2: count / 4],
        {
          (0..<count).publisher.merge(with: H.fedSubject(senders: 2, each: count / 4))
            .eraseToAnyPublisher()
        }
      ),
      (
        "sends 3 more than asked, ignores returned demand", nil,
        { OverSender(count: count, extra: 3).eraseToAnyPublisher() }
      ),
      (
        "sends 1 more than asked from its own thread", nil,
        { OverSender(count: count, extra: 1, fromOwnThread: true).eraseToAnyPublisher() }
      ),
    ]
  }

  /// With the default `prefetch` and odd ones, every shape of source: each value once and in
  /// order (per source), exactly one completion, and never more than `prefetch` owed at the top
  /// of the pipeline (a source that sends more than it was asked for counts those against what
  /// it is owed).
  @Test(arguments: [1, 3, 63, 64, 65])
  func thePipelineIsNeverOwedMoreThanPrefetch(prefetch: Int) async throws {
    let count = 12_000
    for (name, sources, make) in Self.demandShapes(count: count) {
      for round in 0..<2 {
        let meter = Meter()
        let received = await Self.serve(Self.configuration(prefetch: prefetch)) {
          make().handleEvents(
            receiveOutput: { _ in meter.value() }, receiveRequest: { meter.request($0) }
          ).eraseToAnyPublisher()
        }
        let label = "prefetch \(prefetch) \(name) round \(round)"
        if let sources {
          H.checkPerSource(received[0], sources, label)
        } else {
          H.check(received[0], Array(0..<count), label)
        }
        #expect(meter.max <= prefetch, "\(label): \(meter.max) owed at once")
      }
    }
  }

  /// Sources that complete or fail while the ramp is climbing (counts around its steps: 1, 2,
  /// 4, …, `prefetch`), synchronously and from another thread: the values, then exactly one
  /// completion, never more than `prefetch` owed.
  @Test(arguments: [1, 3, 64, 65])
  func sourcesThatEndMidRamp(prefetch: Int) async throws {
    let counts = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 66, 127, 129, 200]
    for count in counts {
      for hop in [false, true] {
        for fails in [false, true] {
          let meter = Meter()
          let received = await Self.serve(Self.configuration(prefetch: prefetch)) {
            () -> AnyPublisher<Int, Boom> in
            let values = (0..<count).publisher.setFailureType(to: Boom.self)
            let ended =
              fails
              ? values.append(Fail(error: Boom())).eraseToAnyPublisher()
              : values.eraseToAnyPublisher()
            let shaped =
              hop
              ? ended.receive(on: DispatchQueue(label: "ramp.end")).eraseToAnyPublisher() : ended
            return shaped.handleEvents(
              receiveOutput: { _ in meter.value() }, receiveRequest: { meter.request($0) }
            ).eraseToAnyPublisher()
          }
          let label = "prefetch \(prefetch) count \(count) hop \(hop) fails \(fails)"
          Self.expect(
            received[0], Array(0..<count), fails ? .failure(.serverFailed("boom")) : .finished,
            label)
          #expect(meter.max <= prefetch, "\(label): \(meter.max) owed")
        }
      }
    }
  }
}

// MARK: The first call

extension PrefetchRampAttackTests {
  /// What a connection's first call meets: nothing, one value, a failure, a subject that sent
  /// before the client connected and sends while it does, a buffered subject that waits, then
  /// floods from another thread, a `Deferred` `Future`: the values, exactly one completion.
  @Test(arguments: [1, 64])
  func firstCallShapes(prefetch: Int) async throws {
    let configuration = Self.configuration(prefetch: prefetch)
    let empty = await Self.serve(configuration) { Empty<Int, Never>().eraseToAnyPublisher() }
    Self.expect(empty[0], [], .finished, "Empty")
    let just = await Self.serve(configuration, clients: 3) { Just(7).eraseToAnyPublisher() }
    for box in just { Self.expect(box, [7], .finished, "Just") }
    let fail = await Self.serve(configuration) {
      Fail<Int, Boom>(error: Boom()).eraseToAnyPublisher()
    }
    Self.expect(fail[0], [], .failure(.serverFailed("boom")), "Fail")
    let justThenFail = await Self.serve(configuration) {
      Just(1).setFailureType(to: Boom.self).append(Fail(error: Boom())).eraseToAnyPublisher()
    }
    Self.expect(justThenFail[0], [1], .failure(.serverFailed("boom")), "Just then Fail")
    let future = await Self.serve(configuration) {
      Deferred {
        Future<Int, Never> { promise in
          DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) {
            promise(.success(42))
          }
        }
      }.eraseToAnyPublisher()
    }
    Self.expect(future[0], [42], .finished, "Future")
    // Quiet for 300 ms, then 50,000 values as fast as a thread sends them, into a buffer.
    let flood = await Self.serve(configuration) { () -> AnyPublisher<Int, Never> in
      let subject = PassthroughSubject<Int, Never>()
      return subject.buffer(size: 1_000_000, prefetch: .keepFull, whenFull: .dropNewest)
        .handleEvents(receiveSubscription: { _ in
          Thread.detachNewThread {
            usleep(300_000)
            for value in 0..<50_000 { subject.send(value) }
            subject.send(completion: .finished)
          }
        })
        .eraseToAnyPublisher()
    }
    Self.expect(flood[0], Array(0..<50_000), .finished, "quiet, then a flood")
    // A subject that sends before the client connects and while it does: what arrives is a
    // run of consecutive values (none lost once the first arrived), then the completion.
    let subject = PassthroughSubject<Int, Never>()
    let sending = Flag()
    Thread.detachNewThread {
      var value = 0
      while value < 100_000 {
        subject.send(value)
        value += 1
        if value % 64 == 0 { usleep(200) }
      }
      subject.send(completion: .finished)
      sending.set()
    }
    let hot = await Self.serve(configuration, clients: 4) {
      subject.eraseToAnyPublisher()
    }
    for (index, box) in hot.enumerated() {
      let (values, completions) = box.snapshot
      let gaps = zip(values, values.dropFirst()).filter { $1 != $0 + 1 }.count
      #expect(completions == [.finished], "hot subject, client \(index)")
      // A stall (the client is slower than the sender) drops values: only report them.
      if gaps > 0 { print("hot subject, prefetch \(prefetch), client \(index): \(gaps) gaps") }
    }
    _ = await eventually(within: 30) { sending.isSet }
  }
}

// MARK: Short-lived connections

extension PrefetchRampAttackTests {
  /// An object whose life is the pipeline's: captured by its `handleEvents`, so it lives while
  /// the writer holds the subscription.
  final class Token: Sendable {
    init() { liveTokens.add(1, ordering: .relaxed) }
    deinit { liveTokens.subtract(1, ordering: .relaxed) }
  }

  static func openDescriptors() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
  }

  /// Hundreds of clients that connect, take one value and go (or go at once, or take the whole
  /// stream of a two-value source), one after the other and four at a time, against every kind of
  /// first call: every pipeline is released (no writer leaks), no descriptor is left open, and
  /// the server serves a whole stream afterwards.
  @Test(arguments: [1, 64])
  func shortLivedConnectionsLeaveNothingBehind(prefetch: Int) async throws {
    let ticker = Ticker(pace: 100)
    let shapeIndex = Atomic<Int>(0)
    let (port, task) = await Self.start(Self.configuration(prefetch: prefetch)) {
      () -> AnyPublisher<Int, Never> in
      let token = Token()
      let shape = shapeIndex.add(1, ordering: .relaxed).oldValue % 7
      let base: AnyPublisher<Int, Never>
      switch shape {
      case 0: base = (0..<Int.max).publisher.eraseToAnyPublisher()
      case 1: base = Just(0).eraseToAnyPublisher()
      case 2: base = [0, 1].publisher.eraseToAnyPublisher()
      case 3: base = ticker.events.map { _ in 0 }.eraseToAnyPublisher()
      case 4:
        base = (0..<Int.max).publisher.receive(on: DispatchQueue(label: "short.r"))
          .eraseToAnyPublisher()
      case 5:
        base = (0..<Int.max).publisher.subscribe(on: DispatchQueue(label: "short.s"))
          .eraseToAnyPublisher()
      default: base = ticker.current.map { _ in 0 }.eraseToAnyPublisher()
      }
      return base.handleEvents(receiveOutput: { _ in _ = token }).eraseToAnyPublisher()
    }
    // A first connection warms up the event loops and the pool.
    let warm = try await RemotePipeline<Int>(port: port).first().firstValue()
    #expect(warm == 0)
    #expect(await eventually { liveTokens.load(ordering: .relaxed) == 0 }, "warm-up released")
    let descriptors = Self.openDescriptors()
    var unanswered = 0
    for round in 0..<60 {
      // Four at a time take one value each; one connects and closes at once.
      try await withThrowingTaskGroup(of: Int?.self) { group in
        for _ in 0..<4 {
          group.addTask {
            try await withThrowingTaskGroup(of: Int?.self) { inner in
              inner.addTask { try await RemotePipeline<Int>(port: port).first().firstValue() }
              inner.addTask {
                try await Task.sleep(for: .seconds(30))
                return nil
              }
              let first = try await inner.next() ?? nil
              inner.cancelAll()
              return first
            }
          }
        }
        for try await value in group where value != 0 { unanswered += 1 }
      }
      let quick = try await NonReadingClients(count: 1, port: port)
      await quick.close()
      if round % 20 == 19 { print("round \(round): \(liveTokens.load(ordering: .relaxed)) live") }
    }
    #expect(unanswered == 0, "\(unanswered) clients got no first value within 30 s")
    let released = await eventually(within: 30) { liveTokens.load(ordering: .relaxed) == 0 }
    #expect(released, "\(liveTokens.load(ordering: .relaxed)) pipelines still held")
    let closed = await eventually(within: 30) { Self.openDescriptors() <= descriptors + 2 }
    #expect(closed, "descriptors \(descriptors) → \(Self.openDescriptors())")
    // Still responsive: a whole stream of a two-value source (shape 2) after the rest.
    while shapeIndex.load(ordering: .relaxed) % 7 != 2 {
      _ = try await RemotePipeline<Int>(port: port).first().firstValue()
    }
    let (box, cancellable) = Self.client(port, as: Int.self)
    #expect(await eventually { box.completed })
    Self.expect(box, [0, 1], .finished, "after the churn")
    cancellable.cancel()
    await Self.stop(task)
    await ticker.stop()
  }
}

/// Pipelines of ``PrefetchRampAttackTests/shortLivedConnectionsLeaveNothingBehind`` alive.
let liveTokens = Atomic<Int>(0)

// MARK: A source that turns slow

extension PrefetchRampAttackTests {
  /// A synchronous source, fast for `fast` values, then taking `slowMicros` (a blocking read)
  /// before each of the next `slow`; it notes how the writer's request calls held their thread:
  /// a *call* is a run of `request`s from the same task on the same thread, each within a
  /// millisecond of the last one's end (the writer's call asks again from its loop at once).
  struct Turning: Publisher, Sendable {
    typealias Output = Int
    typealias Failure = Never
    let fast: Int
    let slow: Int
    let slowMicros: UInt32
    let log: Log

    final class Log: @unchecked Sendable {
      // Safety: behind `lock`.
      let lock = NSLock()
      var task = 0
      var thread = 0
      var callStart = ContinuousClock.now
      var lastEnd = ContinuousClock.now
      var callSlow = 0
      /// The most slow values one `request` took, one call took, and the longest call with a
      /// slow value in it.
      var mostSlowInARequest = 0
      var mostSlowInACall = 0
      var longestSlowCall: Duration = .zero

      func began(task: Int, thread: Int) {
        lock.withLock {
          let now = ContinuousClock.now
          if task != self.task || thread != self.thread || now - lastEnd >= .milliseconds(1) {
            self.task = task
            self.thread = thread
            callStart = now
            callSlow = 0
          }
        }
      }

      func ended(slowValues: Int) {
        lock.withLock {
          lastEnd = .now
          callSlow += slowValues
          mostSlowInARequest = Swift.max(mostSlowInARequest, slowValues)
          mostSlowInACall = Swift.max(mostSlowInACall, callSlow)
          if callSlow > 0 { longestSlowCall = Swift.max(longestSlowCall, lastEnd - callStart) }
        }
      }
    }

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
      subscriber.receive(subscription: Inner(downstream: AnySubscriber(subscriber), source: self))
    }

    final class Inner: Subscription, @unchecked Sendable {
      // Safety: `owed`, `next`, `emitting`, `done` behind `lock`.
      let lock = NSLock()
      let downstream: AnySubscriber<Int, Never>
      let source: Turning
      var owed = 0
      var next = 0
      var emitting = false
      var done = false
      init(downstream: AnySubscriber<Int, Never>, source: Turning) {
        self.downstream = downstream
        self.source = source
      }

      func request(_ demand: Subscribers.Demand) {
        let task = withUnsafeCurrentTask { $0?.hashValue ?? 0 }
        source.log.began(task: task, thread: Int(bitPattern: pthread_self()))
        var slowValues = 0
        defer { source.log.ended(slowValues: slowValues) }
        let go: Bool = lock.withLock {
          owed += demand.max ?? 1 << 40
          if emitting || done { return false }
          emitting = true
          return true
        }
        guard go else { return }
        while true {
          let value: Int? = lock.withLock {
            if done { return nil }
            if next == source.fast + source.slow {
              done = true
              return -1
            }
            guard owed > 0 else {
              emitting = false
              return nil
            }
            owed -= 1
            next += 1
            return next - 1
          }
          guard let value else { return }
          if value == -1 {
            downstream.receive(completion: .finished)
            return
          }
          if value >= source.fast {
            usleep(source.slowMicros)  // the blocking read
            slowValues += 1
          }
          let more = downstream.receive(value)
          if more > 0 { lock.withLock { owed += more.max ?? 1 << 40 } }
        }
      }

      func cancel() { lock.withLock { done = true } }
    }
  }

  /// The README: a source that turns slow inside a call holds its thread for at most the values
  /// that call asked for — `prefetch` of them, as the deadline is checked only when a call's
  /// demand runs out. A source fast until its ramp is at `prefetch`, then slow (a cache that
  /// runs out, a file read up to its end and then followed): at 4 ms a value, with the default
  /// `prefetch` of 16, at most 16 slow values in one request (at 3e9c2e9's default of 64, 56
  /// of them: 269 ms, 32 s at 500 ms a value). Counted in values, which a loaded machine does
  /// not raise (a slow machine only reaches the deadline sooner).
  @Test(arguments: [PipelineServerConfiguration().prefetch])
  func aSourceThatTurnsSlowHoldsItsThreadForAboutTheDeadline(prefetch: Int) async throws {
    let log = Turning.Log()
    let received = await Self.serve(Self.configuration(prefetch: prefetch)) {
      Turning(fast: 5_000, slow: 80, slowMicros: 4_000, log: log).eraseToAnyPublisher()
    }
    H.check(received[0], Array(0..<5_080), "prefetch \(prefetch)")
    let (inARequest, inACall, longest) = log.lock.withLock {
      (log.mostSlowInARequest, log.mostSlowInACall, log.longestSlowCall)
    }
    print(
      "prefetch \(prefetch): one request took up to \(inARequest) slow values (4 ms each), one "
        + "call up to \(inACall); the longest such call held its thread \(longest)")
    // At most what one request asked for: `prefetch`.
    let label =
      "prefetch \(prefetch): one request of the writer's took \(inARequest) values of 4 ms, "
      + "its call \(inACall) (\(longest))"
    #expect(inARequest <= prefetch, "\(label)")
  }
}

// MARK: What a stalled connection holds

extension PrefetchRampAttackTests {
  /// The bytes the kernel holds for the loopback connection from `serverPort` to `clientPort`:
  /// the server socket's send queue and the client socket's receive queue (/proc/net/tcp).
  static func kernelBytes(serverPort: Int, clientPort: Int) -> Int? {
    // Read to the end with read(2): a /proc file has no size, and the table is long once
    // earlier tests left sockets in TIME_WAIT.
    let descriptor = open("/proc/net/tcp", O_RDONLY)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var data: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
      guard count > 0 else { break }
      data += chunk[0..<count]
    }
    let table = String(decoding: data, as: UTF8.self)
    var send: Int?
    var receive: Int?
    for line in table.split(separator: "\n").dropFirst() {
      let fields = line.split(separator: " ", omittingEmptySubsequences: true)
      guard fields.count > 4 else { continue }
      let local = Int(fields[1].split(separator: ":")[1], radix: 16)
      let remote = Int(fields[2].split(separator: ":")[1], radix: 16)
      let queues = fields[4].split(separator: ":").map { Int($0, radix: 16) ?? 0 }
      if local == serverPort, remote == clientPort { send = queues[0] }
      if local == clientPort, remote == serverPort { receive = queues[1] }
    }
    guard let send, let receive else { return nil }
    return send + receive
  }

  /// Counts the bytes a channel reads (and drops them).
  final class ByteCounter: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let bytes = Atomic<Int>(0)
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      bytes.add(unwrapInboundIn(data).readableBytes, ordering: .relaxed)
    }
  }

  /// Waits until `produced` has not moved for half a second (30 s at most).
  static func idle(_ produced: borrowing Atomic<Int>) async throws {
    var last = -1
    var quiet = 0
    let deadline = ContinuousClock.now + .seconds(30)
    while quiet < 5, ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(100))
      let now = produced.load(ordering: .relaxed)
      quiet = now == last ? quiet + 1 : 0
      last = now
    }
  }

  /// The `(prefetch, batchBytes)` cases of the stalled-connection check, and any given as
  /// `PREFETCHxBATCH` in `SLUICE_NIO_STALL_CASES` (comma-separated).
  static let stalledCases: [(Int, Int)] =
    [(1, 64), (3, 64), (16, 64), (64, 64), (PipelineServerConfiguration().prefetch, 16 * 1024)]
    + (ProcessInfo.processInfo.environment["SLUICE_NIO_STALL_CASES"] ?? "")
    .split(separator: ",").compactMap { item in
      let parts = item.split(separator: "x").compactMap { Int($0) }
      return parts.count == 2 ? (parts[0], parts[1]) : nil
    }

  /// A client that never reads, values of 1,000 bytes (frames of 1,005), small kernel buffers:
  /// once the server is idle, what it produced minus what the kernel holds is what the server
  /// holds. The README's bound: the write in flight and the pending frames (each under three
  /// batches — or frames, when a frame is larger — plus a frame, plus up to `prefetch` values
  /// demanded before the stall), and the batch being filled. Checked with the default batches and
  /// `prefetch`, and with batches smaller than a frame (each value a batch of its own) at a
  /// `prefetch` of 1, 3, 16 and 64. (Before the writer's calls stopped asking behind a stall,
  /// the fourth adversary's 64-byte batches at a `prefetch` of 64 held up to 178 values where
  /// this bound says 138: a call scheduled by an earlier write, running late, topped the demand
  /// up again while the connection was stalled.)
  @Test(arguments: stalledCases)
  func aStalledConnectionHoldsAtMostPrefetchValuesBeyondItsBatches(
    prefetch: Int, batchBytes: Int
  ) async throws {
    for (hop, readsFirst) in [(false, false), (true, false), (false, true), (true, true)] {
      let frame = 1_005
      let produced = Atomic<Int>(0)
      let (port, task) = await Self.start(
        Self.configuration(prefetch: prefetch, batchBytes: batchBytes, sendBufferSize: 4096)
      ) { () -> AnyPublisher<String, Never> in
        // (`eraseToAnyPublisher` first: a sequence's own `map` would map it all at once.)
        let values = (0..<1_000_000).publisher.eraseToAnyPublisher()
          .map { String(repeating: Character(String($0 % 10)), count: 1_000) }
          .handleEvents(receiveOutput: { _ in produced.add(1, ordering: .relaxed) })
        return hop
          ? values.receive(on: DispatchQueue(label: "stalled")).eraseToAnyPublisher()
          : values.eraseToAnyPublisher()
      }
      let clients = try await NonReadingClients(count: 1, port: port, receiveBufferSize: 4096)
      let channel = clients.channels[0]
      let clientPort = try #require(channel.localAddress?.port)
      let counter = ByteCounter()
      try await channel.pipeline.addHandler(counter).get()
      #expect(await eventually(within: 30) { produced.load(ordering: .relaxed) > 0 }, "served")
      try await Self.idle(produced)
      if readsFirst {
        // Reads a little at a time, then stops for good: stalls lifted, stalls again.
        for _ in 0..<40 {
          channel.read()
          try await Task.sleep(for: .milliseconds(5))
        }
        try await Self.idle(produced)
      }
      let kernel = try #require(Self.kernelBytes(serverPort: port, clientPort: clientPort))
      let values = produced.load(ordering: .relaxed)
      let held = values * frame - kernel - counter.bytes.load(ordering: .relaxed)
      let heldValues = Double(held) / Double(frame)
      let label =
        "prefetch \(prefetch) batches \(batchBytes) hop \(hop) reads first \(readsFirst): produced \(values) values (\(values * frame) bytes), "
        + "the kernel holds \(kernel), the server \(held) bytes: \(heldValues) values"
      print(label)
      // The write in flight and the pending frames (each under three batches plus a frame,
      // plus the `prefetch` values owed when it stalled), the batch being filled (under a
      // batch plus a frame).
      let bound = 7 * max(batchBytes, frame) + 3 * frame + 2 * prefetch * frame
      #expect(held <= bound, "\(label) (bound \(bound) bytes)")
      await clients.close()
      await Self.stop(task)
    }
  }
}

// MARK: Values near the frame limit

extension PrefetchRampAttackTests {
  /// Strings and byte strings full of newlines, NULs and bytes that look like frames, whose
  /// frames are exactly the server's and the client's `maximumFrameLength` or a few bytes under,
  /// synchronously and from another thread: every byte arrives, in order; then a value one byte
  /// too long ends the stream with the server's failure, after every value before it.
  @Test(arguments: [1, 3, 64, 65])
  func valuesAtTheFrameLimit(prefetch: Int) async throws {
    let limit = 4_096
    let pattern: [UInt8] = [0, 10, 13, 0, 0, 0, 5, 1, 0x2e, 0x0a, 0, 255, 0xc3, 0xa9]
    func bytes(_ index: Int, _ size: Int) -> [UInt8] {
      (0..<size).map {
        $0 % 97 == 0 ? UInt8(truncatingIfNeeded: index) : pattern[$0 % pattern.count]
      }
    }
    let sizes = (0..<300).map { limit - 1 - ($0 % 4 == 0 ? 0 : $0 % 7) }
    let expected = sizes.enumerated().map { ByteBuffer(bytes: bytes($0.offset, $0.element)) }
    let texts = sizes.enumerated().map { index, size in
      // Newlines, NULs, a dot, an é (2 bytes), a carriage return: 6 bytes a unit.
      let units = (size - 8) / 6
      return String(repeating: "\n\0.é\r", count: units)
        + String(repeating: "\0", count: size - 8 - units * 6) + String(index)
    }
    let oneTooLong = ByteBuffer(bytes: bytes(0, limit))
    let client = RemotePipelineConfiguration(maximumFrameLength: limit)
    for hop in [false, true] {
      for tooLong in [false, true] {
        let configuration = Self.configuration(prefetch: prefetch, maximumFrameLength: limit)
        let received = await Self.serve(configuration, client: client) {
          () -> AnyPublisher<ByteBuffer, Never> in
          let values = tooLong ? expected + [oneTooLong] : expected
          let base = values.publisher
          return hop
            ? base.receive(on: DispatchQueue(label: "limit")).eraseToAnyPublisher()
            : base.eraseToAnyPublisher()
        }
        let label = "prefetch \(prefetch) hop \(hop) too long \(tooLong)"
        let (values, completions) = received[0].snapshot
        #expect(values == expected, "\(label): \(values.count) values")
        if tooLong {
          guard completions.count == 1, case .failure(.serverFailed(let message)) = completions[0]
          else {
            Issue.record("\(label): \(completions)")
            continue
          }
          #expect(message.contains("maximum frame length of \(limit) bytes"), "\(message)")
        } else {
          #expect(completions == [.finished], "\(label)")
        }
      }
      let strings = texts.filter { $0.utf8.count < limit }
      let received = await Self.serve(
        Self.configuration(prefetch: prefetch, maximumFrameLength: limit), client: client
      ) { () -> AnyPublisher<String, Never> in
        hop
          ? strings.publisher.receive(on: DispatchQueue(label: "limit.s")).eraseToAnyPublisher()
          : strings.publisher.eraseToAnyPublisher()
      }
      Self.expect(received[0], strings, .finished, "strings prefetch \(prefetch) hop \(hop)")
    }
  }

  /// Values of the default 1 MiB limit (frames of exactly 1 MiB), the default `prefetch`: every
  /// byte, in order, to two clients at once.
  @Test func megabyteValuesAtTheDefaultLimit() async throws {
    let size = (1 << 20) - 1
    let expected = (0..<12).map { index in
      ByteBuffer(bytes: (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) })
    }
    let received = await Self.serve(PipelineServerConfiguration(), clients: 2) {
      expected.publisher.eraseToAnyPublisher()
    }
    for box in received {
      let (values, completions) = box.snapshot
      #expect(values == expected, "\(values.count) values")
      #expect(completions == [.finished])
    }
  }
}

// MARK: Slow synchronous sources beside fast clients (a server process of its own)

extension PrefetchRampAttackTests {
  /// More sources taking 50 ms a value (a blocking read each) than cores — four times as many —
  /// and fast clients arriving one after the other: each gets its first value and its 1,000
  /// values (the README: 0.1 s beside three such sources on 2 cores; here the bound is a net
  /// against a hang, and the times are printed).
  @Test func manySlowSourcesBesideFastClients() async throws {
    let slow = 4 * ProcessInfo.processInfo.activeProcessorCount
    let server = try await ServerProcess([
      "--count", "1000", "--sync-pause-ms", "50", "--slow-connections", "\(slow)",
    ])
    let port = try #require(server.port)
    let slowClients = (0..<slow).map { _ in RemotePipeline<Int>(port: port).slowSubscriber() }
    defer { for client in slowClients { client.cancel() } }
    #expect(
      await eventually(within: 30) { slowClients.allSatisfy { !$0.received.isEmpty } },
      "every slow client is served")
    var times: [String] = []
    for index in 0..<5 {
      let start = ContinuousClock.now
      let fast = RemotePipeline<Int>(port: port).slowSubscriber()
      #expect(await eventually(within: 30) { fast.completion != nil }, "fast client \(index)")
      let took = ContinuousClock.now - start
      #expect(fast.received == Array(0..<1000), "fast client \(index): \(fast.received.count)")
      #expect(fast.completion == .finished)
      times.append("first value \(fast.timeToFirstValue.map { "\($0)" } ?? "none"), all \(took)")
      fast.cancel()
    }
    print("beside \(slow) sources taking 50 ms a value: \(times)")
    let slowValues = slowClients.map { $0.received }
    for values in slowValues { #expect(values == Array(0..<values.count)) }
  }

  /// Sources that block 2 s before their first value (a slow connect, a cold cache), as many
  /// as the cores plus one, then flood: a fast client arriving while they block; then the slow
  /// ones' values all arrive.
  @Test func sourcesQuietThenFloodingBesideAFastClient() async throws {
    let slow = ProcessInfo.processInfo.activeProcessorCount + 1
    let server = try await ServerProcess([
      "--count", "20000", "--sync-pause-ms", "2000", "--pause-at", "0",
      "--slow-connections", "\(slow)",
    ])
    let port = try #require(server.port)
    let slowClients = (0..<slow).map { _ in RemotePipeline<Int>(port: port).slowSubscriber() }
    defer { for client in slowClients { client.cancel() } }
    #expect(await eventually(within: 30) { server.subscribed >= slow }, "subscribed")
    let start = ContinuousClock.now
    let fast = RemotePipeline<Int>(port: port).slowSubscriber()
    defer { fast.cancel() }
    #expect(await eventually(within: 30) { fast.completion != nil }, "the fast client's values")
    print(
      "beside \(slow) sources blocking 2 s before their first value: a fast client's first "
        + "value after \(fast.timeToFirstValue.map { "\($0)" } ?? "none"), all 20,000 after "
        + "\(ContinuousClock.now - start)")
    #expect(fast.received == Array(0..<20_000))
    #expect(
      await eventually(within: 60) { slowClients.allSatisfy { $0.completion != nil } },
      "the slow clients' values")
    for client in slowClients { #expect(client.received == Array(0..<20_000)) }
  }
}

// MARK: Clients that never read, values of a few kilobytes

extension PrefetchRampAttackTests {
  /// The README: a client that never reads costs the server "the write in flight, the waiting
  /// frames and the batch being filled, plus up to `prefetch` − 1 values already demanded —
  /// under 256 KiB with the defaults and short values". The default `prefetch` is now 64: with
  /// values of a few kilobytes the values demanded are 64 times that. 100 clients that never
  /// read, a server process with the defaults (the flood test's small kernel buffers), values of
  /// `size` bytes: the server's resident memory per client.
  @Test(arguments: [256, 2_048, 4_096])
  func nonReadingClientsOfKilobyteValuesCostBoundedMemory(size: Int) async throws {
    let flood = 100
    let server = try await ServerProcess([
      "--max-connections", "\(flood + 10)", "--read-timeout-ms", "600000",
      "--send-buffer", "4096", "--blob-bytes", "\(size)", "--count", "\(2_000_000 / size)",
    ])
    let port = try #require(server.port)
    let warmUp = try await RemotePipeline<ByteBuffer>(port: port).first().firstValue()
    #expect(warmUp.readableBytes == size)
    #expect(await server.idle())
    let before = try #require(server.residentKiB)
    let clients = try await NonReadingClients(count: flood, port: port, receiveBufferSize: 4096)
    #expect(await eventually(within: 120) { server.subscribed == flood + 1 })
    #expect(await server.idle(), "the server stopped once the buffers were full")
    let after = try #require(server.residentKiB)
    let perClient = (after - before) * 1024 / flood
    print(
      "\(flood) non-reading clients of \(size)-byte values: \(perClient) bytes a client "
        + "(\(before) → \(after) KiB), \(server.produced) values produced")
    #expect(perClient <= 256 * 1024, "\(size)-byte values: \(perClient) bytes a client")
    await clients.close()
  }
}

// MARK: WireFrame.write(value:into:)

extension PrefetchRampAttackTests {
  /// A value whose encoding writes part of its payload, then throws (for `fails`).
  struct Fragile: WireCodable, Equatable {
    let value: Int
    let fails: Bool
    struct Refused: Error, CustomStringConvertible {
      var description: String { "refused to encode" }
    }
    func encode(into buffer: inout ByteBuffer) throws {
      buffer.writeString("\(value)")
      if fails {
        buffer.writeString(String(repeating: "partial\n\0", count: 500))
        throw Refused()
      }
    }
    init(value: Int, fails: Bool = false) {
      self.value = value
      self.fails = fails
    }
    init(wirePayload payload: ByteBuffer) throws {
      value = try Int(wirePayload: payload)
      fails = false
    }
  }

  /// The new generic writes the bytes the closure form writes, for every standard kind of
  /// value, appended to a buffer that already holds frames (and whose reader index moved).
  @Test func writeValueWritesWhatTheClosureFormWrites() throws {
    func check<Value: WireCodable>(_ value: Value, _ label: String) throws {
      var prefix = ByteBuffer()
      WireFrame.write(.heartbeat, into: &prefix)
      WireFrame.write(.value, into: &prefix) { $0.writeString("earlier") }
      prefix.moveReaderIndex(forwardBy: 3)
      var viaGeneric = prefix
      var viaClosure = prefix
      let genericLength = try WireFrame.write(value: value, into: &viaGeneric)
      let closureLength = try WireFrame.write(.value, into: &viaClosure) {
        try value.encode(into: &$0)
      }
      #expect(genericLength == closureLength, "\(label)")
      #expect(viaGeneric == viaClosure, "\(label)")
      let decoder = WireFrameDecoderProbe(viaGeneric)
      #expect(decoder.lastPayloadLength == genericLength - 1, "\(label)")
    }
    try check(0, "0")
    try check(Int.min, "Int.min")
    try check(UInt64.max, "UInt64.max")
    try check(-0.0, "-0.0")
    try check(Double.nan, "nan")
    try check(true, "true")
    try check("", "empty string")
    try check("nul\0inside\n.\n\r\n", "controls")
    try check(String(repeating: "é", count: 70_000), "140,000 bytes")
    try check(ByteBuffer(), "empty bytes")
    try check(ByteBuffer(bytes: [0, 0, 0, 5, 2, 255]), "bytes that look like a frame")
  }

  /// Reads the frames of a buffer written by `WireFrame.write`: the last one's payload length.
  struct WireFrameDecoderProbe {
    var lastPayloadLength = -1
    init(_ buffer: ByteBuffer) {
      var bytes = buffer
      bytes.moveReaderIndex(to: 0)
      while let length = bytes.readInteger(as: UInt32.self) {
        lastPayloadLength = Int(length) - 1
        bytes.moveReaderIndex(forwardBy: Int(length))
      }
    }
  }

  /// A value whose encoding throws after writing part of its payload, at several places of the
  /// ramp, synchronously and from another thread: the values before it arrive whole, then the
  /// server's failure naming the error; nothing after it.
  @Test(arguments: [1, 3, 64, 65])
  func aValueWhoseEncodingThrowsEndsTheStreamCleanly(prefetch: Int) async throws {
    for failAt in [0, 1, 2, 3, 63, 64, 65, 1_000] {
      for hop in [false, true] {
        let received = await Self.serve(Self.configuration(prefetch: prefetch, batchBytes: 1024)) {
          () -> AnyPublisher<Fragile, Never> in
          let values = (0..<2_000).map { Fragile(value: $0, fails: $0 == failAt) }.publisher
          return hop
            ? values.receive(on: DispatchQueue(label: "fragile")).eraseToAnyPublisher()
            : values.eraseToAnyPublisher()
        }
        let label = "prefetch \(prefetch) fail at \(failAt) hop \(hop)"
        Self.expect(
          received[0], (0..<failAt).map { Fragile(value: $0) },
          .failure(.serverFailed("encoding a value failed: refused to encode")), label)
      }
    }
  }
}

// MARK: Extreme prefetch values

extension PrefetchRampAttackTests {
  /// `prefetch` as large as the configuration allows (the ramp doubles towards it; a value from
  /// another thread reserves all of it): every shape still serves every value once, in order.
  @Test(arguments: [1 << 20, Int.max / 2, Int.max])
  func aHugePrefetchServesEveryShape(prefetch: Int) async throws {
    let count = 12_000
    for (name, sources, make) in Self.demandShapes(count: count) {
      let received = await Self.serve(Self.configuration(prefetch: prefetch)) { make() }
      let label = "prefetch \(prefetch) \(name)"
      if let sources {
        H.checkPerSource(received[0], sources, label)
      } else {
        H.check(received[0], Array(0..<count), label)
      }
    }
  }
}
