public import NIOCore

/// Why inbound bytes are not ``WireFrame``s.
public enum WireFrameError: Error, Hashable, Sendable, CustomStringConvertible {
  /// A length field announced a frame longer than the decoder accepts. Raised as soon as the
  /// field is read, before any of the frame's payload is buffered.
  case frameTooLong(length: Int, limit: Int)
  /// Bytes that are not a frame: an unknown tag, a zero length, a payload where none belongs.
  case malformed(String)
  /// The connection ended inside a frame: `received` of the `expected` bytes (header included)
  /// had arrived.
  case truncated(received: Int, expected: Int)

  public var description: String {
    switch self {
    case .frameTooLong(let length, let limit):
      "a frame of \(length) bytes is longer than the limit of \(limit) bytes"
    case .malformed(let reason): "malformed frame: \(reason)"
    case .truncated(let received, let expected):
      "the connection ended inside a frame (\(received) of \(expected) bytes)"
    }
  }
}

/// Splits inbound bytes into ``WireFrame``s: NIO's `ByteToMessageDecoder` with a 4-byte
/// big-endian length field (swift-nio-extras' `LengthFieldBasedFrameDecoder` reads the same
/// field, but has no maximum length).
///
/// **Bounds**: a length above `maximumFrameLength` fails with
/// ``WireFrameError/frameTooLong(length:limit:)`` as soon as its 4 bytes have arrived, and an
/// unknown tag with ``WireFrameError/malformed(_:)`` as soon as its byte has, so the decoder
/// never buffers more than one frame of at most `maximumFrameLength` bytes plus one read. A
/// frame of exactly `maximumFrameLength` is accepted.
///
/// **Batches**: each call decodes every complete frame the buffered bytes hold and passes them
/// on as one array (one element per socket read, not per frame), in order. Frames decoded before
/// a bad one are passed on before the error. Heartbeats are dropped here unless
/// `passesHeartbeats`. At the end of input, leftover bytes fail with
/// ``WireFrameError/truncated(received:expected:)``.
public struct WireFrameDecoder: ByteToMessageDecoder, Sendable {
  public typealias InboundOut = [WireFrame]

  /// The longest frame accepted (its length field: tag and payload).
  public let maximumFrameLength: Int
  /// Whether heartbeat frames are passed on (or dropped here).
  public let passesHeartbeats: Bool

  /// A decoder accepting frames of up to `maximumFrameLength` bytes (tag and payload).
  public init(maximumFrameLength: Int, passesHeartbeats: Bool = false) {
    guard (1...Int(UInt32.max)).contains(maximumFrameLength) else {
      fatalError(
        "API Violation: WireFrameDecoder(maximumFrameLength: \(maximumFrameLength)): the "
          + "limit must be between 1 and \(UInt32.max)")
    }
    self.maximumFrameLength = maximumFrameLength
    self.passesHeartbeats = passesHeartbeats
  }

  public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws
    -> DecodingState
  {
    var frames: [WireFrame] = []
    do {
      while let frame = try next(&buffer) {
        if frame.tag == .heartbeat && !passesHeartbeats { continue }
        frames.append(frame)
      }
    } catch {
      if !frames.isEmpty { context.fireChannelRead(wrapInboundOut(frames)) }
      throw error
    }
    if !frames.isEmpty { context.fireChannelRead(wrapInboundOut(frames)) }
    return .needMoreData
  }

  public mutating func decodeLast(
    context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
  ) throws -> DecodingState {
    _ = try decode(context: context, buffer: &buffer)
    if buffer.readableBytes > 0 {
      let expected =
        buffer.getInteger(at: buffer.readerIndex, as: UInt32.self).map { Int($0) + 4 } ?? 4
      throw WireFrameError.truncated(received: buffer.readableBytes, expected: expected)
    }
    return .needMoreData
  }

  /// The next complete frame, consumed; `nil` when it has not all arrived. Checks the length
  /// and the tag as soon as their bytes are there.
  func next(_ buffer: inout ByteBuffer) throws(WireFrameError) -> WireFrame? {
    guard let field = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else {
      return nil
    }
    let length = Int(field)
    guard length > 0 else { throw .malformed("a frame of length 0 (it has no tag)") }
    guard length <= maximumFrameLength else {
      throw .frameTooLong(length: length, limit: maximumFrameLength)
    }
    guard let tagByte = buffer.getInteger(at: buffer.readerIndex + 4, as: UInt8.self) else {
      return nil
    }
    guard let tag = WireFrame.Tag(rawValue: tagByte) else {
      throw .malformed("unknown tag \(tagByte) in a frame of \(length) bytes")
    }
    if length > 1, tag == .finished || tag == .heartbeat {
      throw .malformed("a \(tag) frame with a payload of \(length - 1) bytes")
    }
    guard buffer.readableBytes >= 4 + length else { return nil }
    buffer.moveReaderIndex(forwardBy: WireFrame.headerLength)
    return WireFrame(tag, payload: buffer.readSlice(length: length - 1)!)
  }
}

extension ChannelPipeline.SynchronousOperations {
  /// Adds a ``WireFrameDecoder``: inbound bytes become arrays of ``WireFrame``s.
  public func addWireFrameDecoder(maximumFrameLength: Int, passesHeartbeats: Bool = false) throws {
    try addHandler(
      ByteToMessageHandler(
        WireFrameDecoder(
          maximumFrameLength: maximumFrameLength, passesHeartbeats: passesHeartbeats)))
  }
}
