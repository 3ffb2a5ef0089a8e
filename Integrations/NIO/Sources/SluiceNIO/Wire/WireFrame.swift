public import NIOCore

/// One frame of the wire format: a tag and its payload.
///
/// Every frame is length-prefixed, so a payload may hold any bytes (newlines, NULs, binary) and
/// never reads as a frame boundary:
///
/// | bytes | field |
/// |---|---|
/// | 4 | the frame's length: the tag and the payload, an unsigned big-endian integer ≥ 1 |
/// | 1 | the tag |
/// | length − 1 | the payload |
///
/// | tag | frame | payload | sent by |
/// |---|---|---|---|
/// | 1 | ``Tag/value`` | the value's bytes (``WireCodable``) | the server |
/// | 2 | ``Tag/finished`` | none: the pipeline finished | the server |
/// | 3 | ``Tag/failed`` | the failure's description, UTF-8 | the server |
/// | 4 | ``Tag/refused`` | why the connection is refused (at its limit), UTF-8 | the server |
/// | 5 | ``Tag/heartbeat`` | none: sent after a quiet interval | both sides |
///
/// A frame's *length* is the length field's value (tag and payload, not the field itself); the
/// limits of ``WireFrameDecoder`` and the server count that. Any other tag, a zero length, or
/// a payload after `finished` or `heartbeat` is a malformed frame.
public struct WireFrame: Sendable, Hashable {
  /// What a frame carries.
  public enum Tag: UInt8, Sendable, Hashable, CaseIterable {
    /// A value of the pipeline.
    case value = 1
    /// The pipeline finished: the last frame of a connection.
    case finished = 2
    /// The pipeline failed, with its error's description: the last frame of a connection.
    case failed = 3
    /// The server is at its connection limit; the only frame of the connection.
    case refused = 4
    /// Nothing to send for a while: keeps a quiet connection from looking dead.
    case heartbeat = 5
  }

  /// The bytes before a payload: the 4-byte length field and the tag.
  public static let headerLength = 5

  /// What the frame carries.
  public var tag: Tag
  /// The frame's payload (the bytes after the tag).
  public var payload: ByteBuffer

  /// A frame with `tag` and `payload`.
  public init(_ tag: Tag, payload: ByteBuffer = ByteBuffer()) {
    self.tag = tag
    self.payload = payload
  }

  /// Appends a frame with `tag` to `buffer`, its payload written by `writePayload`.
  ///
  /// If `writePayload` throws, what it and this function wrote stays in `buffer` (a header
  /// whose length field is 0): move the writer index back to where it was before writing on.
  ///
  /// - Returns: the frame's length (tag and payload).
  @inlinable @discardableResult
  public static func write(
    _ tag: Tag, into buffer: inout ByteBuffer,
    payload writePayload: (inout ByteBuffer) throws -> Void
  ) rethrows -> Int {
    let start = buffer.writerIndex
    buffer.writeMultipleIntegers(UInt32(0), tag.rawValue)  // the length is set below
    try writePayload(&buffer)
    return finish(at: start, in: &buffer)
  }

  /// Appends a value frame whose payload is `value`'s encoding (``WireCodable``).
  ///
  /// If the encoding throws, what was written stays in `buffer`, as with
  /// ``write(_:into:payload:)``: move the writer index back before writing on.
  ///
  /// - Returns: the frame's length (tag and payload).
  @inlinable @inline(__always) @discardableResult
  public static func write<Value: WireCodable>(value: Value, into buffer: inout ByteBuffer)
    throws -> Int
  {
    let start = buffer.writerIndex
    buffer.writeMultipleIntegers(UInt32(0), Tag.value.rawValue)  // the length is set below
    try value.encode(into: &buffer)
    return finish(at: start, in: &buffer)
  }

  /// Sets the length field of the frame that starts at `start` and ends at `buffer`'s writer
  /// index: the frame's length (tag and payload).
  @inlinable
  static func finish(at start: Int, in buffer: inout ByteBuffer) -> Int {
    let length = buffer.writerIndex - start - 4
    guard let field = UInt32(exactly: length) else {
      fatalError(
        "API Violation: WireFrame.write: a payload of \(length - 1) bytes does not fit the "
          + "4-byte length field")
    }
    buffer.setInteger(field, at: start)
    return length
  }

  /// Appends a frame with `tag` and no payload.
  @inlinable
  public static func write(_ tag: Tag, into buffer: inout ByteBuffer) {
    write(tag, into: &buffer) { _ in }
  }

  /// Appends a frame with `tag` whose payload is `text` in UTF-8, cut (at a character) to fit
  /// `maximumFrameLength`.
  public static func write(
    _ tag: Tag, text: String, maximumFrameLength: Int, into buffer: inout ByteBuffer
  ) {
    let room = max(0, maximumFrameLength - 1)
    var end = text.utf8.index(
      text.startIndex, offsetBy: min(room, text.utf8.count))
    while end > text.startIndex, String.Index(end, within: text) == nil {
      end = text.utf8.index(before: end)
    }
    write(tag, into: &buffer) { $0.writeSubstring(text[..<end]) }
  }

  /// This frame, appended to `buffer` (length field included).
  public func write(into buffer: inout ByteBuffer) {
    var payload = payload
    Self.write(tag, into: &buffer) { $0.writeBuffer(&payload) }
  }

  /// The payload as UTF-8 text; `nil` when it is not valid UTF-8.
  public var text: String? {
    String(validating: payload.readableBytesView, as: UTF8.self)
  }
}
