import Foundation
import GRPCCore
import GRPCPipelines
import Sluice
import SluiceGRPC
import SwiftProtobuf
import Testing

extension AcrossProcesses {
  @Suite("Demand reaches HTTP/2 flow control")
  struct Backpressure {
    /// The bound on messages emitted by the server's source and not yet taken by the client's
    /// subscriber, for one server-streaming call (see the DocC article "Demand across gRPC"):
    ///
    /// - the server's write loop (`WriteBatches`): `p` values, requested, buffered or being written;
    /// - its HTTP/2 stream channel: up to its outbound high watermark (8,196 bytes in
    ///   swift-nio-http2) unsent, plus one DATA frame (16 KiB at most) on its way;
    /// - in flight on the connection and held by the client: at most the client's stream
    ///   window `W` not yet acknowledged, and one more window already acknowledged but sitting
    ///   in the stream's inbound buffer (the client's HTTP/2 stream delivers everything pending
    ///   when the consumer reads again, then opens the window: 2 `W`);
    /// - the client's publisher: one message, read ahead of the demand (so that the call's end
    ///   reaches a subscriber without demand);
    /// - and the writes in transit to the server's event loop when its stream turns unwritable
    ///   (grpc-swift's writer hands each write to the event loop and reports the stream's
    ///   writability only once the event loop has processed them): as many as the write loop
    ///   yields while the event loop catches up, which depends on their relative speed. The
    ///   test allows two more windows for them (it measured about one in debug builds on a
    ///   busy machine, far less in release builds; an unbounded path would exceed it within a
    ///   second).
    static func inFlightBound(window: Int, prefetch: Int, messageBytes: Int, transitWindows: Int)
      -> Int
    {
      let bytes = (2 + transitWindows) * window + 8_196 + 16_384
      return prefetch + (bytes + messageBytes - 1) / messageBytes + 1
    }

    @Test func aSubscriber100TimesSlowerKeepsInFlightWithinTheWindowsAndMemoryFlat() async throws {
      let window = 65_535  // the client's HTTP/2 window (grpc-swift's default is 8 MiB)
      let prefetch = 16
      let payload = 100
      let server = try await ServerProcess(["--prefetch", "\(prefetch)", "--report-ms", "20"])
      // One value a millisecond: the server's source alone emits over 100 times that (the
      // ordering test prints its rate).
      let subscriber = TestSubscriber<Tick>(initial: .max(1), pace: .milliseconds(1))
      let (inFlight, consumed, producedLately, growth) = try await withClient(
        port: server.port, settings: TransportSettings(window: window)
      ) { client in
        client.count(countRequest(payloadBytes: UInt32(payload))).subscribe(subscriber)
        #expect(await subscriber.wait(forCount: 200))
        let serverEarly = server.residentKiB
        let clientEarly = residentMemoryKiB() ?? 0
        try await Task.sleep(for: .seconds(1))  // the measurement's span, not a wait for an effect
        let producedEarly = server.produced
        try await Task.sleep(for: .seconds(2))
        let consumed = subscriber.record.value.count
        let produced = server.produced
        subscriber.cancel()
        return (
          produced - consumed, consumed, produced - producedEarly,
          (
            server: server.residentKiB - serverEarly,
            client: (residentMemoryKiB() ?? 0) - clientEarly
          )
        )
      }
      // Bytes a message takes on the wire: gRPC's 5-byte prefix and the protobuf encoding
      // (the smallest, for values below 128: the bound is then largest).
      let messageBytes = 5 + (try tick(0, payload: payload).serializedBytes() as [UInt8]).count
      let windowsBound = Self.inFlightBound(
        window: window, prefetch: prefetch, messageBytes: messageBytes, transitWindows: 0)
      let bound = Self.inFlightBound(
        window: window, prefetch: prefetch, messageBytes: messageBytes, transitWindows: 2)
      print(
        """
        in flight: \(inFlight) messages of \(messageBytes) bytes (\(inFlight * messageBytes) bytes); \
        windows and prefetch bound \(windowsBound) messages, writes in transit \
        \(max(0, inFlight - windowsBound)); allowed \(bound); consumed \(consumed); produced in the last 2 s: \(producedLately); \
        resident memory growth over 3 s: server \(growth.server) KiB, client \(growth.client) KiB
        """)
      #expect(inFlight > 0)
      #expect(inFlight <= bound)
      // Backpressure: in the last two seconds the source emitted about what the subscriber took
      // (two thousand at most), not the hundreds of thousands it could have.
      #expect(producedLately < 4_000)
      #expect(growth.server < 16 * 1024)
      #expect(growth.client < 16 * 1024)
      let values = subscriber.values.map(\.value)
      #expect(values == (0..<Int64(values.count)).map { $0 })
    }

    /// 1,000 server-streaming calls open at once on one connection. Each stream is endless (a
    /// value every half second), so a call that the connection could not open beside the
    /// others would never deliver: every subscriber holding its first value, none completed,
    /// shows all 1,000 open together. The server allows 1,100 concurrent streams
    /// (swift-nio-http2's default is 100, and the 101st call would wait for a stream to end).
    /// Both processes' memory is read while they are open; then every subscriber cancels, and
    /// every cancel reaches its source on the server.
    @Test func aThousandConcurrentStreamsOnOneConnection() async throws {
      let streams = 1_000
      let server = try await ServerProcess(["--max-concurrent-streams", "\(streams + 100)"])
      let subscribers = (0..<streams).map { _ in TestSubscriber<Int64>(initial: .max(1)) }
      let serverBefore = server.residentKiB
      let clientBefore = residentMemoryKiB() ?? 0
      let (serverOpen, clientOpen) = try await withClient(port: server.port) { client in
        for (index, subscriber) in subscribers.enumerated() {
          client.count(countRequest(start: Int64(index) * 1_000, intervalMicros: 500_000))
            .map(\.value)
            .subscribe(subscriber)
        }
        // One deadline for all: a call that cannot open waits for ever.
        let deadline = ContinuousClock.now + .seconds(120)
        var opened = 0
        for subscriber in subscribers {
          let left = max(deadline - ContinuousClock.now, .zero)
          if await subscriber.wait(forCount: 1, timeout: left) { opened += 1 }
        }
        #expect(opened == streams, "streams open at once")
        // Every stream is open, its subscriber holding one value and asking for no more.
        #expect(subscribers.allSatisfy { $0.completion == nil })
        let open = (server.residentKiB, residentMemoryKiB() ?? 0)
        let cancelledBefore = server.cancellations.count
        for subscriber in subscribers { subscriber.cancel() }
        #expect(
          await server.wait(timeout: .seconds(120)) {
            $0.cancellations.count - cancelledBefore >= streams
          }, "every cancel reaches its source")
        return open
      }
      for (index, subscriber) in subscribers.enumerated() {
        #expect(subscriber.values == [Int64(index) * 1_000])
      }
      let peers = Set(server.reports.value.rpcs.map(\.peer))
      #expect(server.reports.value.rpcs.count == streams)
      #expect(peers.count == 1, "one connection: \(peers.count) peers")
      let serverPerStream = Double(serverOpen - serverBefore) / Double(streams)
      let clientPerStream = Double(clientOpen - clientBefore) / Double(streams)
      print(
        """
        1,000 streams open on one connection: server +\(serverOpen - serverBefore) KiB \
        (\(String(format: "%.1f", serverPerStream)) KiB a stream), client \
        +\(clientOpen - clientBefore) KiB (\(String(format: "%.1f", clientPerStream)) KiB a \
        stream, test subscribers included)
        """)
      #expect(serverOpen - serverBefore < 256 * 1024)
      #expect(clientOpen - clientBefore < 256 * 1024)
    }
  }
}
