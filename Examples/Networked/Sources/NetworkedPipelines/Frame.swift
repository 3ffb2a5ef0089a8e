import NIOCore

/// What travels on the wire, one frame a line (UTF-8, `\n`-terminated):
///
/// | line | meaning |
/// |---|---|
/// | `=<value>` | a value, written as its `description` (`LosslessStringConvertible`) |
/// | `.` | the pipeline finished |
/// | `!<message>` | the pipeline failed, with the error's description |
///
/// A connection that ends without `.` or `!` was dropped: the client fails with
/// ``RemotePipelineError/connectionDropped``.
public enum Frame<Value: LosslessStringConvertible & Sendable>: Sendable, Equatable
where Value: Equatable {
  case value(Value)
  case finished
  case failed(String)

  /// The frame as one line, newline included.
  public func write(to buffer: inout ByteBuffer) {
    switch self {
    case .value(let value): buffer.writeString("=\(value)\n")
    case .finished: buffer.writeString(".\n")
    case .failed(let message): buffer.writeString("!\(message.replacing("\n", with: " "))\n")
    }
  }

  /// The frame a line holds (without its newline); `nil` for a line that is none.
  public init?(line: ByteBuffer) {
    var line = line
    guard let text = line.readString(length: line.readableBytes), let kind = text.first else {
      return nil
    }
    switch kind {
    case "=":
      guard let value = Value(String(text.dropFirst())) else { return nil }
      self = .value(value)
    case ".": self = .finished
    case "!": self = .failed(String(text.dropFirst()))
    default: return nil
    }
  }
}

/// Splits the inbound bytes into lines (without their `\n`). A line longer than `maximumLength`
/// closes the connection with an error instead of buffering without bound.
public struct LineDecoder: ByteToMessageDecoder, Sendable {
  public typealias InboundOut = ByteBuffer

  /// The longest line accepted.
  public let maximumLength: Int

  public init(maximumLength: Int = 64 * 1024) {
    self.maximumLength = maximumLength
  }

  public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws
    -> DecodingState
  {
    guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
      if buffer.readableBytes > maximumLength { throw LineTooLong() }
      return .needMoreData
    }
    let length = newline - buffer.readerIndex
    let line = buffer.readSlice(length: length)!
    buffer.moveReaderIndex(forwardBy: 1)
    context.fireChannelRead(wrapInboundOut(line))
    return .continue
  }

  public mutating func decodeLast(
    context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
  ) throws -> DecodingState {
    while try decode(context: context, buffer: &buffer) == .continue {}
    return .needMoreData  // a partial last line is dropped: the connection ended mid-frame
  }

  /// A line longer than the decoder accepts.
  public struct LineTooLong: Error {}
}

// Outbound, each `ByteBuffer` is written as it is: frames are written already terminated.
extension ChannelPipeline.SynchronousOperations {
  /// Adds the line framing: inbound bytes become one `ByteBuffer` a line.
  public func addLineFraming(maximumLength: Int = 64 * 1024) throws {
    try addHandler(ByteToMessageHandler(LineDecoder(maximumLength: maximumLength)))
  }
}
