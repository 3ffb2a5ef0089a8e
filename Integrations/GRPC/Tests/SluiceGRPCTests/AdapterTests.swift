import Foundation
import GRPCCore
import Sluice
import Synchronization
import Testing

@testable import SluiceGRPC

/// The adapters without a network: a recording writer in place of gRPC's, an async stream in
/// place of a request stream.
@Suite("SluiceGRPC adapters, in process")
struct AdapterTests {
  /// A writer that records what it is given and suspends each write until released, as an
  /// RPC's writer does while the peer's flow-control window is closed; like grpc-swift's (NIO's
  /// `NIOAsyncWriter`), a suspended write throws `CancellationError` when its task is cancelled.
  final class GatedWriter: RPCWriterProtocol, Sendable {
    let written = Observed([Int]())
    /// Writes that found the gate closed (announced as they block).
    let blocked = Observed(0)
    private let gate = Mutex<(open: Bool, waiting: [Int: CheckedContinuation<Void, any Error>])>(
      (false, [:]))
    private let ids = Atomic(0)

    func write(_ element: Int) async throws {
      let id = ids.add(1, ordering: .relaxed).newValue
      try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
          let mustWait = gate.withLock { gate in
            if gate.open || Task.isCancelled { return false }
            gate.waiting[id] = continuation
            return true
          }
          if mustWait {
            blocked.update { $0 += 1 }
          } else if Task.isCancelled {
            continuation.resume(throwing: CancellationError())
          } else {
            continuation.resume()
          }
        }
      } onCancel: {
        gate.withLock { $0.waiting.removeValue(forKey: id) }?.resume(throwing: CancellationError())
      }
      written.update { $0.append(element) }
    }

    func write(contentsOf elements: some Sequence<Int>) async throws {
      for element in elements { try await write(element) }
    }

    /// Lets every write through from now on.
    func release() {
      let waiting = gate.withLock { gate in
        gate.open = true
        defer { gate.waiting = [:] }
        return gate.waiting.values
      }
      for continuation in waiting { continuation.resume() }
    }
  }

  @Test(arguments: [1, 4, 16])
  func aSuspendedWriterStopsTheDemandAtThePrefetch(prefetch: Int) async throws {
    let emitted = Observed(0)
    let writer = GatedWriter()
    let writing = Task {
      let source = (0..<10_000).publisher.handleEvents(receiveOutput: { _ in
        emitted.update { $0 += 1 }
      })
      try await RPCWriter(wrapping: writer).write(source, prefetch: prefetch)
    }
    // The first write blocks; the bridge holds what it was asked for ahead.
    #expect(await emitted.wait { $0 >= prefetch })
    try await Task.sleep(for: .milliseconds(50))  // room for a demand leak to show
    #expect(
      emitted.value <= prefetch + 1, "prefetch values ahead of the write, and the one written")
    writer.release()
    try await writing.value
    #expect(writer.written.value == Array(0..<10_000))
  }

  @Test func aFailureBecomesTheMappedRPCError() async throws {
    struct Refused: Error {}
    let writer = GatedWriter()
    writer.release()
    @Sendable func source() -> some Publisher<Int, any Error> {
      (0..<10).publisher.tryMap { value in
        if value == 3 { throw Refused() }
        return value
      }
    }
    let mapping = RPCErrorMapping { error in
      error is Refused
        ? RPCError(code: .permissionDenied, message: "refused") : RPCErrorMapping.default.map(error)
    }
    await #expect(throws: RPCError(code: .permissionDenied, message: "refused")) {
      try await RPCWriter(wrapping: writer).write(source(), errorMapping: mapping)
    }
    #expect(writer.written.value == [0, 1, 2])
    await #expect(throws: RPCError(code: .unknown, message: "The pipeline failed.")) {
      try await RPCWriter(wrapping: writer).write(
        (0..<10).publisher.tryMap { _ -> Int in throw Refused() })
    }
  }

  /// A publisher that breaks the rules: each request makes it send a hundred times what was
  /// asked for, until cancelled.
  struct Flooding: Publisher {
    typealias Output = Int
    typealias Failure = Never
    let cancelled: Observed<Bool>

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
      subscriber.receive(subscription: Flood(subscriber, cancelled))
    }

    final class Flood<S: Subscriber>: Subscription, @unchecked Sendable
    where S.Input == Int, S.Failure == Never {
      // Safety: a test's publisher, requested and cancelled from the writer's task and the
      // bridge; `next` is touched inside request calls only, which the bridge makes serially.
      let subscriber: S
      let cancelled: Observed<Bool>
      var next = 0
      init(_ subscriber: S, _ cancelled: Observed<Bool>) {
        self.subscriber = subscriber
        self.cancelled = cancelled
      }
      func request(_ demand: Subscribers.Demand) {
        for _ in 0..<(demand.max ?? 1) * 100 {
          if cancelled.value { return }
          _ = subscriber.receive(next)
          next += 1
        }
      }
      func cancel() { cancelled.update { $0 = true } }
    }
  }

  @Test func aPublisherSendingBeyondItsDemandIsCancelledAndTheRPCFails() async throws {
    let cancelled = Observed(false)
    let writer = GatedWriter()
    writer.release()
    await #expect {
      try await RPCWriter(wrapping: writer).write(Flooding(cancelled: cancelled), prefetch: 4)
    } throws: { error in
      guard let error = error as? RPCError else { return false }
      return error.code == .internalError && error.message.hasPrefix("API Violation:")
    }
    #expect(cancelled.value, "the publisher saw cancel()")
    #expect(writer.written.value == [0, 1, 2, 3], "what was asked for is written, nothing more")
  }

  @Test func cancellingTheWritingTaskCancelsThePublisher() async throws {
    let cancelled = Observed(false)
    let writer = GatedWriter()  // never released: the first write blocks
    let writing = Task {
      try await RPCWriter(wrapping: writer).write(
        (0...).publisher.handleEvents(receiveCancel: { cancelled.update { $0 = true } }))
    }
    #expect(await writer.blocked.wait { $0 > 0 })
    writing.cancel()
    #expect(await cancelled.wait { $0 }, "the publisher saw cancel()")
    writer.release()
    await #expect(throws: (any Error).self) { try await writing.value }
  }

  @Test func theRPCsCancellationCancelsThePublisher() async throws {
    let cancelled = Observed(false)
    let writer = GatedWriter()
    await withServerContextRPCCancellationHandle { handle in
      let writing = Task {
        try await RPCWriter(wrapping: writer).write(
          (0...).publisher.handleEvents(receiveCancel: { cancelled.update { $0 = true } }))
      }
      #expect(await writer.blocked.wait { $0 > 0 })
      handle.cancel()  // what gRPC does when the client resets the stream or the deadline passes
      #expect(await cancelled.wait { $0 }, "the publisher saw cancel()")
      writer.release()
      await #expect(throws: RPCError.self) { try await writing.value }
    }
  }

  @Test func theRequestStreamIsReadOnDemandAndOnce() async throws {
    let (stream, continuation) = AsyncThrowingStream<Int, any Error>.makeStream()
    for value in 0..<5 { continuation.yield(value) }
    continuation.finish()
    let publisher = RPCRequestPublisher(RPCAsyncSequence(wrapping: stream))
    #expect(try await publisher.allValues() == [0, 1, 2, 3, 4])
    await #expect(throws: RPCError.self) { try await publisher.allValues() }
    do {
      _ = try await publisher.allValues()
    } catch let error as RPCError {
      #expect(error.code == .failedPrecondition)
    }
  }

  @Test func aRequestStreamErrorArrivesAsAnRPCError() async throws {
    struct Reset: Error {}
    let (stream, continuation) = AsyncThrowingStream<Int, any Error>.makeStream()
    continuation.yield(1)
    continuation.finish(throwing: Reset())
    let subscriber = TestSubscriber<Int>()
    RPCRequestPublisher(RPCAsyncSequence(wrapping: stream)).subscribe(subscriber)
    #expect(await subscriber.waitForCompletion())
    #expect(subscriber.values == [1])
    #expect(subscriber.failureCode == .unknown)
  }

  /// A completion needs no demand (Combine): a subscriber that asked for exactly the stream's
  /// messages gets its end too. Until the fourth adversary round both publishers read only for
  /// demand, and such a subscriber never completed.
  @Test(arguments: [false, true])
  func theRequestStreamsEndReachesASubscriberWithoutDemand(failing: Bool) async throws {
    struct Reset: Error {}
    let (stream, continuation) = AsyncThrowingStream<Int, any Error>.makeStream()
    for value in 0..<5 { continuation.yield(value) }
    continuation.finish(throwing: failing ? Reset() : nil)
    let subscriber = TestSubscriber<Int>(initial: .max(5))
    RPCRequestPublisher(RPCAsyncSequence(wrapping: stream)).subscribe(subscriber)
    #expect(await subscriber.waitForCompletion(timeout: .seconds(10)))
    #expect(subscriber.values == [0, 1, 2, 3, 4])
    #expect(subscriber.failureCode == (failing ? .unknown : nil))
    #expect(subscriber.record.value.late == 0)
  }

  @Test(arguments: [false, true])
  func theResponseStreamsEndReachesASubscriberWithoutDemand(failing: Bool) async throws {
    typealias Part = StreamingClientResponse<Int>.Contents.BodyPart
    let (parts, continuation) = AsyncThrowingStream<Part, any Error>.makeStream()
    for value in 0..<5 { continuation.yield(.message(value)) }
    if failing {
      continuation.finish(throwing: RPCError(code: .dataLoss, message: "lost"))
    } else {
      continuation.yield(.trailingMetadata([:]))
      continuation.finish()
    }
    let response = StreamingClientResponse<Int>(
      metadata: [:], bodyParts: RPCAsyncSequence(wrapping: parts))
    let publisher = RPCResponsePublisher<Int> { onResponse in try await onResponse(response) }
    let subscriber = TestSubscriber<Int>(initial: .max(5))
    publisher.subscribe(subscriber)
    #expect(await subscriber.waitForCompletion(timeout: .seconds(10)))
    #expect(subscriber.values == [0, 1, 2, 3, 4])
    #expect(subscriber.failureCode == (failing ? .dataLoss : nil))
    // Read ahead, not delivered ahead: with demand for 2, the third message waits.
    let (more, moreContinuation) = AsyncThrowingStream<Part, any Error>.makeStream()
    for value in 0..<5 { moreContinuation.yield(.message(value)) }
    let held = RPCResponsePublisher<Int> { onResponse in
      try await onResponse(
        StreamingClientResponse<Int>(metadata: [:], bodyParts: RPCAsyncSequence(wrapping: more)))
    }
    let twice = TestSubscriber<Int>(initial: .max(2))
    held.subscribe(twice)
    #expect(await twice.wait(forCount: 2, timeout: .seconds(10)))
    try await Task.sleep(for: .milliseconds(50))
    #expect(twice.values == [0, 1])
    twice.request(.max(3))
    #expect(await twice.wait(forCount: 5, timeout: .seconds(10)))
    moreContinuation.finish()
    #expect(await twice.waitForCompletion(timeout: .seconds(10)))
    #expect(twice.values == [0, 1, 2, 3, 4] && twice.failureCode == nil)
  }

  @Test func theSingleResponseIsTheOneValue() async throws {
    let one = await ServerResponse(singleValueOf: Just(42))
    #expect(try one.message == 42)
    let none = await ServerResponse(singleValueOf: Empty<Int, Never>())
    #expect(throws: RPCError.self) { try none.message }
    let two = await ServerResponse(singleValueOf: [1, 2].publisher)
    #expect(throws: RPCError.self) { try two.message }
  }
}
