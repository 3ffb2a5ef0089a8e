import Foundation
import Sluice
import SluiceNIO
import Testing

/// A synchronous source runs inside the server writer's request call, and the frames it emits
/// there wait for a full batch (16 KiB by default, about 2,000 integers) or the call's end;
/// a source slow to emit the next value, or one that blocks, held the values it had emitted
/// for as long (the client saw 16 values, then timed out after 30 s with 300 more emitted).
/// The writer's tick takes and writes them within about a millisecond.
@Suite("A synchronous source's values go out while it works or blocks", .serialized)
struct SynchronousSourceLatencyTests {
  @Test func aSlowSynchronousSourceIsWrittenValueByValue() async throws {
    // 80 values, 50 ms of work before each: 4 s in all. Half way, about 40 have arrived (the
    // first 16 went out at once; before the tick the rest waited for the end).
    let server = try await ServerProcess(["--count", "80", "--sync-pause-ms", "50"])
    let client = RemotePipeline<Int>(port: try #require(server.port)).slowSubscriber()
    defer { client.cancel() }
    try await Task.sleep(for: .milliseconds(2_500))
    let halfWay = client.received.count
    #expect(halfWay >= 30, "\(halfWay) values after 2.5 s")
    #expect(await eventually(within: 10) { client.completion != nil }, "every value, then the end")
    #expect(client.received == Array(0..<80))
    if case .failure(let error)? = client.completion { Issue.record("failed: \(error)") }
    print("a source taking 50 ms a value: \(halfWay) of 80 values arrived after 2.5 s")
  }

  /// A synchronous source runs on a thread of the cooperative pool, which is as wide as the
  /// cores. Three sources taking 50 ms a value (a blocking read each) on a 2-core machine held
  /// every thread: each request call went on until its byte budget was spent (about 24
  /// minutes at that pace), and a fourth client got nothing for as long (the adversary's run:
  /// no value after 20 s). A call now yields once it has run 50 ms and its demand is used up,
  /// and the next asks for one value until the source is quick again.
  @Test func slowSynchronousSourcesDoNotStarveAFastClient() async throws {
    let slow = max(3, ProcessInfo.processInfo.activeProcessorCount + 1)
    let server = try await ServerProcess([
      "--count", "1000", "--sync-pause-ms", "50", "--slow-connections", "\(slow)",
    ])
    let port = try #require(server.port)
    let slowClients = (0..<slow).map { _ in RemotePipeline<Int>(port: port).slowSubscriber() }
    defer { for client in slowClients { client.cancel() } }
    #expect(
      await eventually(within: 10) { slowClients.allSatisfy { !$0.received.isEmpty } },
      "every slow client is served")
    let start = ContinuousClock.now
    let fast = RemotePipeline<Int>(port: port).slowSubscriber()
    defer { fast.cancel() }
    #expect(await eventually(within: 20) { fast.completion != nil }, "the fast client's values")
    let took = ContinuousClock.now - start
    let inOrder = fast.received == Array(0..<1000)
    #expect(inOrder, "\(fast.received.count) of 1,000 values, in order")
    print(
      "beside \(slow) sources taking 50 ms a value, a fast client's 1,000 values took \(took)")
  }

  @Test func valuesEmittedBeforeTheSourceBlocksArriveWhileItBlocks() async throws {
    // 20 values at once, then the source blocks 6 s inside the request call.
    let server = try await ServerProcess([
      "--count", "40", "--sync-pause-ms", "6000", "--pause-at", "20",
    ])
    let client = RemotePipeline<Int>(port: try #require(server.port)).slowSubscriber()
    defer { client.cancel() }
    let start = ContinuousClock.now
    #expect(await eventually(within: 4) { client.received.count >= 20 }, "before the block ends")
    let waited = ContinuousClock.now - start
    #expect(client.received.prefix(20) == ArraySlice(0..<20))
    #expect(client.completion == nil)
    print("20 values emitted before a 6 s block arrived after \(waited)")
  }
}
