import FuzzDriver
import NIOCore
import NIOEmbedded
import SluiceNIO

// SluiceNIO's frame decoder (`WireFrameDecoder`, what a client reads a server's bytes with) on
// any bytes, arriving in any reads, against a model of the wire format written from its table
// (`WireFrame`'s doc comment), with what must hold:
// - it never keeps more than one frame's worth of bytes: after every read it accepted, what it
//   holds is the start of a frame no longer than the limit (at most 3 + limit bytes);
// - it passes on exactly the model's frames, in order, heartbeats only when asked;
// - malformed input (a zero length, a length over the limit, an unknown tag, a payload after
//   `finished` or `heartbeat`) is an error as soon as its bytes have arrived, never silence; a
//   stream that ends inside a frame is `truncated` with the counts the model gives;
// - NIO's own `ByteToMessageHandler` around the decoder says the same;
// - each value frame's payload decodes as the standard types (`WireCodable`) exactly when
//   their own `init?(_: String)` reads its text, to the same value, and encodes back to it.
// The input: a byte choosing the limit and whether heartbeats pass, a byte giving the number of
// read sizes and that many sizes, then the bytes on the wire.

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzFrames(_ data: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
  var input = FuzzReader(fuzzInput(data, count))
  let first = input.byte()
  let limits = [1, 2, 3, 5, 8, 16, 64, 255, 4096, Int(UInt32.max)]
  let limit = limits[Int(first & 0x0F) % limits.count]
  let passesHeartbeats = first & 0x10 != 0
  let reads = (0..<input.choice(4)).map { _ in 1 + Int(input.byte()) }
  let wire = input.rest()
  let chunks = split(wire, into: reads.isEmpty ? [max(1, wire.count)] : reads)

  let direct = runDecoder(chunks, limit: limit, passesHeartbeats: passesHeartbeats)
  let handled = runHandler(chunks, limit: limit, passesHeartbeats: passesHeartbeats)
  require(
    direct == handled,
    "the decoder alone and in a ByteToMessageHandler disagree on \(wire) in reads of \(reads):"
      + " \(direct) vs \(handled)")
  let expected = model(wire, limit: limit, passesHeartbeats: passesHeartbeats)
  require(
    direct.frames == expected.frames,
    "limit \(limit), \(wire) in reads of \(reads): frames \(direct.frames), expected "
      + "\(expected.frames)")
  require(
    direct.error.map(Kind.init) == expected.error.map(Kind.init),
    "limit \(limit), \(wire) in reads of \(reads): \(String(describing: direct.error)), expected "
      + "\(String(describing: expected.error))")
  if case .malformed(let reason) = direct.error {
    require(!reason.isEmpty, "a malformed frame reported without a reason")
  }
  // Reported at the read that brought the bytes showing it (the end of input for `truncated`).
  let expectedRead = expected.errorAt.map { needed in
    var read = 0
    var total = 0
    for chunk in chunks {
      total += chunk.count
      if total >= needed { break }
      read += 1
    }
    return read
  }
  require(
    direct.errorRead == expectedRead,
    "limit \(limit), \(wire) in reads of \(reads): \(String(describing: direct.error)) reported "
      + "at read \(String(describing: direct.errorRead)), its bytes were all there at read "
      + "\(String(describing: expectedRead))")
  for frame in direct.frames where frame.tag == .value {
    checkValues(frame.payload)
  }
  return 0
}

/// What a decoder made of a stream: its frames, and the error it ended with and at which read
/// (the number of reads before it; as many as there were for the end of input).
struct Outcome: Equatable, CustomStringConvertible {
  var frames: [WireFrame] = []
  var error: WireFrameError?
  var errorRead: Int?
  /// The model's: the number of bytes that show the error.
  var errorAt: Int?

  var description: String {
    "\(frames.map { "\($0.tag)(\($0.payload.readableBytes))" }) then \(String(describing: error))"
  }
}

/// An error without its wording: a malformed frame's reason is the decoder's to word.
enum Kind: Equatable {
  case frameTooLong(length: Int, limit: Int)
  case malformed
  case truncated(received: Int, expected: Int)

  init(_ error: WireFrameError) {
    switch error {
    case .frameTooLong(let length, let limit): self = .frameTooLong(length: length, limit: limit)
    case .malformed: self = .malformed
    case .truncated(let received, let expected):
      self = .truncated(received: received, expected: expected)
    }
  }
}

/// `bytes` cut into reads of `sizes` (repeated), the last read what is left.
func split(_ bytes: [UInt8], into sizes: [Int]) -> [[UInt8]] {
  var chunks: [[UInt8]] = []
  var start = 0
  var index = 0
  while start < bytes.count {
    let end = min(bytes.count, start + sizes[index % sizes.count])
    chunks.append(Array(bytes[start..<end]))
    start = end
    index += 1
  }
  return chunks
}

/// Collects the decoder's context, through which it passes its frames on.
final class ContextHolder: ChannelInboundHandler {
  typealias InboundIn = ByteBuffer
  var context: ChannelHandlerContext?

  func handlerAdded(context: ChannelHandlerContext) { self.context = context }
  func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }
}

/// The decoder called as `ByteToMessageHandler` calls it, on a buffer this function owns, so
/// that what it keeps between reads can be measured.
func runDecoder(_ chunks: [[UInt8]], limit: Int, passesHeartbeats: Bool) -> Outcome {
  let channel = EmbeddedChannel()
  defer { _ = try? channel.finish() }
  let holder = ContextHolder()
  try! channel.pipeline.syncOperations.addHandler(holder)
  let context = holder.context!
  var decoder = WireFrameDecoder(maximumFrameLength: limit, passesHeartbeats: passesHeartbeats)
  var buffer = ByteBuffer()
  var outcome = Outcome()
  func collect() {
    while let frames = try! channel.readInbound(as: [WireFrame].self) {
      require(!frames.isEmpty, "an empty batch of frames was passed on")
      outcome.frames += frames
    }
  }
  var read = 0
  do {
    for chunk in chunks {
      buffer.writeBytes(chunk)
      let state = try decoder.decode(context: context, buffer: &buffer)
      require(state == .needMoreData, "decode returned \(state) (it decodes whole reads)")
      collect()
      require(
        buffer.readableBytes <= 3 + limit,
        "after a read the decoder holds \(buffer.readableBytes) bytes, more than a frame of "
          + "\(limit) bytes needs (\(3 + limit))")
      if buffer.readableBytes >= 4 {
        let length = Int(buffer.getInteger(at: buffer.readerIndex, as: UInt32.self)!)
        require(
          buffer.readableBytes < 4 + length,
          "the decoder keeps a whole frame of \(length) bytes undecoded")
      }
      read += 1
    }
    _ = try decoder.decodeLast(context: context, buffer: &buffer, seenEOF: true)
    collect()
  } catch let error as WireFrameError {
    collect()
    outcome.error = error
    outcome.errorRead = read
  } catch {
    propertyFailed("the decoder threw \(error), not a WireFrameError")
  }
  return outcome
}

/// The decoder inside NIO's `ByteToMessageHandler` on an embedded channel, as a client runs it.
func runHandler(_ chunks: [[UInt8]], limit: Int, passesHeartbeats: Bool) -> Outcome {
  let channel = EmbeddedChannel()
  try! channel.pipeline.syncOperations.addWireFrameDecoder(
    maximumFrameLength: limit, passesHeartbeats: passesHeartbeats)
  var outcome = Outcome()
  func collect() {
    while let frames = try! channel.readInbound(as: [WireFrame].self) {
      outcome.frames += frames
    }
  }
  var read = 0
  do {
    for chunk in chunks {
      try channel.writeInbound(ByteBuffer(bytes: chunk))
      collect()
      read += 1
    }
    _ = try channel.finish()
    collect()
  } catch let error as WireFrameError {
    collect()
    outcome.error = error
    outcome.errorRead = read
    _ = try? channel.finish()
  } catch {
    propertyFailed("the handler threw \(error), not a WireFrameError")
  }
  return outcome
}

/// The wire format read from its table: length (4 bytes, big-endian, ≥ 1, ≤ `limit`), tag
/// (1...5), payload (none for `finished` and `heartbeat`); each check made as soon as its bytes
/// are there, the end inside a frame `truncated`.
func model(_ bytes: [UInt8], limit: Int, passesHeartbeats: Bool) -> Outcome {
  var outcome = Outcome()
  var offset = 0
  while offset < bytes.count {
    let left = bytes.count - offset
    guard left >= 4 else {
      return outcome.failing(.truncated(received: left, expected: 4), at: bytes.count + 1)
    }
    let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
    guard length >= 1 else { return outcome.failing(.malformed("length 0"), at: offset + 4) }
    guard length <= limit else {
      return outcome.failing(.frameTooLong(length: length, limit: limit), at: offset + 4)
    }
    guard left >= 5 else {
      return outcome.failing(.truncated(received: left, expected: 4 + length), at: bytes.count + 1)
    }
    guard (1...5).contains(bytes[offset + 4]), let tag = WireFrame.Tag(rawValue: bytes[offset + 4])
    else { return outcome.failing(.malformed("unknown tag"), at: offset + 5) }
    if length > 1, tag == .finished || tag == .heartbeat {
      return outcome.failing(.malformed("a payload"), at: offset + 5)
    }
    guard left >= 4 + length else {
      return outcome.failing(.truncated(received: left, expected: 4 + length), at: bytes.count + 1)
    }
    let payload = ByteBuffer(bytes: bytes[offset + 5..<offset + 4 + length])
    if tag != .heartbeat || passesHeartbeats {
      outcome.frames.append(WireFrame(tag, payload: payload))
    }
    offset += 4 + length
  }
  return outcome
}

extension Outcome {
  /// These frames, then `error`, shown by the first `needed` bytes (past the end: at the end).
  func failing(_ error: WireFrameError, at needed: Int) -> Outcome {
    var outcome = self
    outcome.error = error
    outcome.errorAt = needed
    return outcome
  }
}

/// A value frame's payload read as each standard type, against the type's own text parsing.
func checkValues(_ payload: ByteBuffer) {
  let text = String(validating: payload.readableBytesView, as: UTF8.self)
  check(String.self, payload, expected: text)
  check(Bool.self, payload, expected: text.flatMap { ["true": true, "false": false][$0] })
  check(Int.self, payload, expected: text.flatMap { Int($0) })
  check(Int8.self, payload, expected: text.flatMap { Int8($0) })
  check(Int16.self, payload, expected: text.flatMap { Int16($0) })
  check(Int32.self, payload, expected: text.flatMap { Int32($0) })
  check(Int64.self, payload, expected: text.flatMap { Int64($0) })
  check(UInt.self, payload, expected: text.flatMap { UInt($0) })
  check(UInt8.self, payload, expected: text.flatMap { UInt8($0) })
  check(UInt16.self, payload, expected: text.flatMap { UInt16($0) })
  check(UInt32.self, payload, expected: text.flatMap { UInt32($0) })
  check(UInt64.self, payload, expected: text.flatMap { UInt64($0) })
  let double = try? Double(wirePayload: payload)
  let expectedDouble = text.flatMap { Double($0) }
  require(
    double == expectedDouble || (double?.isNaN == true && expectedDouble?.isNaN == true),
    "\(payload.readableBytesView.map { $0 }) read as Double: \(String(describing: double)), "
      + "Double(text): \(String(describing: expectedDouble))")
}

/// `payload` read as `Value`: the value `expected` (`nil`: an error), which encodes to bytes
/// that read back as itself.
func check<Value: WireCodable & Equatable>(
  _ type: Value.Type, _ payload: ByteBuffer, expected: Value?
) {
  let value: Value?
  do {
    value = try Value(wirePayload: payload)
  } catch let error as WireDecodingError {
    require(!error.reason.isEmpty, "a \(Value.self) decoding error without a reason")
    value = nil
  } catch {
    propertyFailed("reading a \(Value.self) threw \(error), not a WireDecodingError")
  }
  require(
    value == expected,
    "\(payload.readableBytesView.map { $0 }) read as \(Value.self): \(String(describing: value))"
      + ", its own parser: \(String(describing: expected))")
  guard let value else { return }
  var encoded = ByteBuffer()
  do {
    try value.encode(into: &encoded)
    let decoded = try Value(wirePayload: encoded)
    require(decoded == value, "\(Value.self) \(value) encodes to bytes that read \(decoded)")
  } catch {
    propertyFailed("\(Value.self) \(value) does not encode and read back: \(error)")
  }
}
