import Dispatch
import Foundation
import NIOCore
import NIOPosix
import Sluice
import SluiceNIO
import Synchronization
import Testing

/// An adversary's attacks on 6136a5b: a request call of the writer's asks nothing while the
/// connection is stalled (decided under the lock with the reservation). The danger is liveness
/// (a connection that stops asking for good, values lost or duplicated), and the bound a stalled
/// connection holds. Uses the earlier suites' harness (`PrefetchRampAttackTests`,
/// `WriterDemandAttackTests`).
@Suite("Attacks on asking while stalled", .serialized)
struct StallAskAttackTests {
  typealias P = PrefetchRampAttackTests
  typealias H = WriterDemandAttackTests
  typealias Meter = WriterDemandAttackTests.Meter

  // MARK: Values

  /// Value `index`: its number, then padding to `size` bytes.
  static func value(_ index: Int, size: Int = 100) -> String {
    let head = "\(index):"
    return head + String(repeating: "x", count: max(0, size - head.utf8.count))
  }

  // MARK: A client reading in bursts

  /// Asks for `burst` values at a time; once they arrived, asks again after `pause(burst index)`
  /// milliseconds (from a queue of its own: nothing blocks the client's event loop).
  final class BurstReader<Input: Sendable>: Subscriber, Cancellable, @unchecked Sendable {
    typealias Failure = RemotePipelineError
    // Safety: everything mutable behind `lock`.
    let lock = NSLock()
    var subscription: (any Subscription)?
    var values: [Input] = []
    var completions: [Subscribers.Completion<RemotePipelineError>] = []
    var inBurst = 0
    var bursts = 0
    var stopped = false
    let burst: Int
    let pause: @Sendable (Int) -> Int
    let queue = DispatchQueue(label: "burst.reader")

    init(burst: Int, pause: @escaping @Sendable (Int) -> Int) {
      self.burst = burst
      self.pause = pause
    }

    var count: Int { lock.withLock { values.count } }
    var completed: Bool { lock.withLock { !completions.isEmpty } }
    var snapshot: ([Input], [Subscribers.Completion<RemotePipelineError>]) {
      lock.withLock { (values, completions) }
    }

    func receive(subscription: any Subscription) {
      lock.withLock { self.subscription = subscription }
      subscription.request(.max(burst))
    }

    func receive(_ input: Input) -> Subscribers.Demand {
      let wait: Int? = lock.withLock {
        values.append(input)
        inBurst += 1
        guard inBurst == burst else { return nil }
        inBurst = 0
        bursts += 1
        return pause(bursts)
      }
      guard let wait else { return .none }
      if wait <= 0 { return .max(burst) }
      queue.asyncAfter(deadline: .now() + .milliseconds(wait)) { [self] in
        guard let subscription = lock.withLock({ stopped ? nil : self.subscription }) else {
          return
        }
        subscription.request(.max(burst))
      }
      return .none
    }

    func receive(completion: Subscribers.Completion<RemotePipelineError>) {
      lock.withLock {
        completions.append(completion)
        stopped = true
      }
    }

    func cancel() {
      let subscription = lock.withLock {
        stopped = true
        return self.subscription
      }
      subscription?.cancel()
    }
  }

  /// Serves `make` with `configuration` to `clients` burst readers; waits (up to `seconds`) for
  /// every completion, then a moment for a second one. The readers, to check.
  static func serveToBurstReaders<Value: WireCodable & Sendable>(
    _ configuration: PipelineServerConfiguration, clients: Int = 1,
    client clientConfiguration: RemotePipelineConfiguration = .init(
      readSize: 512, receiveBufferSize: 4096),
    burst: Int, within seconds: Int = 90, pause: @escaping @Sendable (Int) -> Int,
    _ make: @escaping @Sendable () -> AnyPublisher<Value, Never>
  ) async -> [BurstReader<Value>] {
    let (port, task) = await P.start(configuration, make)
    var readers: [BurstReader<Value>] = []
    for _ in 0..<clients {
      let reader = BurstReader<Value>(burst: burst, pause: pause)
      RemotePipeline<Value>(port: port, configuration: clientConfiguration).subscribe(reader)
      readers.append(reader)
    }
    let started = ContinuousClock.now
    let done = await eventually(within: seconds) { readers.allSatisfy(\.completed) }
    #expect(done, "hung: received \(readers.map(\.count))")
    print("served \(readers.map(\.count)) values in \(ContinuousClock.now - started)")
    try? await Task.sleep(for: .milliseconds(20))
    for reader in readers { reader.cancel() }
    await P.stop(task)
    return readers
  }

  /// Exactly `expected`, in order, then exactly one `.finished`.
  static func check<Value: Equatable & Sendable>(
    _ reader: BurstReader<Value>, _ expected: [Value], _ label: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let (got, completions) = reader.snapshot
    if got != expected {
      let at = zip(got, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
      Issue.record(
        Comment(
          rawValue:
            "\(label): \(got.count) values of \(expected.count); first difference at "
            + "\(at.map(String.init) ?? "the end")"),
        sourceLocation: sourceLocation)
    }
    #expect(completions == [.finished], "\(label)", sourceLocation: sourceLocation)
  }

  // MARK: Sources

  /// How a source emits.
  enum Shape: String, Sendable, CustomStringConvertible {
    /// A sequence: inside the writer's request call.
    case sequence
    /// A sequence behind `receive(on:)` a serial queue.
    case hop
    /// A sequence behind `subscribe(on:)` a serial queue (requests hop; values from it).
    case subscribeOn
    /// ``Mixed``: every request's values from one of three queues, in turn.
    case threads
    /// ``Mixed``: three values inside the request, the rest from a queue (in turn).
    case half
    /// ``Mixed``: every third request blocks 2 ms inside `request`, then emits inside it.
    case blocking
    /// ``Mixed``: the modes in turn, request after request.
    case rotate
    /// A subject fed from three threads (one lock for the order), behind an unbounded buffer.
    case subject

    var description: String { rawValue }
  }

  /// `0..<count` mapped by `transform`, emitted as `shape` says, with `meter` measuring the
  /// demand at the writer's side and `produced` counting values.
  static func source<Value: Sendable>(
    _ shape: Shape, count: Int, meter: Meter? = nil,
    _ transform: @escaping @Sendable (Int) -> Value
  ) -> AnyPublisher<Value, Never> {
    let base: AnyPublisher<Int, Never>
    switch shape {
    case .sequence:
      base = (0..<count).publisher.eraseToAnyPublisher()
    case .hop:
      base = (0..<count).publisher.eraseToAnyPublisher()
        .receive(on: DispatchQueue(label: "stall.hop")).eraseToAnyPublisher()
    case .subscribeOn:
      base = (0..<count).publisher.eraseToAnyPublisher()
        .subscribe(on: DispatchQueue(label: "stall.subscribeOn")).eraseToAnyPublisher()
    case .threads:
      base = Mixed(count: count, mode: .threads).eraseToAnyPublisher()
    case .half:
      base = Mixed(count: count, mode: .half).eraseToAnyPublisher()
    case .blocking:
      base = Mixed(count: count, mode: .blocking).eraseToAnyPublisher()
    case .rotate:
      base = Mixed(count: count, mode: .rotate).eraseToAnyPublisher()
    case .subject:
      base = fedSubject(count: count)
    }
    return base.map(transform)
      .handleEvents(
        receiveOutput: { _ in meter?.value() },
        receiveRequest: { meter?.request($0) }
      )
      .eraseToAnyPublisher()
  }

  /// A subject fed 0..<count from three threads (sending under one lock, so in order), started
  /// by the first request that reaches the buffer; the buffer asks the subject for everything.
  static func fedSubject(count: Int) -> AnyPublisher<Int, Never> {
    let subject = PassthroughSubject<Int, Never>()
    let started = Atomic<Bool>(false)
    let feeder = Feeder()
    return subject.buffer(size: count + 1, prefetch: .byRequest, whenFull: .dropNewest)
      .handleEvents(
        receiveCancel: { feeder.stop.store(true, ordering: .relaxed) },
        receiveRequest: { _ in
          guard
            started.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
          else { return }
          for thread in 0..<3 {
            Thread.detachNewThread {
              var sent = 0
              while !feeder.stop.load(ordering: .relaxed) {
                let done: Bool = feeder.lock.withLock {
                  guard feeder.next < count else { return true }
                  subject.send(feeder.next)
                  feeder.next += 1
                  if feeder.next == count { subject.send(completion: .finished) }
                  return false
                }
                if done { return }
                sent += 1
                if sent % (50 + 13 * thread) == 0 { usleep(200) }
              }
            }
          }
        }
      )
      .eraseToAnyPublisher()
  }

  final class Feeder: @unchecked Sendable {
    // Safety: `next` behind `lock`.
    let lock = NSLock()
    var next = 0
    let stop = Atomic<Bool>(false)
  }

  /// A hand-written source of `0..<count` that obeys demand and emits in one of several ways,
  /// request by request: inside `request` (on the requesting thread), from one of three serial
  /// queues in turn (several threads), part inside and the rest from a queue, or after blocking
  /// inside `request`. Signals are serial: one drain at a time (`emitting`).
  struct Mixed: Publisher, Sendable {
    typealias Output = Int
    typealias Failure = Never
    enum Mode: Sendable { case threads, half, blocking, rotate }
    let count: Int
    let mode: Mode

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
      subscriber.receive(subscription: Inner(downstream: AnySubscriber(subscriber), source: self))
    }

    final class Inner: Subscription, @unchecked Sendable {
      // Safety: the counters behind `lock`; signals are serial (one drain at a time).
      let lock = NSLock()
      var owed = 0
      var next = 0
      var done = false
      var emitting = false
      var requests = 0
      let downstream: AnySubscriber<Int, Never>
      let source: Mixed
      let queues = (0..<3).map { DispatchQueue(label: "mixed.\($0)") }

      init(downstream: AnySubscriber<Int, Never>, source: Mixed) {
        self.downstream = downstream
        self.source = source
      }

      func request(_ demand: Subscribers.Demand) {
        let (go, index) = lock.withLock { () -> (Bool, Int) in
          owed = Swift.min(1 << 40, owed + (demand.max ?? 1 << 40))
          requests += 1
          if emitting || done { return (false, requests) }
          emitting = true
          return (true, requests)
        }
        var mode = source.mode
        if mode == .rotate { mode = [.threads, .half, .blocking][index % 3] }
        if mode == .blocking, index % 3 == 0 { usleep(2_000) }  // a blocking read
        guard go else { return }
        let queue = queues[index % 3]
        switch mode {
        case .threads:
          queue.async { self.drain(limit: .max, then: nil) }
        case .half:
          drain(limit: 3, then: queue)
        case .blocking, .rotate:
          drain(limit: .max, then: nil)
        }
      }

      /// Emits what is owed; after `limit` values, hands the rest to `then`.
      func drain(limit: Int, then queue: DispatchQueue?) {
        var emitted = 0
        while true {
          if emitted == limit, let queue {
            queue.async { self.drain(limit: .max, then: nil) }
            return
          }
          let step: Int? = lock.withLock {
            if done {
              emitting = false
              return nil
            }
            if next == source.count {
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
          guard let step else { return }
          if step == -1 {
            downstream.receive(completion: .finished)
            return
          }
          let more = downstream.receive(step)
          emitted += 1
          if more > 0 { lock.withLock { owed = Swift.min(1 << 40, owed + (more.max ?? 1 << 40)) } }
        }
      }

      func cancel() { lock.withLock { done = true } }
    }
  }
}

extension StallAskAttackTests {
  /// Waits until the values produced have not moved for half a second (15 s at most).
  static func idle(_ meter: Meter) async {
    var last = -1
    var quiet = 0
    let deadline = ContinuousClock.now + .seconds(15)
    while quiet < 5, ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(100))
      let now = meter.sentCount
      quiet = now == last ? quiet + 1 : 0
      last = now
    }
  }
}

// MARK: Liveness and exactness under readers that stall the server

extension StallAskAttackTests {
  static let allShapes: [Shape] = [
    .sequence, .hop, .subscribeOn, .threads, .half, .blocking, .rotate, .subject,
  ]

  /// The full matrices (about 8 minutes on two cores) with `SLUICE_NIO_FULL_ATTACKS=1`; by
  /// default (CI) a cross-section of the light ones, and none of the three that keep both cores
  /// busy (bursty readers, values at the frame limit, thirty connections at once): run beside
  /// the rest of the package's tests they starved its timing checks (a heartbeat every 100 ms
  /// against a 600 ms read timeout), and a reader of `prefetch` 1 through a queue hop took 38 s
  /// for 3,000 values.
  static let full = ProcessInfo.processInfo.environment["SLUICE_NIO_FULL_ATTACKS"] != nil

  /// `all` with `SLUICE_NIO_FULL_ATTACKS`, else `some`.
  static func pick<T>(_ all: [T], _ some: [T]) -> [T] { full ? all : some }

  /// Every shape of source, every `prefetch`, batches of 1 byte, 64 bytes (under a frame) and
  /// the default: a client reading in bursts of 37 with pauses (now and then a long one, so the
  /// server stalls and goes idle): every value once, in order, then one completion; the
  /// pipeline never owed more than `prefetch`.
  @Test(
    .enabled(if: full), arguments: allShapes, [1, 2, 3, 16, 64, 1000])
  func burstyReaderGetsEveryValueOnce(shape: Shape, prefetch: Int) async throws {
    let count = 3_000
    let expected = (0..<count).map { Self.value($0) }
    for batchBytes in [1, 64, 16 * 1024] {
      let meter = Meter()
      let readers = await Self.serveToBurstReaders(
        P.configuration(prefetch: prefetch, batchBytes: batchBytes, sendBufferSize: 4096),
        burst: 37, pause: { $0 % 20 == 0 ? 60 : $0 % 3 }
      ) { Self.source(shape, count: count, meter: meter) { Self.value($0) } }
      let label = "\(shape) prefetch \(prefetch) batches \(batchBytes)"
      Self.check(readers[0], expected, label)
      #expect(meter.max <= prefetch, "\(label): \(meter.max) owed at once")
    }
  }

  /// A client that reads 300 values, stops for 250 ms (the server stalls, then idles), and
  /// again, five times, then reads the rest: every value once, in order, completed.
  @Test(
    arguments: pick(allShapes, [.sequence, .hop, .blocking]), pick([1, 3, 16, 64, 1000], [3, 64]))
  func stopAndResumeReading(shape: Shape, prefetch: Int) async throws {
    let count = 2_000
    let expected = (0..<count).map { Self.value($0, size: 300) }
    for batchBytes in [64, 16 * 1024] {
      let meter = Meter()
      let readers = await Self.serveToBurstReaders(
        P.configuration(prefetch: prefetch, batchBytes: batchBytes, sendBufferSize: 4096),
        burst: 300, pause: { $0 <= 5 ? 250 : 0 }
      ) { Self.source(shape, count: count, meter: meter) { Self.value($0, size: 300) } }
      let label = "\(shape) prefetch \(prefetch) batches \(batchBytes)"
      Self.check(readers[0], expected, label)
      #expect(meter.max <= prefetch, "\(label): \(meter.max) owed at once")
    }
  }

  /// A client reading one value at a time, each after a request of its own: the server is
  /// stalled and lifted over and over, a write completing while request calls run.
  @Test(arguments: [Shape.sequence, .hop, .threads, .blocking, .rotate, .subject], [1, 2, 16])
  func oneValueAtATime(shape: Shape, prefetch: Int) async throws {
    let count = 800
    let expected = (0..<count).map { Self.value($0, size: 500) }
    let meter = Meter()
    let readers = await Self.serveToBurstReaders(
      P.configuration(prefetch: prefetch, batchBytes: 1, sendBufferSize: 2048),
      client: .init(readSize: 256, receiveBufferSize: 2048),
      burst: 1, pause: { $0 % 50 == 0 ? 1 : 0 }
    ) { Self.source(shape, count: count, meter: meter) { Self.value($0, size: 500) } }
    let label = "\(shape) prefetch \(prefetch)"
    Self.check(readers[0], expected, label)
    #expect(meter.max <= prefetch, "\(label): \(meter.max) owed at once")
  }

  /// Values whose frames are the maximum frame length (64 KiB) or just under, batches of one
  /// byte, the default and larger than a value: a client reading three at a time with pauses.
  @Test(
    .enabled(if: full), arguments: [Shape.sequence, .hop, .threads, .half, .subject], [1, 2, 3, 16])
  func valuesAtTheFrameLimitToABurstyReader(shape: Shape, prefetch: Int) async throws {
    let limit = 64 * 1024
    let count = 60
    // A frame is the payload plus a 5-byte header: the largest value is `limit - 5` bytes.
    let size: @Sendable (Int) -> Int = { limit - 5 - ($0 % 3) }
    let expected = (0..<count).map { Self.value($0, size: size($0)) }
    for batchBytes in [1, 16 * 1024, 1 << 20] {
      let meter = Meter()
      let configuration = P.configuration(
        prefetch: prefetch, batchBytes: batchBytes, maximumFrameLength: limit,
        sendBufferSize: 8192)
      let readers = await Self.serveToBurstReaders(
        configuration,
        client: .init(maximumFrameLength: limit, readSize: 4096, receiveBufferSize: 8192),
        burst: 3, pause: { $0 % 4 }
      ) { Self.source(shape, count: count, meter: meter) { Self.value($0, size: size($0)) } }
      let label = "\(shape) prefetch \(prefetch) batches \(batchBytes)"
      let (got, completions) = readers[0].snapshot
      #expect(got == expected, "\(label): \(got.count) values of \(count)")
      #expect(completions == [.finished], "\(label)")
      #expect(meter.max <= prefetch, "\(label): \(meter.max) owed at once")
    }
  }

  /// Thirty connections at once, each reading in bursts: every one gets every value once.
  @Test(
    .enabled(if: full), arguments: [Shape.sequence, .hop, .threads, .rotate, .subject], [1, 3, 64])
  func manyConnectionsAtOnce(shape: Shape, prefetch: Int) async throws {
    let count = 1_000
    let expected = (0..<count).map { Self.value($0) }
    let meter = Meter()
    let readers = await Self.serveToBurstReaders(
      P.configuration(prefetch: prefetch, batchBytes: 64, sendBufferSize: 4096), clients: 30,
      burst: 50, pause: { $0 % 5 == 0 ? 40 : 1 }
    ) { Self.source(shape, count: count, meter: meter) { Self.value($0) } }
    for (index, reader) in readers.enumerated() {
      Self.check(reader, expected, "\(shape) prefetch \(prefetch) client \(index)")
    }
  }
}

// MARK: Clients that go away mid-stall

extension StallAskAttackTests {
  /// Clients that never read until their connections stall, then disconnect: every pipeline is
  /// cancelled, and the server still serves a reading client every value.
  @Test(
    arguments: pick(
      [Shape.sequence, .hop, .threads, .half, .blocking, .subject],
      [
        .sequence, .hop, .blocking,
      ]))
  func clientsDisconnectingMidStall(shape: Shape) async throws {
    let meter = Meter()
    let cancelled = Atomic<Int>(0)
    let expected = (0..<2_000).map { Self.value($0, size: 1_000) }
    let (port, task) = await P.start(
      P.configuration(prefetch: 16, batchBytes: 64, sendBufferSize: 4096)
    ) { () -> AnyPublisher<String, Never> in
      Self.source(shape, count: 2_000, meter: meter) { Self.value($0, size: 1_000) }
        .handleEvents(receiveCancel: { cancelled.add(1, ordering: .relaxed) })
        .eraseToAnyPublisher()
    }
    let clients = try await NonReadingClients(count: 8, port: port, receiveBufferSize: 4096)
    #expect(await eventually(within: 10) { meter.sentCount > 0 })
    await Self.idle(meter)
    await clients.close()
    #expect(
      await eventually(within: 10) { cancelled.load(ordering: .relaxed) == 8 },
      "\(shape): \(cancelled.load(ordering: .relaxed)) of 8 pipelines cancelled")
    let reader = BurstReader<String>(burst: 100, pause: { $0 % 2 })
    RemotePipeline<String>(
      port: port, configuration: .init(readSize: 1024, receiveBufferSize: 4096)
    )
    .subscribe(reader)
    #expect(await eventually(within: 20) { reader.completed }, "\(shape): \(reader.count)")
    Self.check(reader, expected, "\(shape) after the disconnects")
    reader.cancel()
    await P.stop(task)
  }
}

// MARK: The bound

extension StallAskAttackTests {
  /// A client that never reads, then reads a little at a time (stalls lifted, stalls again:
  /// many lifts in a row), then stops for good — three times: once the server is idle, what it
  /// holds (produced minus what the kernel holds and what the client read) stays under the
  /// README's bound, and the pipeline never owed more than `prefetch`.
  @Test(
    arguments: pick(
      [Shape.sequence, .hop, .subscribeOn, .threads, .half, .blocking, .rotate],
      [.hop, .threads, .rotate]),
    pick([3, 16, 64], [16, 64]))
  func stalledConnectionBoundAcrossManyLifts(shape: Shape, prefetch: Int) async throws {
    for batchBytes in [64, 16 * 1024] {
      let frame = 1_005
      let meter = Meter()
      let (port, task) = await P.start(
        P.configuration(prefetch: prefetch, batchBytes: batchBytes, sendBufferSize: 4096)
      ) { () -> AnyPublisher<String, Never> in
        Self.source(shape, count: 1_000_000, meter: meter) {
          String(repeating: Character(String($0 % 10)), count: 1_000)
        }
      }
      let clients = try await NonReadingClients(count: 1, port: port, receiveBufferSize: 4096)
      let channel = clients.channels[0]
      let clientPort = try #require(channel.localAddress?.port)
      let counter = P.ByteCounter()
      try await channel.pipeline.addHandler(counter).get()
      #expect(await eventually(within: 10) { meter.sentCount > 0 })
      var worst = 0.0
      for round in 0..<3 {
        if round > 0 {
          for index in 0..<(round == 1 ? 30 : 60) {
            channel.read()
            try await Task.sleep(for: .milliseconds(index % 3 == 0 ? 0 : 3))
          }
        }
        await Self.idle(meter)
        let kernel = try #require(P.kernelBytes(serverPort: port, clientPort: clientPort))
        let values = meter.sentCount
        let held = values * frame - kernel - counter.bytes.load(ordering: .relaxed)
        let bound = 7 * max(batchBytes, frame) + 3 * frame + 2 * prefetch * frame
        let label =
          "\(shape) prefetch \(prefetch) batches \(batchBytes) round \(round): produced \(values), "
          + "held \(held) bytes (\(Double(held) / Double(frame)) values), bound \(bound)"
        print(label)
        worst = max(worst, Double(held) / Double(frame))
        #expect(held <= bound, "\(label)")
      }
      #expect(meter.max <= prefetch, "\(shape) prefetch \(prefetch): \(meter.max) owed at once")
      await clients.close()
      await P.stop(task)
    }
  }
}
