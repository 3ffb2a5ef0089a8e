import Foundation
import Sluice
import SluiceNIO
import Testing

/// The pipeline across processes when nothing goes wrong on purpose: every value once, in order;
/// demand reaching the server's source; cancel, failure and a killed server.
@Suite("Pipelines across processes, over SwiftNIO", .serialized)
struct AcrossProcessesTests {
  @Test func everyValueArrivesOnceInOrderThenTheCompletion() async throws {
    let server = try await ServerProcess(["--count", "20000"])
    let values = try await RemotePipeline<Int>(port: try #require(server.port)).allValues()
    #expect(values == Array(0..<20000))
  }

  @Test func aSubscriber100TimesSlowerKeepsValuesInFlightAndMemoryBounded() async throws {
    // The server's source emits as fast as it is asked (hundreds of thousands a second here);
    // the client takes one value a millisecond.
    let server = try await ServerProcess(["--send-buffer", "16384", "--batch-bytes", "4096"])
    let client = RemotePipeline<Int>(
      port: try #require(server.port),
      configuration: .init(readSize: 4096, receiveBufferSize: 16384)
    ).slowSubscriber(pace: .milliseconds(1))
    #expect(await eventually { client.received.count >= 200 })
    let serverMemoryEarly = try #require(server.residentKiB)
    let clientMemoryEarly = try #require(residentMemoryKiB(of: getpid()))
    try await Task.sleep(for: .seconds(1))
    let producedEarly = server.produced
    try await Task.sleep(for: .seconds(2))
    let consumed = client.received.count
    let produced = server.produced
    client.cancel()

    // In flight: emitted by the server's source, not yet taken by the subscriber. Bounded by
    // what the buffers on the way hold (the package README): the server's two batches (4 KiB
    // each), the two kernel socket buffers (16 KiB asked each; Linux gives twice that, and
    // loopback fills them with more than it counts), the client's 4 + 1 reads of 4 KiB. Each
    // frame is 5 bytes of header and a few digits: about 10 bytes. The limit leaves room for
    // other kernels' buffer accounting; an unbounded path passes it within a second.
    let inFlight = produced - consumed
    print("in flight: \(inFlight) values; produced \(produced), consumed \(consumed)")
    #expect(inFlight < 40_000)
    // Backpressure: in the last two seconds the source emitted about as many values as the
    // subscriber took (a thousand or two), not the hundreds of thousands it could have.
    #expect(produced - producedEarly < 5_000)
    // Read after the cancel: a value may arrive between the count above and `cancel()`.
    let received = client.received
    #expect(received == Array(0..<received.count) && received.count >= consumed)
    let serverGrowth = (server.residentKiB ?? 0) - serverMemoryEarly
    let clientGrowth = (residentMemoryKiB(of: getpid()) ?? 0) - clientMemoryEarly
    print("resident memory growth: server \(serverGrowth) KiB, client \(clientGrowth) KiB")
    #expect(serverGrowth < 16 * 1024)
    #expect(clientGrowth < 32 * 1024)
  }

  @Test func cancellingTheSubscriptionClosesTheConnectionAndCancelsTheServersPipeline()
    async throws
  {
    let server = try await ServerProcess([])
    let client = RemotePipeline<Int>(port: try #require(server.port))
      .slowSubscriber(pace: .milliseconds(5))
    #expect(await eventually { client.received.count >= 10 })
    #expect(!server.sawCancel)
    client.cancel()
    #expect(await eventually { server.sawCancel }, "the server's source saw cancel()")
    #expect(client.completion == nil, "nothing after cancel()")
  }

  @Test func aServerFailureReachesTheSubscriberAsAFailure() async throws {
    let server = try await ServerProcess(["--fail-after", "5"])
    let (values, completion) = await RemotePipeline<Int>(port: try #require(server.port))
      .collect()
    #expect(values == [0, 1, 2, 3, 4])
    #expect(completion == .failure(.serverFailed("failed at 5")))
  }

  @Test func aDroppedConnectionIsAFailureNotAHang() async throws {
    let server = try await ServerProcess([])
    let client = RemotePipeline<Int>(port: try #require(server.port)).slowSubscriber()
    #expect(await eventually { client.received.count >= 1000 })
    server.kill()
    #expect(await eventually { client.completion != nil }, "the subscriber was told")
    #expect(client.completion == .failure(.connectionDropped))
    let received = client.received
    #expect(received == Array(0..<received.count), "what arrived, arrived once and in order")
  }

  @Test func noServerIsAConnectionFailure() async throws {
    // A port nobody listens on: bind one, note it, close it.
    let server = try await ServerProcess([])
    let port = try #require(server.port)
    server.kill()
    let (_, completion) = await RemotePipeline<Int>(port: port).collect()
    guard case .failure(.connectionFailed) = completion else {
      Issue.record("expected connectionFailed, got \(String(describing: completion))")
      return
    }
  }
}
