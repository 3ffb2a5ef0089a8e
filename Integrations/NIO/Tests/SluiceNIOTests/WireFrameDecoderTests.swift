import NIOCore
import NIOEmbedded
import Testing

@testable import SluiceNIO

/// The decoder on its own, in an `EmbeddedChannel`: exact limits, checks before buffering,
/// frames split across reads and many in one.
@Suite("WireFrameDecoder")
struct WireFrameDecoderTests {
  /// A channel with the decoder, passing heartbeats on when asked.
  func channel(limit: Int, heartbeats: Bool = false) throws -> EmbeddedChannel {
    let channel = EmbeddedChannel()
    try channel.pipeline.syncOperations.addWireFrameDecoder(
      maximumFrameLength: limit, passesHeartbeats: heartbeats)
    return channel
  }

  func bytes(_ tag: UInt8, _ payload: [UInt8]) -> ByteBuffer {
    var buffer = ByteBuffer()
    buffer.writeInteger(UInt32(payload.count + 1))
    buffer.writeInteger(tag)
    buffer.writeBytes(payload)
    return buffer
  }

  /// Every frame the channel passed on, in order.
  func frames(_ channel: EmbeddedChannel) throws -> [WireFrame] {
    var frames: [WireFrame] = []
    while let batch = try channel.readInbound(as: [WireFrame].self) { frames += batch }
    return frames
  }

  @Test func aFrameExactlyAtTheLimitPassesAndOneByteLongerFailsBeforeItsPayload() throws {
    let channel = try channel(limit: 10)
    try channel.writeInbound(bytes(1, Array(repeating: 7, count: 9)))
    #expect(try frames(channel).map(\.payload.readableBytes) == [9])
    // Only the length field of an 11-byte frame: it fails at once, nothing buffered.
    var header = ByteBuffer()
    header.writeInteger(UInt32(11))
    #expect(throws: WireFrameError.frameTooLong(length: 11, limit: 10)) {
      try channel.writeInbound(header)
    }
  }

  @Test func anUnknownTagFailsAsSoonAsItsByteArrives() throws {
    let channel = try channel(limit: 1 << 20)
    var start = ByteBuffer()
    start.writeInteger(UInt32(1000))
    start.writeInteger(UInt8(9))
    #expect(throws: WireFrameError.malformed("unknown tag 9 in a frame of 1000 bytes")) {
      try channel.writeInbound(start)
    }
  }

  @Test func framesSplitAcrossReadsAndManyInOneReadArriveInOrder() throws {
    let channel = try channel(limit: 100)
    var all = ByteBuffer()
    for index in 0..<50 { all.writeImmutableBuffer(bytes(1, Array("\(index)".utf8))) }
    all.writeImmutableBuffer(bytes(2, []))
    // Byte by byte for the first 20 bytes, then the rest at once.
    for _ in 0..<20 { try channel.writeInbound(all.readSlice(length: 1)!) }
    try channel.writeInbound(all)
    let decoded = try frames(channel)
    #expect(decoded.count == 51)
    #expect(decoded.dropLast().map { String(buffer: $0.payload) } == (0..<50).map { "\($0)" })
    #expect(decoded.last?.tag == .finished)
  }

  @Test func framesBeforeABadOneArePassedOnFirst() throws {
    let channel = try channel(limit: 100)
    var buffer = bytes(1, [49])
    buffer.writeImmutableBuffer(bytes(1, [50]))
    buffer.writeInteger(UInt32(0))
    #expect(throws: WireFrameError.malformed("a frame of length 0 (it has no tag)")) {
      try channel.writeInbound(buffer)
    }
    #expect(try frames(channel).map { String(buffer: $0.payload) } == ["1", "2"])
  }

  @Test func heartbeatsAreDroppedUnlessPassedOn() throws {
    for passes in [false, true] {
      let channel = try channel(limit: 100, heartbeats: passes)
      var buffer = bytes(5, [])
      buffer.writeImmutableBuffer(bytes(1, [49]))
      try channel.writeInbound(buffer)
      #expect(try frames(channel).map(\.tag) == (passes ? [.heartbeat, .value] : [.value]))
    }
  }

  @Test func aHeartbeatOrFinishedFrameWithAPayloadIsMalformed() throws {
    let channel = try channel(limit: 100)
    #expect(throws: WireFrameError.malformed("a heartbeat frame with a payload of 2 bytes")) {
      try channel.writeInbound(bytes(5, [1, 2]))
    }
  }

  @Test func theEndOfInputInsideAFrameIsATruncation() throws {
    let channel = try channel(limit: 100)
    var buffer = bytes(1, [49])
    buffer.writeImmutableBuffer(bytes(1, [1, 2, 3, 4]).getSlice(at: 0, length: 7)!)
    try channel.writeInbound(buffer)
    #expect(throws: WireFrameError.truncated(received: 7, expected: 9)) {
      try channel.finish()
    }
    #expect(try frames(channel).map { String(buffer: $0.payload) } == ["1"])
  }

  @Test func writtenFramesReadBack() throws {
    let channel = try channel(limit: 100)
    var buffer = ByteBuffer()
    let length = WireFrame.write(.value, into: &buffer) { $0.writeString("héllo\n") }
    WireFrame.write(
      .failed, text: String(repeating: "é", count: 80), maximumFrameLength: 100, into: &buffer)
    #expect(length == 1 + "héllo\n".utf8.count)
    try channel.writeInbound(buffer)
    let decoded = try frames(channel)
    #expect(decoded.first?.text == "héllo\n")
    // Cut at a character: 49 two-byte characters fit 99 bytes.
    #expect(decoded.last?.text == String(repeating: "é", count: 49))
  }
}
