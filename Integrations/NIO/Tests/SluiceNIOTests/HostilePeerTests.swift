import Foundation
import NIOCore
import Sluice
import SluiceNIO
import Testing

/// What the client makes of hostile or broken servers (each a process of its own on loopback):
/// values that look like frames, frames at and over the limit, unknown tags, truncated frames,
/// servers that go silent.
@Suite("A client against hostile servers", .serialized)
struct HostilePeerTests {
  /// A frame as raw bytes: length field, tag, payload.
  static func frame(_ tag: UInt8, _ payload: [UInt8] = []) -> [UInt8] {
    withUnsafeBytes(of: UInt32(payload.count + 1).bigEndian) { Array($0) } + [tag] + payload
  }

  // MARK: Values that look like frames

  @Test func valuesThatLookLikeFramesOrHoldAnyBytesArriveAsThemselves() async throws {
    // Each of these forged a frame, ended the stream or failed it with the line protocol.
    let strings = [
      "ok", "injected\n.\n", "lost 1", "x\n!forged failure", "x\n=forged value", ".junk", "",
      "nul\u{0}inside", "\r\n\r\n", "ünïcödé 🚀", String(repeating: "\n", count: 1000),
      String(decoding: Self.frame(2), as: UTF8.self), "lost 2",
    ]
    let server = try await ServerProcess([
      "--strings-hex", strings.map { hex(Array($0.utf8)) }.joined(separator: ","),
    ])
    let (values, completion) = await RemotePipeline<String>(port: try #require(server.port))
      .collect()
    #expect(values == strings)
    #expect(completion == .finished)
  }

  @Test func binaryValuesArriveByteForByte() async throws {
    let values: [[UInt8]] = [
      Array(0...255), Self.frame(2), Self.frame(3, Array("forged".utf8)), [0, 0, 0, 0], [],
    ]
    let server = try await ServerProcess([
      "--bytes-hex", values.map { hex($0) }.joined(separator: ","),
    ])
    let (received, completion) = await RemotePipeline<ByteBuffer>(
      port: try #require(server.port)
    ).collect()
    #expect(received.map { Array($0.readableBytesView) } == values)
    #expect(completion == .finished)
  }

  // MARK: The frame length limit

  @Test func aFrameExactlyAtTheLimitArrivesAndOneByteLongerFailsWithFrameTooLong() async throws {
    // Limit 1,000: a frame's length is its tag and payload, so 999 bytes of payload fit.
    let atLimit = String(repeating: "a", count: 999)
    let overLimit = String(repeating: "b", count: 1000)
    let server = try await ServerProcess([
      "--strings-hex",
      [atLimit, overLimit, "after"].map { hex(Array($0.utf8)) }
        .joined(separator: ","),
    ])
    let (values, completion) = await RemotePipeline<String>(
      port: try #require(server.port), configuration: .init(maximumFrameLength: 1000)
    ).collect()
    #expect(values == [atLimit])
    #expect(completion == .failure(.frameTooLong(length: 1001, limit: 1000)))
  }

  @Test func aHugeLengthFieldFailsAsSoonAsItArrivesWithoutWaitingForThePayload() async throws {
    // Four bytes announcing a 4 GiB frame, then silence: the client must not buffer or wait for
    // it (its read timeout is far longer than the test's deadline).
    let server = try await ServerProcess([
      "--raw-hex", hex(Self.frame(1, Array("7".utf8)) + [0xFF, 0xFF, 0xFF, 0xFF]),
      "--then", "silent",
    ])
    let client = RemotePipeline<Int>(
      port: try #require(server.port), configuration: .init(readTimeout: .seconds(600))
    ).slowSubscriber()
    #expect(await eventually { client.completion != nil })
    #expect(client.received == [7])
    #expect(client.completion == .failure(.frameTooLong(length: Int(UInt32.max), limit: 1 << 20)))
    client.cancel()
  }

  @Test func aServerValueLongerThanTheServersLimitEndsTheStreamWithAReason() async throws {
    let server = try await ServerProcess([
      "--max-frame", "100",
      "--strings-hex",
      ["ok", String(repeating: "x", count: 200), "after"]
        .map { hex(Array($0.utf8)) }.joined(separator: ","),
    ])
    let (values, completion) = await RemotePipeline<String>(port: try #require(server.port))
      .collect()
    #expect(values == ["ok"])
    guard case .failure(.serverFailed(let message)) = completion else {
      Issue.record("expected serverFailed, got \(String(describing: completion))")
      return
    }
    #expect(message.contains("maximum frame length of 100 bytes"), "\(message)")
    #expect(await eventually { server.sawCancel }, "the server's pipeline was cancelled")
    #expect(
      await eventually { !server.lines(containing: "a value cannot be sent").isEmpty },
      "and it was logged")
  }

  // MARK: Bytes that are not frames

  @Test(arguments: [
    (UInt8(0), "unknown tag 0"), (UInt8(6), "unknown tag 6"), (UInt8(42), "unknown tag 42"),
    (UInt8(255), "unknown tag 255"),
  ])
  func anUnknownTagIsAMalformedFrame(tag: UInt8, reason: String) async throws {
    let server = try await ServerProcess([
      "--raw-hex", hex(Self.frame(1, Array("1".utf8)) + Self.frame(tag, [1, 2, 3])),
      "--then", "silent",
    ])
    let (values, completion) = await RemotePipeline<Int>(port: try #require(server.port))
      .collect()
    #expect(values == [1])
    #expect(completion == .failure(.malformedFrame("\(reason) in a frame of 4 bytes")))
  }

  @Test func aZeroLengthOrAFinishedFrameWithAPayloadIsMalformed() async throws {
    for (bytes, reason) in [
      ([0, 0, 0, 0] as [UInt8], "a frame of length 0 (it has no tag)"),
      (Self.frame(2, [0]), "a finished frame with a payload of 1 bytes"),
    ] {
      let server = try await ServerProcess(["--raw-hex", hex(bytes), "--then", "silent"])
      let (values, completion) = await RemotePipeline<Int>(port: try #require(server.port))
        .collect()
      #expect(values.isEmpty)
      #expect(completion == .failure(.malformedFrame(reason)))
    }
  }

  @Test func aPayloadThatIsNotAValueIsAMalformedFrame() async throws {
    let server = try await ServerProcess([
      "--raw-hex", hex(Self.frame(1, Array("12".utf8)) + Self.frame(1, Array("1\n2".utf8))),
      "--then", "silent",
    ])
    let (values, completion) = await RemotePipeline<Int>(port: try #require(server.port))
      .collect()
    #expect(values == [12])
    #expect(completion == .failure(.malformedFrame("a value frame: \"1\\n2\" is not a Int")))
  }

  @Test func invalidUTF8IsNotAString() async throws {
    let server = try await ServerProcess([
      "--raw-hex", hex(Self.frame(1, [0x61, 0xFF, 0x62])), "--then", "silent",
    ])
    let (values, completion) = await RemotePipeline<String>(port: try #require(server.port))
      .collect()
    #expect(values.isEmpty)
    #expect(completion == .failure(.malformedFrame("a value frame: \"a\\xFFb\" is not UTF-8 text")))
  }

  @Test func aTruncatedFrameIsADroppedConnection() async throws {
    // A whole frame, then 7 of a frame's 9 bytes, then the server closes.
    let server = try await ServerProcess([
      "--raw-hex",
      hex(Self.frame(1, Array("5".utf8)) + Array(Self.frame(1, Array("6789".utf8)).prefix(7))),
      "--then", "close",
    ])
    let (values, completion) = await RemotePipeline<Int>(port: try #require(server.port))
      .collect()
    #expect(values == [5])
    #expect(completion == .failure(.connectionDropped))
  }

  @Test func aForgedRefusalOrFailureIsReportedAsSuch() async throws {
    let server = try await ServerProcess([
      "--raw-hex", hex(Self.frame(1, Array("3".utf8)) + Self.frame(3, Array("boom\n!x".utf8))),
      "--then", "silent",
    ])
    let (values, completion) = await RemotePipeline<Int>(port: try #require(server.port))
      .collect()
    #expect(values == [3])
    #expect(completion == .failure(.serverFailed("boom\n!x")))
  }

  // MARK: Reads that bring no whole frame

  @Test func aFrameSplitAcrossReadsArrives() async throws {
    // Three bytes of a frame, then (200 ms later) the rest and the completion: the first read
    // brings no whole frame, and the client must ask for the next one.
    let frame = Self.frame(1, Array("12345".utf8))
    let server = try await ServerProcess([
      "--raw-hex", hex(frame.prefix(3)) + "," + hex(frame.dropFirst(3) + Self.frame(2)),
      "--raw-pause-ms", "200", "--then", "silent",
    ])
    let (values, completion) = await RemotePipeline<Int>(
      port: try #require(server.port), configuration: .init(readTimeout: .seconds(30))
    ).collect()
    #expect(values == [12345])
    #expect(completion == .finished)
  }

  @Test func aReadThatBringsOnlyAHeartbeatDoesNotStallTheClient() async throws {
    let server = try await ServerProcess([
      "--raw-hex", hex(Self.frame(5)) + "," + hex(Self.frame(1, Array("7".utf8)) + Self.frame(2)),
      "--raw-pause-ms", "300", "--then", "silent",
    ])
    let (values, completion) = await RemotePipeline<Int>(
      port: try #require(server.port), configuration: .init(readTimeout: .seconds(30))
    ).collect()
    #expect(values == [7])
    #expect(completion == .finished)
  }

  // MARK: Silent servers

  @Test func aServerThatSendsNothingTimesOut() async throws {
    let server = try await ServerProcess(["--raw-hex", "", "--then", "silent"])
    let (values, completion) = await RemotePipeline<Int>(
      port: try #require(server.port), configuration: .init(readTimeout: .seconds(1))
    ).collect()
    #expect(values.isEmpty)
    #expect(completion == .failure(.timedOut(.seconds(1))))
  }

  @Test func aServerStoppedMidStreamTimesOut() async throws {
    // SIGSTOP: the connection stays open and the server's kernel keeps it alive, but nothing
    // more is sent. What was in the buffers arrives; then the read timeout.
    let server = try await ServerProcess([])
    let client = RemotePipeline<Int>(
      port: try #require(server.port), configuration: .init(readTimeout: .seconds(1))
    ).slowSubscriber()
    #expect(await eventually { client.received.count >= 1000 })
    server.stop()
    #expect(await eventually { client.completion != nil }, "the subscriber was told")
    #expect(client.completion == .failure(.timedOut(.seconds(1))))
    let received = client.received
    #expect(received == Array(0..<received.count), "what arrived, arrived once and in order")
  }

  @Test func aQuietPipelineIsKeptAliveByHeartbeats() async throws {
    // A value every 1.5 s, heartbeats every 200 ms, a client timeout of 1 s: the heartbeats,
    // not the values, keep the client from timing out.
    let server = try await ServerProcess([
      "--count", "3", "--interval-ms", "1500", "--heartbeat-ms", "200",
    ])
    let (values, completion) = await RemotePipeline<Int>(
      port: try #require(server.port), configuration: .init(readTimeout: .seconds(1))
    ).collect()
    #expect(values == [0, 1, 2])
    #expect(completion == .finished)
  }

  @Test func aSubscriberWithoutDemandIsNotTimedOut() async throws {
    // The subscriber waits 1.5 s between values, the read timeout is 0.5 s: time without demand
    // (the client is not reading) does not count.
    let server = try await ServerProcess(["--count", "3"])
    let client = RemotePipeline<Int>(
      port: try #require(server.port), configuration: .init(readTimeout: .milliseconds(500))
    ).slowSubscriber(pace: .milliseconds(1500))
    #expect(await eventually { client.completion != nil })
    #expect(client.received == [0, 1, 2])
    #expect(client.completion == .finished)
  }
}
