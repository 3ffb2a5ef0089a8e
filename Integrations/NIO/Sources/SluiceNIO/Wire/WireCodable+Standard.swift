public import NIOCore

// The standard library's types, as text (what their `description` and `init?(_: String)` read
// and write), with their own encoders and decoders: no `String` is made for an integer, and the
// per-value paths are concrete functions, not the generic defaults.

extension String: WireCodable {
  /// Writes the string's UTF-8 bytes.
  @inlinable
  public func encode(into buffer: inout ByteBuffer) throws {
    buffer.writeString(self)
  }

  /// Reads UTF-8 text; invalid UTF-8 fails (it is not repaired).
  @inlinable
  public init(wirePayload payload: ByteBuffer) throws {
    self = try payload.validUTF8()
  }
}

extension Bool: WireCodable {
  /// Writes `true` or `false`.
  @inlinable
  public func encode(into buffer: inout ByteBuffer) throws {
    buffer.writeStaticString(self ? "true" : "false")
  }

  /// Reads `true` or `false`.
  @inlinable
  public init(wirePayload payload: ByteBuffer) throws {
    switch payload.readableBytesView {
    case let bytes where bytes.elementsEqual("true".utf8): self = true
    case let bytes where bytes.elementsEqual("false".utf8): self = false
    default: throw WireDecodingError.notA(Bool.self, payload)
    }
  }
}

extension Int: WireCodable {
  /// Writes the decimal digits, as `description` does.
  @inlinable public func encode(into buffer: inout ByteBuffer) throws { buffer.writeDecimal(self) }
  /// Reads decimal digits, as `init?(_: String)` does.
  @inlinable public init(wirePayload payload: ByteBuffer) throws { self = try payload.decimal() }
}

extension Int8: WireCodable {
  /// Writes the decimal digits, as `description` does.
  @inlinable public func encode(into buffer: inout ByteBuffer) throws { buffer.writeDecimal(self) }
  /// Reads decimal digits, as `init?(_: String)` does.
  @inlinable public init(wirePayload payload: ByteBuffer) throws { self = try payload.decimal() }
}

extension Int16: WireCodable {
  /// Writes the decimal digits, as `description` does.
  @inlinable public func encode(into buffer: inout ByteBuffer) throws { buffer.writeDecimal(self) }
  /// Reads decimal digits, as `init?(_: String)` does.
  @inlinable public init(wirePayload payload: ByteBuffer) throws { self = try payload.decimal() }
}

extension Int32: WireCodable {
  /// Writes the decimal digits, as `description` does.
  @inlinable public func encode(into buffer: inout ByteBuffer) throws { buffer.writeDecimal(self) }
  /// Reads decimal digits, as `init?(_: String)` does.
  @inlinable public init(wirePayload payload: ByteBuffer) throws { self = try payload.decimal() }
}

extension Int64: WireCodable {
  /// Writes the decimal digits, as `description` does.
  @inlinable public func encode(into buffer: inout ByteBuffer) throws { buffer.writeDecimal(self) }
  /// Reads decimal digits, as `init?(_: String)` does.
  @inlinable public init(wirePayload payload: ByteBuffer) throws { self = try payload.decimal() }
}

extension UInt: WireCodable {
  /// Writes the decimal digits, as `description` does.
  @inlinable public func encode(into buffer: inout ByteBuffer) throws { buffer.writeDecimal(self) }
  /// Reads decimal digits, as `init?(_: String)` does.
  @inlinable public init(wirePayload payload: ByteBuffer) throws { self = try payload.decimal() }
}

extension UInt8: WireCodable {
  /// Writes the decimal digits, as `description` does.
  @inlinable public func encode(into buffer: inout ByteBuffer) throws { buffer.writeDecimal(self) }
  /// Reads decimal digits, as `init?(_: String)` does.
  @inlinable public init(wirePayload payload: ByteBuffer) throws { self = try payload.decimal() }
}

extension UInt16: WireCodable {
  /// Writes the decimal digits, as `description` does.
  @inlinable public func encode(into buffer: inout ByteBuffer) throws { buffer.writeDecimal(self) }
  /// Reads decimal digits, as `init?(_: String)` does.
  @inlinable public init(wirePayload payload: ByteBuffer) throws { self = try payload.decimal() }
}

extension UInt32: WireCodable {
  /// Writes the decimal digits, as `description` does.
  @inlinable public func encode(into buffer: inout ByteBuffer) throws { buffer.writeDecimal(self) }
  /// Reads decimal digits, as `init?(_: String)` does.
  @inlinable public init(wirePayload payload: ByteBuffer) throws { self = try payload.decimal() }
}

extension UInt64: WireCodable {
  /// Writes the decimal digits, as `description` does.
  @inlinable public func encode(into buffer: inout ByteBuffer) throws { buffer.writeDecimal(self) }
  /// Reads decimal digits, as `init?(_: String)` does.
  @inlinable public init(wirePayload payload: ByteBuffer) throws { self = try payload.decimal() }
}

extension Double: WireCodable {
  /// Writes `description` (the shortest text that reads back as the same value).
  @inlinable
  public func encode(into buffer: inout ByteBuffer) throws {
    buffer.writeString(description)
  }

  /// Reads what `init?(_: String)` reads.
  @inlinable
  public init(wirePayload payload: ByteBuffer) throws {
    guard let value = Double(try payload.validUTF8()) else {
      throw WireDecodingError.notA(Double.self, payload)
    }
    self = value
  }
}

extension Float: WireCodable {
  /// Writes `description` (the shortest text that reads back as the same value).
  @inlinable
  public func encode(into buffer: inout ByteBuffer) throws {
    buffer.writeString(description)
  }

  /// Reads what `init?(_: String)` reads.
  @inlinable
  public init(wirePayload payload: ByteBuffer) throws {
    guard let value = Float(try payload.validUTF8()) else {
      throw WireDecodingError.notA(Float.self, payload)
    }
    self = value
  }
}

extension ByteBuffer {
  /// Appends `value`'s decimal digits (and a `-` if it is negative).
  @inlinable
  mutating func writeDecimal<Integer: FixedWidthInteger>(_ value: Integer) {
    // The digits are made from the right, in a 40-byte scratch space (UInt128 has 39).
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 40) { scratch in
      var index = scratch.endIndex
      var magnitude = value.magnitude
      repeat {
        let (quotient, digit) = magnitude.quotientAndRemainder(dividingBy: 10)
        index -= 1
        scratch[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: digit)
        magnitude = quotient
      } while magnitude != 0
      if value < 0 {
        index -= 1
        scratch[index] = UInt8(ascii: "-")
      }
      writeBytes(UnsafeBufferPointer(rebasing: scratch[index...]))
    }
  }

  /// The integer the readable bytes spell in decimal, as `init?(_: String)` reads it: an
  /// optional `+` or `-`, then one or more digits, nothing else, in range.
  @inlinable
  func decimal<Integer: FixedWidthInteger>() throws -> Integer {
    let parsed: Integer? =
      readableBytesView.withContiguousStorageIfAvailable { bytes in
        var index = bytes.startIndex
        var negative = false
        if index < bytes.endIndex,
          bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+")
        {
          negative = bytes[index] == UInt8(ascii: "-")
          index += 1
        }
        guard index < bytes.endIndex else { return nil }
        var value: Integer = 0
        while index < bytes.endIndex {
          let digit = bytes[index] &- UInt8(ascii: "0")
          guard digit < 10 else { return nil }
          let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
          // Negative numbers are built downwards, so that `Integer.min` fits.
          let (next, carry) =
            negative
            ? shifted.subtractingReportingOverflow(Integer(digit))
            : shifted.addingReportingOverflow(Integer(digit))
          guard !overflow, !carry else { return nil }
          value = next
          index += 1
        }
        return value
      } ?? nil
    guard let parsed else { throw WireDecodingError.notA(Integer.self, self) }
    return parsed
  }

  /// The readable bytes as a `String`, if they are valid UTF-8 (not repaired).
  @inlinable
  func validUTF8() throws -> String {
    let text = String(decoding: readableBytesView, as: UTF8.self)
    // Decoding replaces what is not UTF-8 with U+FFFD: the bytes change exactly then.
    guard text.utf8.elementsEqual(readableBytesView) else {
      throw WireDecodingError("\(escapedPrefix) is not UTF-8 text")
    }
    return text
  }
}
