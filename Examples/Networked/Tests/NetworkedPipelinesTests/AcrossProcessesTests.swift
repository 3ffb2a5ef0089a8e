import Foundation
import NetworkedPipelines
import Sluice
import Synchronization
import Testing

/// A subscriber that asks for one value at a time, each `pace` after the last arrived, from a
/// thread of its own (a client subscriber far slower than the server's source).
final class SlowSubscriber: Subscriber, Cancellable, @unchecked Sendable {
  typealias Input = Int
  typealias Failure = RemotePipelineError
  // Safety: every mutable property is read and written only under `lock`; `owed` is a
  // semaphore.
  private let lock = NSLock()
  private var subscription: (any Subscription)?
  private var values: [Int] = []
  private var _completion: Subscribers.Completion<RemotePipelineError>?
  private var stopped = false
  /// Signalled once per value received: the pacing thread owes one request.
  private let owed = DispatchSemaphore(value: 0)
  let pace: Duration

  init(pace: Duration) { self.pace = pace }

  var received: [Int] { lock.withLock { values } }
  var completion: Subscribers.Completion<RemotePipelineError>? { lock.withLock { _completion } }

  func receive(subscription: any Subscription) {
    lock.withLock { self.subscription = subscription }
    let (seconds, attoseconds) = pace.components
    let interval = Double(seconds) + Double(attoseconds) / 1e18
    Thread.detachNewThread { [self] in
      while true {
        owed.wait()
        Thread.sleep(forTimeInterval: interval)
        guard let subscription = lock.withLock({ stopped ? nil : self.subscription }) else {
          return
        }
        subscription.request(.max(1))
      }
    }
    subscription.request(.max(1))
  }

  func receive(_ input: Int) -> Subscribers.Demand {
    lock.withLock { values.append(input) }
    owed.signal()  // the next request comes later, from the pacing thread
    return .none
  }

  func receive(completion: Subscribers.Completion<RemotePipelineError>) {
    lock.withLock {
      _completion = completion
      stopped = true
    }
    owed.signal()  // lets the pacing thread end
  }

  func cancel() {
    let subscription = lock.withLock {
      stopped = true
      return self.subscription
    }
    owed.signal()
    subscription?.cancel()
  }
}

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
    let server = try await ServerProcess(["--send-buffer", "16384", "--write-buffer", "16384"])
    let client = SlowSubscriber(pace: .milliseconds(1))
    RemotePipeline<Int>(
      port: try #require(server.port), inboundBuffer: 64, receiveBufferSize: 16384, readSize: 4096
    ).subscribe(client)
    #expect(await eventually { client.received.count >= 200 })
    let serverMemoryEarly = try #require(server.residentKiB)
    let clientMemoryEarly = try #require(residentMemoryKiB(of: getpid()))
    try await Task.sleep(for: .seconds(1))
    let producedEarly = server.produced
    try await Task.sleep(for: .seconds(2))
    let consumed = client.received.count
    let produced = server.produced
    client.cancel()

    // In flight: emitted by the server's source, not yet taken by the subscriber. Bounded by what
    // the buffers on the way hold (the README's "Across processes"): the server's prefetch (16),
    // NIO's write buffer (16 KiB high watermark), the two kernel socket buffers (16 KiB asked
    // each; Linux gives twice that, and loopback fills them with more than it counts), one read
    // (4 KiB) beyond the client's 64 inbound frames, one value being sent. Measured here: about
    // 20,000 values, 140 KB of 7-byte frames, whatever the run's length. The limit leaves room
    // for other kernels' buffer accounting; an unbounded path would pass it within a second.
    let inFlight = produced - consumed
    print("in flight: \(inFlight) values; produced \(produced), consumed \(consumed)")
    #expect(inFlight < 40_000)
    // Backpressure: in the last two seconds the source emitted about as many values as the
    // subscriber took (a thousand or two), not the hundreds of thousands it could have.
    #expect(produced - producedEarly < 5_000)
    #expect(client.received == Array(0..<consumed))
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
    let client = SlowSubscriber(pace: .milliseconds(5))
    RemotePipeline<Int>(port: try #require(server.port)).subscribe(client)
    #expect(await eventually { client.received.count >= 10 })
    #expect(!server.sawCancel)
    client.cancel()
    #expect(await eventually { server.sawCancel }, "the server's source saw cancel()")
    #expect(client.completion == nil, "nothing after cancel()")
  }

  @Test func aServerFailureReachesTheSubscriberAsAFailure() async throws {
    let server = try await ServerProcess(["--fail-after", "5"])
    let client = SlowSubscriber(pace: .zero)
    RemotePipeline<Int>(port: try #require(server.port)).subscribe(client)
    #expect(await eventually { client.completion != nil })
    #expect(client.received == [0, 1, 2, 3, 4])
    #expect(client.completion == .failure(.serverFailed("failed at 5")))
  }

  @Test func aDroppedConnectionIsAFailureNotAHang() async throws {
    let server = try await ServerProcess([])
    let client = SlowSubscriber(pace: .zero)
    RemotePipeline<Int>(port: try #require(server.port)).subscribe(client)
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
    let client = SlowSubscriber(pace: .zero)
    RemotePipeline<Int>(port: port).subscribe(client)
    #expect(await eventually { client.completion != nil })
    guard case .failure(.connectionFailed) = client.completion else {
      Issue.record("expected connectionFailed, got \(String(describing: client.completion))")
      return
    }
  }
}
