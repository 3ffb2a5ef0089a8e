import Foundation
import GRPCCore
import GRPCPipelines
import Sluice
import SluiceGRPC
import SwiftProtobuf
import Testing

/// Every test that starts a server process, one at a time: they measure memory and time, which
/// concurrent servers on two cores would blur.
@Suite("SluiceGRPC across processes", .serialized)
enum AcrossProcesses {}

func tick(_ value: Int64, payload: Int = 0) -> Tick {
  Tick.with {
    $0.value = value
    if payload > 0 { $0.payload = Data(count: payload) }
  }
}

func countRequest(
  start: Int64 = 0, count: Int64 = 0, failAfter: Int64 = 0, failCode: Int32 = 0,
  payloadBytes: UInt32 = 0, intervalMicros: Int64 = 0
) -> CountRequest {
  CountRequest.with {
    $0.start = start
    $0.count = count
    $0.failAfter = failAfter
    $0.failCode = failCode
    $0.payloadBytes = payloadBytes
    $0.intervalMicros = intervalMicros
  }
}

extension AcrossProcesses {
  @Suite("Every value once, in order, for each streaming shape")
  struct Ordering {
    @Test func serverStreaming100kValues() async throws {
      let server = try await ServerProcess()
      let count = 100_000
      let start = ContinuousClock.now
      let values = try await withClient(port: server.port) { client in
        try await client.count(countRequest(count: Int64(count))).map(\.value).allValues()
      }
      let elapsed = ContinuousClock.now - start
      #expect(values.count == count)
      #expect(values == (0..<Int64(count)).map { $0 }, "every value once, in order")
      print("server streaming: \(count) messages in \(elapsed) (debug build, both processes)")
    }

    @Test func bidirectionalEchoesEveryValueInOrder() async throws {
      let server = try await ServerProcess()
      let count: Int64 = 5_000
      let squares = try await withClient(port: server.port) { client in
        try await client.square { (0..<count).publisher.map { tick($0) } }.map(\.value)
          .allValues()
      }
      #expect(squares == (0..<count).map { $0 * $0 })
    }

    @Test func clientStreamingSumsEveryValue() async throws {
      let server = try await ServerProcess()
      let count: Int64 = 5_000
      let total = try await withClient(port: server.port) { client in
        try await client.sum { (0..<count).publisher.map { tick($0) } }.singleValue()
      }
      #expect(total.count == count)
      #expect(total.sum == count * (count - 1) / 2)
    }

    @Test func eachSubscriptionIsACallOfItsOwn() async throws {
      let server = try await ServerProcess()
      let (first, second) = try await withClient(port: server.port) { client in
        let ticks = client.count(countRequest(start: 7, count: 3)).map(\.value)
        return (try await ticks.allValues(), try await ticks.allValues())
      }
      #expect(first == [7, 8, 9])
      #expect(second == [7, 8, 9])
      #expect(server.reports.value.rpcs.filter { $0.method == "Count" }.count == 2)
    }
  }

  @Suite("Failures arrive with their status")
  struct Failures {
    @Test func aServerPipelineFailureArrivesWithItsStatus() async throws {
      let server = try await ServerProcess()
      let subscriber = TestSubscriber<Int64>()
      try await withClient(port: server.port) { client in
        // fail_code 10: ABORTED, from an `RPCErrorConvertible` failure.
        client.count(countRequest(failAfter: 5, failCode: 10)).map(\.value).subscribe(subscriber)
        #expect(await subscriber.waitForCompletion())
      }
      #expect(subscriber.values == [0, 1, 2, 3, 4])
      guard case .failure(let error) = subscriber.completion else {
        Issue.record("expected a failure, got \(String(describing: subscriber.completion))")
        return
      }
      #expect(error.code == .aborted)
      #expect(error.message == "the pipeline failed at tick 5")
    }

    @Test func anErrorWithoutAStatusIsUnknownWithoutItsDescription() async throws {
      let server = try await ServerProcess()
      let subscriber = TestSubscriber<Int64>()
      try await withClient(port: server.port) { client in
        client.count(countRequest(failAfter: 3)).map(\.value).subscribe(subscriber)
        #expect(await subscriber.waitForCompletion())
      }
      #expect(subscriber.values == [0, 1, 2])
      guard case .failure(let error) = subscriber.completion else {
        Issue.record("expected a failure, got \(String(describing: subscriber.completion))")
        return
      }
      #expect(error.code == .unknown)
      #expect(error.message == "The pipeline failed.")
    }

    @Test func aFailingRequestPipelineFailsTheCallWithItsOwnError() async throws {
      let server = try await ServerProcess()
      struct Broken: Error, RPCErrorConvertible {
        var rpcErrorCode: RPCError.Code { .dataLoss }
        var rpcErrorMessage: String { "the request pipeline broke" }
      }
      let subscriber = TestSubscriber<Int64>()
      try await withClient(port: server.port) { client in
        client.square {
          (Int64(0)..<100).publisher.tryMap { value -> Tick in
            if value == 10 { throw Broken() }
            return tick(value)
          }
        }.map(\.value).subscribe(subscriber)
        #expect(await subscriber.waitForCompletion())
      }
      guard case .failure(let error) = subscriber.completion else {
        Issue.record("expected a failure, got \(String(describing: subscriber.completion))")
        return
      }
      #expect(error.code == .dataLoss)
      #expect(error.message == "the request pipeline broke")
      let values = subscriber.values
      #expect(values == (0..<Int64(values.count)).map { $0 * $0 }, "what arrived, in order")
      #expect(values.count <= 10)
    }
  }
}
