import Foundation
public import NIOCore

/// A value that crosses a connection as the payload of a ``WireFrame``.
///
/// Conform by writing the two requirements, or take a default:
/// - a `LosslessStringConvertible` type is sent as its `description` in UTF-8 and read back
///   with `init?(_: String)`;
/// - a `Codable` type is sent as JSON;
/// - a type that is both is sent as its `description` (the shorter form).
///
/// The library declares the conformances of `String`, `Bool`, the integer and floating-point
/// types (as text) and `ByteBuffer` (its bytes, as they are). The payload is length-delimited,
/// so any bytes round-trip — newlines, NULs, binary.
///
/// ```swift
/// struct Reading: Codable, WireCodable { var sensor: String; var celsius: Double }
/// // sent as {"sensor":"north","celsius":21.5}
/// ```
public protocol WireCodable: Sendable {
  /// Appends the value's bytes to `buffer`.
  func encode(into buffer: inout ByteBuffer) throws
  /// The value `payload` holds (all of its readable bytes); throws when it holds none.
  init(wirePayload payload: ByteBuffer) throws
}

/// A payload that is not a value of the expected type.
public struct WireDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What is wrong with it.
  public let reason: String

  /// An error saying `reason`.
  public init(_ reason: String) { self.reason = reason }

  public var description: String { reason }

  /// "<the payload's first bytes> is not a <Value>".
  @usableFromInline
  static func notA<Value>(_ type: Value.Type, _ payload: ByteBuffer) -> WireDecodingError {
    WireDecodingError("\(payload.escapedPrefix) is not a \(Value.self)")
  }
}

extension WireCodable where Self: LosslessStringConvertible {
  /// Writes `description` in UTF-8.
  public func encode(into buffer: inout ByteBuffer) throws {
    buffer.writeString(description)
  }

  /// Reads UTF-8 text (invalid UTF-8 fails) and converts it with `init?(_: String)`.
  public init(wirePayload payload: ByteBuffer) throws {
    guard let text = String(validating: payload.readableBytesView, as: UTF8.self) else {
      throw WireDecodingError("\(payload.escapedPrefix) is not UTF-8 text")
    }
    guard let value = Self(text) else { throw WireDecodingError.notA(Self.self, payload) }
    self = value
  }
}

extension WireCodable where Self: Codable {
  /// Writes the value as JSON.
  public func encode(into buffer: inout ByteBuffer) throws {
    buffer.writeBytes(try JSONEncoder().encode(self))
  }

  /// Reads the value from JSON.
  public init(wirePayload payload: ByteBuffer) throws {
    do {
      self = try JSONDecoder().decode(Self.self, from: Data(payload.readableBytesView))
    } catch {
      throw WireDecodingError("\(payload.escapedPrefix) is not a \(Self.self) in JSON: \(error)")
    }
  }
}

extension WireCodable where Self: Codable & LosslessStringConvertible {
  /// Writes `description` in UTF-8 (text wins over JSON for a type that has both).
  public func encode(into buffer: inout ByteBuffer) throws {
    buffer.writeString(description)
  }

  /// Reads UTF-8 text and converts it with `init?(_: String)`.
  public init(wirePayload payload: ByteBuffer) throws {
    guard let text = String(validating: payload.readableBytesView, as: UTF8.self) else {
      throw WireDecodingError("\(payload.escapedPrefix) is not UTF-8 text")
    }
    guard let value = Self(text) else { throw WireDecodingError.notA(Self.self, payload) }
    self = value
  }
}

extension ByteBuffer: WireCodable {
  /// Writes the buffer's readable bytes as they are.
  public func encode(into buffer: inout ByteBuffer) throws {
    buffer.writeImmutableBuffer(self)
  }

  /// The payload's bytes, as they are.
  public init(wirePayload payload: ByteBuffer) throws {
    self = payload
  }
}

extension ByteBuffer {
  /// The first 64 readable bytes, quoted, with anything but printable ASCII escaped — for
  /// messages about bytes that came from the network.
  @usableFromInline
  var escapedPrefix: String {
    var text = "\""
    for byte in readableBytesView.prefix(64) {
      switch byte {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"): text += "\\" + String(UnicodeScalar(byte))
      case 0x20..<0x7F: text.unicodeScalars.append(UnicodeScalar(byte))
      case UInt8(ascii: "\n"): text += "\\n"
      default: text += "\\x" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
      }
    }
    text += readableBytes > 64 ? "\"… (\(readableBytes) bytes)" : "\""
    return text
  }
}

extension String {
  fileprivate func leftPadded(to width: Int) -> String {
    String(repeating: "0", count: max(0, width - count)) + self
  }
}
