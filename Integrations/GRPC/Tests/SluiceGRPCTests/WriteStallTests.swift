import Foundation
import GRPCCore
import Sluice
import Synchronization
import Testing

@testable import SluiceGRPC

/// The write-stall watch's state machine, event by event (no tasks, no clock).
@Suite("WriteStallState")
struct WriteStallStateTests {
  typealias Action = WriteStallState.WatchAction
  let start = ContinuousClock.now
  func at(_ milliseconds: Int) -> ContinuousClock.Instant {
    start.advanced(by: .milliseconds(milliseconds))
  }

  /// The watch wakes at `milliseconds`: what it does.
  func woke(_ state: inout WriteStallState, at milliseconds: Int) -> Action {
    state.watchWoke(at: at(milliseconds))
  }

  @Test func idleTheWatchSleepsATimeout() {
    var state = WriteStallState(timeout: .milliseconds(100))
    let first = woke(&state, at: 0)
    let second = woke(&state, at: 100)
    #expect(first == .sleep(until: at(100)))
    #expect(second == .sleep(until: at(200)), "no write: never fires")
  }

  @Test func aWriteIsDueATimeoutAfterItStarted() {
    var state = WriteStallState(timeout: .milliseconds(100))
    let idle = woke(&state, at: 0)
    state.writeStarted(at: at(60))
    let early = woke(&state, at: 100)
    let due = woke(&state, at: 160)
    let later = woke(&state, at: 300)
    let stalled = state.loopEnded()
    #expect(idle == .sleep(until: at(100)))
    #expect(early == .sleep(until: at(160)), "the write's own deadline")
    #expect(due == .fire)
    #expect(later == .stop, "fires once")
    #expect(stalled, "the loop learns that the watch fired")
  }

  @Test func eachWriteHasItsOwnTimeoutNotTheirSum() {
    var state = WriteStallState(timeout: .milliseconds(100))
    for write in 0..<10 {
      state.writeStarted(at: at(write * 90))
      let action = woke(&state, at: write * 90 + 89)
      #expect(action == .sleep(until: at(write * 90 + 100)))
      state.writeEnded()
    }
    let idle = woke(&state, at: 900)
    let stalled = state.loopEnded()
    #expect(idle == .sleep(until: at(1_000)), "900 ms of writes, none overdue: idle")
    #expect(!stalled)
  }

  @Test func afterTheLoopEndedTheWatchNeverFires() {
    var state = WriteStallState(timeout: .milliseconds(100))
    state.writeStarted(at: at(0))
    let stalled = state.loopEnded()
    let late = woke(&state, at: 1_000)
    state.writeStarted(at: at(1_000))
    let later = woke(&state, at: 2_000)
    let again = state.loopEnded()
    #expect(!stalled)
    #expect(late == .stop)
    #expect(later == .stop)
    #expect(!again, "idempotent")
  }
}

/// The write-stall timeout of the adapters that write a publisher to an RPC's writer, without a
/// network: writers that suspend as grpc-swift's does while the peer's window is closed.
@Suite("Write-stall timeout, in process")
struct WriteStallTests {
  typealias GatedWriter = AdapterTests.GatedWriter

  /// A writer whose every write suspends for `pause` (a peer that takes one message per
  /// `pause`); cancelled, a write throws `CancellationError`, as grpc-swift's does.
  final class PausingWriter: RPCWriterProtocol, Sendable {
    let pause: Duration
    let written = Observed([Int]())
    init(pause: Duration) { self.pause = pause }

    func write(_ element: Int) async throws {
      try await Task.sleep(for: pause)
      written.update { $0.append(element) }
    }

    func write(contentsOf elements: some Sequence<Int>) async throws {
      for element in elements { try await write(element) }
    }
  }

  /// An object the pipeline's closures hold: reports its release.
  final class Token: Sendable {
    let released: Observed<Bool>
    init(_ released: Observed<Bool>) { self.released = released }
    deinit { released.update { $0 = true } }
  }

  /// What the writing task saw: the error it threw, and whether it was cancelled afterwards.
  struct Outcome: Sendable {
    var error: (any Error)?
    var taskCancelled: Bool
    var rpcError: RPCError? { error as? RPCError }
  }

  static func write(
    _ publisher: sending some Publisher<Int, Never>, to writer: some RPCWriterProtocol<Int>,
    prefetch: Int = 16, writeStallTimeout: Duration?
  ) async -> Outcome {
    do {
      try await RPCWriter(wrapping: writer).write(
        publisher, prefetch: prefetch, writeStallTimeout: writeStallTimeout)
      return Outcome(error: nil, taskCancelled: Task.isCancelled)
    } catch {
      return Outcome(error: error, taskCancelled: Task.isCancelled)
    }
  }

  @Test func aWriteSuspendedPastTheTimeoutEndsTheWritingAndReleasesThePipeline() async throws {
    let cancelled = Observed(0)
    let writer = GatedWriter()  // never released: the peer takes nothing
    let released = Observed(false)
    let start = ContinuousClock.now
    let writing = Task {
      let token = Token(released)
      return await Self.write(
        (0...).publisher
          .handleEvents(receiveCancel: { cancelled.update { $0 += 1 } })
          .map { [token] value in withExtendedLifetime(token) { value } },
        to: writer, writeStallTimeout: .milliseconds(500))
    }
    let outcome = await writing.value
    let stalledFor = ContinuousClock.now - start
    #expect(writer.blocked.value == 1, "one write blocked")
    print("a write blocked, timeout 500 ms: the writing ended \(stalledFor) after it began")
    #expect(outcome.rpcError?.code == .deadlineExceeded)
    #expect(outcome.rpcError?.message.hasPrefix("Write stall: the peer took no response") == true)
    #expect(outcome.taskCancelled, "the calling task (on a server, the RPC's) is cancelled")
    #expect(stalledFor >= .milliseconds(500), "not before the timeout")
    #expect(stalledFor < .seconds(10), "the timeout and some slack, not a hang")
    #expect(cancelled.value == 1, "the pipeline saw cancel() once")
    #expect(await released.wait { $0 }, "the pipeline is released")
    writer.release()
    #expect(writer.written.value.count <= 1, "nothing written after the stall but the blocked")
  }

  @Test func aStreamingResponseEndsWithTheStallAndCancelsItsPublisher() async throws {
    let cancelled = Observed(false)
    let response = StreamingServerResponse(
      publishing: (0...).publisher.handleEvents(receiveCancel: { cancelled.update { $0 = true } }),
      writeStallTimeout: .milliseconds(200))
    let writer = GatedWriter()
    let contents = try response.accepted.get()
    let outcome = await Task {
      do {
        _ = try await contents.producer(RPCWriter(wrapping: writer))
        return Outcome(error: nil, taskCancelled: Task.isCancelled)
      } catch {
        return Outcome(error: error, taskCancelled: Task.isCancelled)
      }
    }.value
    #expect(outcome.rpcError?.code == .deadlineExceeded, "the RPC's status")
    #expect(outcome.taskCancelled, "the transport resets the stream of a cancelled RPC task")
    #expect(cancelled.value)
  }

  /// Every write waits 100 ms for the peer: 4 s waiting in all, longer than the timeout, but
  /// never one write as long as the timeout: the stream is not cut. (The timeout is 30 pauses:
  /// at 10, a CI rehearsal with the machine overloaded by builds saw one 100 ms sleep end
  /// after more than 1 s, and the stream cut.)
  @Test func aSlowReaderThatTakesSomethingWithinEveryTimeoutIsNeverCut() async throws {
    let cancelled = Observed(false)
    let writer = PausingWriter(pause: .milliseconds(100))
    let start = ContinuousClock.now
    let outcome = await Task {
      await Self.write(
        (0..<40).publisher.handleEvents(receiveCancel: { cancelled.update { $0 = true } }),
        to: writer, prefetch: 1, writeStallTimeout: .seconds(3))
    }.value
    let elapsed = ContinuousClock.now - start
    #expect(outcome.error == nil)
    #expect(!outcome.taskCancelled)
    #expect(writer.written.value == Array(0..<40))
    #expect(!cancelled.value)
    #expect(elapsed >= .seconds(3), "longer in all than the timeout")
  }

  /// Only a suspended write is timed: a publisher that takes 3 timeouts to deliver is not a
  /// stall.
  @Test func aPublisherSlowToDeliverIsNotAStall() async throws {
    let cancelled = Observed(false)
    let writer = GatedWriter()
    writer.release()
    let outcome = await Task {
      await Self.write(
        AsyncProducer<Int, Never> { sender in
          for value in 0..<3 {
            try? await Task.sleep(for: .milliseconds(300))
            guard await sender.send(value) else { return }
          }
        }
        .handleEvents(receiveCancel: { cancelled.update { $0 = true } }),
        to: writer, writeStallTimeout: .milliseconds(100))
    }.value
    #expect(outcome.error == nil)
    #expect(writer.written.value == [0, 1, 2])
    #expect(!cancelled.value)
  }

  /// Writes that each wait for the peer (well under the timeout), then the end: nothing fires
  /// afterwards, the pipeline sees no late `cancel()` and the calling task is not cancelled.
  @Test func theTimeoutNeverFiresAfterTheWritingEnded() async throws {
    let cancelled = Observed(false)
    let writer = PausingWriter(pause: .milliseconds(100))
    let writing = Task {
      let outcome = await Self.write(
        (0..<3).publisher.handleEvents(receiveCancel: { cancelled.update { $0 = true } }),
        to: writer, prefetch: 1, writeStallTimeout: .seconds(2))
      // A timeout and a half after the end: the watch had every chance to fire.
      try? await Task.sleep(for: .seconds(3))
      return (outcome, Task.isCancelled)
    }
    let (outcome, cancelledLater) = await writing.value
    #expect(outcome.error == nil)
    #expect(!outcome.taskCancelled)
    #expect(!cancelledLater, "no late cancellation of the calling task")
    #expect(!cancelled.value, "no late cancel() of the pipeline")
    #expect(writer.written.value == [0, 1, 2])
  }

  @Test func aTimeoutThatIsNotPositiveTraps() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      try? await RPCWriter(wrapping: AdapterTests.GatedWriter()).write(
        Just(1), writeStallTimeout: .zero)
    }
    let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(
      message.contains(
        "API Violation: writeStallTimeout 0.0 seconds for a pipeline written to a gRPC stream"))
  }
}
