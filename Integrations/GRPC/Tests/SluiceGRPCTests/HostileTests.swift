import Foundation
import GRPCCore
import GRPCPipelines
import Sluice
import SluiceGRPC
import SwiftProtobuf
import Testing

extension AcrossProcesses {
  @Suite("Cancellation both ways")
  struct Cancellation {
    @Test func cancellingTheSubscriptionCancelsTheServersSource() async throws {
      let server = try await ServerProcess()
      let subscriber = TestSubscriber<Int64>(initial: .max(1), pace: .milliseconds(5))
      // A 64 KiB window: with grpc-swift's 8 MiB, the server's event loop spends its time writing
      // the first window's worth of small messages (handed to it faster than it writes them)
      // and reads the client's reset only afterwards (see the article).
      let settings = TransportSettings(window: 65_535)
      let latency = try await withClient(port: server.port, settings: settings) { client in
        client.count(countRequest()).map(\.value).subscribe(subscriber)
        #expect(await subscriber.wait(forCount: 10))
        #expect(server.cancellations.isEmpty)
        let cancelledAt = monotonicNanoseconds()
        subscriber.cancel()
        #expect(await server.wait { !$0.cancellations.isEmpty }, "the server's source saw cancel()")
        return Double((server.cancellations.first ?? cancelledAt) - cancelledAt) / 1e6
      }
      print("cancel() to the server's source seeing cancel(): \(latency) ms")
      #expect(subscriber.completion == nil, "nothing after cancel()")
      #expect(subscriber.record.value.late == 0)
    }

    /// An endless request pipeline and a slow subscriber: both directions' windows close, both
    /// processes' memory stays flat, and the subscriber's `cancel()` reaches the server's
    /// pipeline and the client's request pipeline.
    @Test
    func cancellingABidirectionalCallCancelsBothPipelines() async throws {
      let server = try await ServerProcess()
      let subscriber = TestSubscriber<Int64>(initial: .max(1), pace: .milliseconds(5))
      let requestsCancelled = Observed(false)
      let settings = TransportSettings(window: 65_535)
      try await withClient(port: server.port, settings: settings) { client in
        client.square {
          // Not `.publisher.map` first: like Combine's, `Publishers.Sequence.map` maps the
          // whole sequence at once (an endless range: until memory runs out).
          (Int64(0)...).publisher
            .handleEvents(receiveCancel: { requestsCancelled.update { $0 = true } })
            .map { tick($0) }
        }.map(\.value).subscribe(subscriber)
        #expect(await subscriber.wait(forCount: 10))
        // Both windows closed: memory is what the windows and prefetch hold, not a flood.
        let (clientKiB, serverKiB) = (residentMemoryKiB() ?? 0, server.residentKiB)
        #expect(await subscriber.wait(forCount: 200))
        let grewKiB = (residentMemoryKiB() ?? 0) - clientKiB
        let serverGrewKiB = server.residentKiB - serverKiB
        print(
          "bidirectional, 190 responses later: client +\(grewKiB) KiB, server +\(serverGrewKiB) KiB"
        )
        #expect(grewKiB < 64 * 1024 && serverGrewKiB < 64 * 1024, "no unbounded buffering")
        let cancelledAt = monotonicNanoseconds()
        subscriber.cancel()
        #expect(
          await server.wait { !$0.cancellations.isEmpty }, "the server's pipeline saw cancel()")
        let latency = Double((server.cancellations.first ?? cancelledAt) - cancelledAt) / 1e6
        print("bidirectional cancel() to the server's pipeline seeing cancel(): \(latency) ms")
        #expect(await requestsCancelled.wait { $0 }, "the client's request pipeline saw cancel()")
      }
      let values = subscriber.values
      #expect(values == (0..<Int64(values.count)).map { $0 * $0 })
    }
  }

  @Suite("Deadlines")
  struct Deadlines {
    @Test func aDeadlineEndsAStreamWhoseSubscriberStoppedAsking() async throws {
      let server = try await ServerProcess()
      // Five values, then no more demand: the call's task waits for demand when the deadline
      // passes.
      let subscriber = TestSubscriber<Int64>(initial: .max(5))
      let start = ContinuousClock.now
      try await withClient(port: server.port) { client in
        client.count(countRequest(), options: options(timeout: .seconds(1))).map(\.value)
          .subscribe(subscriber)
        #expect(await subscriber.waitForCompletion())
      }
      let elapsed = ContinuousClock.now - start
      #expect(subscriber.values == [0, 1, 2, 3, 4])
      #expect(subscriber.failureCode == .deadlineExceeded)
      #expect(elapsed >= .seconds(1))
      #expect(await server.wait { !$0.cancellations.isEmpty }, "the server's source saw cancel()")
      print("deadline 1 s: the subscriber failed after \(elapsed)")
    }

    @Test func aDeadlineEndsAStreamWhileValuesFlow() async throws {
      let server = try await ServerProcess()
      let subscriber = TestSubscriber<Int64>(initial: .max(1), pace: .milliseconds(2))
      try await withClient(port: server.port) { client in
        client.count(countRequest(), options: options(timeout: .seconds(1))).map(\.value)
          .subscribe(subscriber)
        #expect(await subscriber.waitForCompletion())
      }
      #expect(subscriber.failureCode == .deadlineExceeded)
      let values = subscriber.values
      #expect(!values.isEmpty)
      #expect(values == (0..<Int64(values.count)).map { $0 })
    }
  }

  @Suite("Hostile peers")
  struct HostilePeers {
    /// A client process reading a stream is killed (SIGKILL: no reset, the connection just
    /// closes): the server's transport cancels the RPC, and the served pipeline sees `cancel()`.
    @Test func aClientThatDisappearsCancelsTheServersSource() async throws {
      let server = try await ServerProcess()
      let client = Process()
      client.executableURL = try ServerProcess.executable(named: "pipeline-grpc-client")
      client.arguments = [
        "--port", "\(server.port)", "--window", "65535", "count", "0", "--every-ms", "5",
      ]
      client.standardOutput = FileHandle.nullDevice
      try client.run()
      defer {
        if client.isRunning {
          kill(client.processIdentifier, SIGKILL)
          client.waitUntilExit()
        }
      }
      #expect(await server.wait { $0.produced > 100 }, "the client is reading")
      #expect(server.cancellations.isEmpty)
      // Timed from the signal: the server may see the connection close before
      // `waitUntilExit()` returns.
      let killedAt = monotonicNanoseconds()
      kill(client.processIdentifier, SIGKILL)
      client.waitUntilExit()
      #expect(await server.wait { !$0.cancellations.isEmpty }, "the server's source saw cancel()")
      let latency = Double(max(server.cancellations.first ?? killedAt, killedAt) - killedAt) / 1e6
      print("client killed to the server's source seeing cancel(): \(latency) ms")
    }

    /// A client process reading a stream is stopped (SIGSTOP: its connection stays open, its
    /// kernel still acknowledges TCP, but nothing answers HTTP/2, so its flow-control window
    /// never reopens). Keepalive does not help here: grpc-swift-nio-transport 2.9.2's server
    /// answers an unacknowledged ping with a graceful shutdown that waits for another ping's
    /// acknowledgement. The server's write-stall timeout (1 s) ends the RPC instead: the write
    /// that found the window spent waits 1 s, then the served pipeline sees `cancel()` and the
    /// stream is reset.
    @Test func aSilentClientIsCutByTheServersWriteStallTimeout() async throws {
      let server = try await ServerProcess(["--write-stall-ms", "1000"])
      let client = Process()
      client.executableURL = try ServerProcess.executable(named: "pipeline-grpc-client")
      client.arguments = [
        "--port", "\(server.port)", "--window", "65535", "count", "0", "--every-ms", "5",
      ]
      client.standardOutput = FileHandle.nullDevice
      try client.run()
      defer {
        if client.isRunning {
          kill(client.processIdentifier, SIGKILL)  // also ends a stopped process
          client.waitUntilExit()
        }
      }
      #expect(await server.wait { $0.produced > 100 }, "the client is reading")
      #expect(server.cancellations.isEmpty, "a reading client is not cut")
      kill(client.processIdentifier, SIGSTOP)
      let stoppedAt = monotonicNanoseconds()
      // 1 s of stall after the window is spent; the rest is a guard against hangs.
      let ended = await server.wait(timeout: .seconds(30)) { !$0.cancellations.isEmpty }
      #expect(ended, "the server's source saw cancel() while the client stayed stopped")
      let cancelledAt = max(server.cancellations.first ?? stoppedAt, stoppedAt)
      let latency = Double(cancelledAt - stoppedAt) / 1e9
      print("SIGSTOPped client, server write-stall timeout 1 s: cancel() after \(latency) s")
      #expect(server.cancellations.count == 1)
    }

    /// 50 clients (one process, a connection each) read a stream each, then stop together
    /// (SIGSTOP). The server's write-stall timeout (5 s) releases every one of their RPCs and
    /// pipelines, and the server serves a new client meanwhile and afterwards. The sources tick
    /// every 5 ms with 4 KB each (a firehose source per stream would measure the server's
    /// event loops, which fall behind 50 writers that never wait, not the timeout); each client
    /// reads one every 50 ms, so its window reopens every ~0.4 s, well within the timeout.
    @Test func aFloodOfSilentClientsIsReleasedAndTheServerServesOthers() async throws {
      let clients = 50
      let server = try await ServerProcess(["--write-stall-ms", "5000"])
      let flood = Process()
      flood.executableURL = try ServerProcess.executable(named: "pipeline-grpc-client")
      flood.arguments = [
        "--port", "\(server.port)", "--window", "65535", "--connections", "\(clients)",
        "count", "0", "--every-ms", "50", "--payload", "4000", "--interval-us", "5000",
      ]
      flood.standardOutput = FileHandle.nullDevice
      try flood.run()
      defer {
        if flood.isRunning {
          kill(flood.processIdentifier, SIGKILL)  // also ends a stopped process
          flood.waitUntilExit()
        }
      }
      #expect(await server.wait { $0.rpcs.count >= clients }, "every client called")
      let producedBefore = server.produced
      #expect(await server.wait { $0.produced > producedBefore + 2_000 }, "the clients read")
      // A client of the flood that took nothing for 5 s (two cores, 50 connections in one
      // process) is cut as a silent one would be: counted, not failed.
      let cutWhileReading = server.cancellations.count
      let residentBefore = server.residentKiB
      kill(flood.processIdentifier, SIGSTOP)
      let stoppedAt = monotonicNanoseconds()
      // A new client while the stopped ones hold their RPCs.
      let during = try await withClient(port: server.port) { client in
        try await client.count(countRequest(count: 100)).map(\.value).allValues()
      }
      #expect(during == (0..<100).map { $0 })
      let released = await server.wait(timeout: .seconds(60)) {
        $0.cancellations.count >= clients
      }
      #expect(released, "every silent client's pipeline saw cancel()")
      let latencies = server.cancellations.filter { $0 >= stoppedAt }.map {
        Double($0 - stoppedAt) / 1e9
      }
      let residentAfter = server.residentKiB
      let after = try await withClient(port: server.port) { client in
        try await client.count(countRequest(count: 100)).map(\.value).allValues()
      }
      #expect(after == (0..<100).map { $0 })
      #expect(server.cancellations.count == clients, "each pipeline cancelled once")
      print(
        """
        \(clients) SIGSTOPped clients, write-stall timeout 5 s: cancel() after \
        \(latencies.min() ?? 0) to \(latencies.max() ?? 0) s (\(cutWhileReading) cut before the \
        stop); server \(residentBefore) KiB before the stop, \(residentAfter) KiB once released
        """)
    }

    /// A live client that reads slowly (one message every 10 ms, 2 KB each, through a 64 KiB
    /// window) from a source that ticks every millisecond: the server's writes wait for it most
    /// of the time — longer in all than the write-stall timeout (3 s) — but each is resumed by
    /// the client's next window update (every ~32 KiB read, ~0.2 s) within it, so the stream
    /// is not cut.
    @Test func aSlowReaderUnderTheWriteStallTimeoutIsNotCut() async throws {
      let server = try await ServerProcess(["--write-stall-ms", "3000"])
      let subscriber = TestSubscriber<Int64>(initial: .max(1), pace: .milliseconds(10))
      let start = ContinuousClock.now
      let settings = TransportSettings(window: 65_535)
      try await withClient(port: server.port, settings: settings) { client in
        client.count(countRequest(payloadBytes: 2_000, intervalMicros: 1_000)).map(\.value)
          .subscribe(subscriber)
        #expect(await subscriber.wait(forCount: 500))
        // The writer is held back: the source is not far ahead of the reader.
        #expect(
          server.produced < subscriber.values.count + 1_000, "the writes wait for the reader")
        #expect(server.cancellations.isEmpty, "not cut")
        subscriber.cancel()
      }
      let elapsed = ContinuousClock.now - start
      print("a slow reader, write-stall timeout 3 s: 500 messages in \(elapsed), not cut")
      #expect(elapsed > .seconds(4), "the writes waited for more than the timeout in all")
      #expect(subscriber.completion == nil)
      let values = subscriber.values
      #expect(values == (0..<Int64(values.count)).map { $0 })
    }

    @Test func aKilledServerIsUnavailableNotAHang() async throws {
      let server = try await ServerProcess()
      let subscriber = TestSubscriber<Int64>()
      let next = TestSubscriber<Int64>()
      try await withClient(port: server.port) { client in
        client.count(countRequest()).map(\.value).subscribe(subscriber)
        #expect(await subscriber.wait(forCount: 1_000))
        server.signal(SIGKILL)
        #expect(
          await subscriber.waitForCompletion(timeout: .seconds(30)), "the subscriber was told")
        // A call after the server died fails too (no waiting for a server that is gone).
        client.count(countRequest(count: 1)).map(\.value).subscribe(next)
        #expect(await next.waitForCompletion(timeout: .seconds(30)))
      }
      #expect(subscriber.failureCode == .unavailable)
      let values = subscriber.values
      #expect(values == (0..<Int64(values.count)).map { $0 }, "what arrived, once and in order")
      #expect(next.failureCode == .unavailable)
    }

    @Test func aSilentServerEndsTheStreamThroughKeepalive() async throws {
      let server = try await ServerProcess()
      var settings = TransportSettings()
      settings.keepaliveTime = .seconds(1)
      settings.keepaliveTimeout = .seconds(1)
      let subscriber = TestSubscriber<Int64>()
      let silentFor = try await withClient(port: server.port, settings: settings) { client in
        client.count(countRequest()).map(\.value).subscribe(subscriber)
        #expect(await subscriber.wait(forCount: 1_000))
        server.signal(SIGSTOP)  // its connections stay open; it answers nothing, pings included
        let stopped = ContinuousClock.now
        #expect(await subscriber.waitForCompletion(timeout: .seconds(60)), "not a hang")
        return ContinuousClock.now - stopped
      }
      server.signal(SIGCONT)
      print("SIGSTOPped server, keepalive 1 s + 1 s: the subscriber failed after \(silentFor)")
      #expect(subscriber.failureCode == .unavailable)
      #expect(silentFor < .seconds(30))
    }

    @Test func aSilentServerEndsTheStreamAtTheDeadline() async throws {
      let server = try await ServerProcess()
      let subscriber = TestSubscriber<Int64>()
      try await withClient(port: server.port) { client in
        client.count(countRequest(), options: options(timeout: .seconds(2))).map(\.value)
          .subscribe(subscriber)
        #expect(await subscriber.wait(forCount: 1_000))
        server.signal(SIGSTOP)
        #expect(await subscriber.waitForCompletion(timeout: .seconds(60)), "not a hang")
      }
      server.signal(SIGCONT)
      #expect(subscriber.failureCode == .deadlineExceeded)
    }

    /// grpc-swift-nio-transport 2.9.2 rejects the message (its deframer's `.resourceExhausted`)
    /// but reports it to the caller as `.internalError` "Failed to decode message
    /// resourceExhausted: …", without a cause to unwrap; the subscriber gets
    /// `.resourceExhausted`, as the gRPC specification says, with the transport's error as its
    /// cause. The stream alone is reset.
    @Test func aResponseOverTheSizeLimitIsRejectedAndTheConnectionServesOthers() async throws {
      let server = try await ServerProcess()
      let oversized = TestSubscriber<Tick>()
      let (error, after) = try await withClient(port: server.port) { client in
        // 4 MiB is grpc-swift's default limit on a received message.
        client.count(countRequest(count: 1, payloadBytes: 4 * 1024 * 1024 + 1)).subscribe(oversized)
        #expect(await oversized.waitForCompletion())
        let after = try await client.count(countRequest(count: 10)).map(\.value).allValues()
        return (oversized.completion, after)
      }
      guard case .failure(let failure) = error else {
        Issue.record("expected a failure, got \(String(describing: error))")
        return
      }
      #expect(failure.code == .resourceExhausted)
      #expect(failure.message.contains("exceeded the configured maximum payload size"))
      #expect((failure.cause as? RPCError)?.code == .internalError, "the transport's report")
      #expect(after == (0..<10).map { $0 })
      let peers = server.reports.value.rpcs.map(\.peer)
      #expect(peers.count == 2)
      #expect(Set(peers).count == 1, "both calls on one connection: \(peers)")
    }

    /// grpc-swift-nio-transport 2.9.2's server rejects the message by resetting the stream
    /// (`RST_STREAM` CANCEL), which the client reports as `.unavailable`; the connection stays.
    @Test func aRequestOverTheServersLimitIsRejectedAndTheConnectionServesOthers() async throws {
      let server = try await ServerProcess(["--max-request-bytes", "65536"])
      let (oversized, total) = try await withClient(port: server.port) { client in
        let oversized = TestSubscriber<Total>()
        client.sum { [tick(1, payload: 100_000)].publisher }.subscribe(oversized)
        #expect(await oversized.waitForCompletion())
        let total = try await client.sum { (0..<10).publisher.map { tick($0) } }.singleValue()
        return (oversized, total)
      }
      #expect(oversized.failureCode == .unavailable)
      #expect(total.sum == 45)
      let peers = server.reports.value.rpcs.map(\.peer)
      #expect(Set(peers).count == 1, "both calls on one connection: \(peers)")
    }
  }
}
