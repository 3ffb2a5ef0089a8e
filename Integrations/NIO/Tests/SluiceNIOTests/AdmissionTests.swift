import Foundation
import NIOCore
import Sluice
import SluiceNIO
import Testing

/// What the server (a process of its own) does with too many clients, clients that never read,
/// and clients that go silent.
@Suite("A server against floods and silent clients", .serialized)
struct AdmissionTests {
  @Test func connectionsBeyondTheLimitAreRefusedAndAdmittedOnceOneCloses() async throws {
    let server = try await ServerProcess(["--max-connections", "3"])
    let port = try #require(server.port)
    let held = (0..<3).map { _ in
      RemotePipeline<Int>(port: port).slowSubscriber(pace: .milliseconds(50))
    }
    #expect(await eventually { held.allSatisfy { $0.received.count >= 1 } })

    let (values, completion) = await RemotePipeline<Int>(port: port).collect()
    #expect(values.isEmpty)
    #expect(
      completion == .failure(.refused("the server is at its limit of 3 connections")),
      "\(String(describing: completion))")
    #expect(
      await eventually { !server.lines(containing: "refused a connection").isEmpty },
      "and it was logged")

    held[0].cancel()
    // The server counts the connection out once it has seen it close; until then a new client
    // may still be refused.
    var admitted: SlowSubscriber<Int>?
    #expect(
      await eventually {
        if let admitted, admitted.completion == nil { return admitted.received.count >= 5 }
        admitted = RemotePipeline<Int>(port: port).slowSubscriber()
        return false
      })
    admitted?.cancel()
    for client in held { client.cancel() }
  }

  @Test func aFloodOfNonReadingClientsCostsBoundedMemoryAndDoesNotDelayANewClient()
    async throws
  {
    // 300 clients that never read. Small kernel buffers (4 KiB asked on both ends) keep the
    // time the server takes to fill them short in a debug build; the server's own memory per
    // connection does not depend on them (pipeline-flood measures the defaults).
    let flood = 300
    let server = try await ServerProcess([
      "--max-connections", "\(flood + 10)", "--read-timeout-ms", "600000",
      "--send-buffer", "4096",
    ])
    let port = try #require(server.port)
    // A first client warms the server up (its event loops, its allocator's first arenas).
    let warmUp = try await RemotePipeline<Int>(port: port).first().firstValue()
    #expect(warmUp == 0)
    #expect(await server.idle())
    let before = try #require(server.residentKiB)

    let clients = try await NonReadingClients(count: flood, port: port, receiveBufferSize: 4096)
    var client: SlowSubscriber<Int>?
    do {
      // Every connection's pipeline runs until its buffers are full, then stops.
      #expect(await eventually(within: 120) { server.subscribed == flood + 1 })
      #expect(await server.idle(), "the server stopped once the buffers were full")
      let after = try #require(server.residentKiB)
      let perClient = (after - before) * 1024 / flood
      print(
        "\(flood) non-reading clients: server resident memory \(before) → \(after) KiB, "
          + "\(perClient) bytes a client; \(server.produced) values produced")
      #expect(perClient <= 256 * 1024)

      // A new client meanwhile: its first value comes at once (the bound here is against a
      // hang, not a timing; pipeline-flood measures it).
      let newClient = RemotePipeline<Int>(port: port).slowSubscriber()
      client = newClient
      #expect(await eventually { newClient.received.count >= 1 })
      let firstValue = try #require(newClient.timeToFirstValue)
      print("first value of a new client during the flood after \(firstValue)")
      #expect(firstValue < .seconds(10))
    } catch {
      Issue.record(error)
    }
    client?.cancel()
    await clients.close()
    #expect(await eventually { server.cancelCount == flood + 2 }, "every pipeline was cancelled")
  }

  @Test func aClientThatSendsNothingIsClosedAfterTheReadTimeout() async throws {
    let server = try await ServerProcess(["--read-timeout-ms", "500"])
    let clients = try await NonReadingClients(count: 3, port: try #require(server.port))
    #expect(await eventually { clients.allClosed }, "the server reset them")
    #expect(await eventually { server.cancelCount == 3 }, "and cancelled their pipelines")
    #expect(
      await eventually { server.lines(containing: "timed out").count == 3 }, "and logged why")
  }

  @Test func aClientWhoseSubscriberPausesIsKeptOpenByItsHeartbeats() async throws {
    // The server's read timeout is 0.6 s; the subscriber takes a value a second, so the client
    // reads nothing for most of each second (its buffers are full); its heartbeats (every
    // 0.1 s) keep the connection open. Without them the server would close it after 0.6 s, as
    // it does for the non-reading clients above.
    let server = try await ServerProcess(["--read-timeout-ms", "600"])
    let client = RemotePipeline<Int>(
      port: try #require(server.port),
      configuration: .init(heartbeatInterval: .milliseconds(100))
    ).slowSubscriber(pace: .seconds(1))
    #expect(await eventually { client.received.count >= 3 })
    #expect(client.completion == nil)
    #expect(!server.sawCancel, "the server kept serving")
    #expect(server.lines(containing: "timed out").isEmpty)
    client.cancel()
    #expect(await eventually { server.sawCancel })
    #expect(client.received.prefix(3) == [0, 1, 2])
  }

  @Test func aClientThatSendsSomethingOtherThanHeartbeatsIsClosedAndLogged() async throws {
    let server = try await ServerProcess([])
    let clients = try await NonReadingClients(count: 1, port: try #require(server.port))
    let channel = try #require(clients.channels.first)
    try await channel.writeAndFlush(ByteBuffer(string: "GET / HTTP/1.1\r\n\r\n"))
    #expect(await eventually { clients.allClosed }, "the server closed it")
    #expect(await eventually { server.sawCancel })
    #expect(
      await eventually { !server.lines(containing: "connection error; closing").isEmpty },
      "and logged why")
  }
}

/// Waits until `value` stays the same for half a second (up to `seconds`); whether it did.
func settled(within seconds: Int = 60, _ value: () -> Int) async -> Bool {
  let deadline = ContinuousClock.now + .seconds(seconds)
  var last = value()
  var since = ContinuousClock.now
  while ContinuousClock.now < deadline {
    try? await Task.sleep(for: .milliseconds(50))
    let now = value()
    if now != last {
      last = now
      since = .now
    } else if ContinuousClock.now - since >= .milliseconds(500) {
      return true
    }
  }
  return false
}
