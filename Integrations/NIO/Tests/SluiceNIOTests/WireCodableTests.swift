import Foundation
import NIOCore
import Testing

@testable import SluiceNIO

/// Values round-trip through their payloads exactly, and bad payloads fail with a message.
@Suite("WireCodable")
struct WireCodableTests {
  func roundTrip<Value: WireCodable & Equatable>(_ value: Value) throws -> Value {
    var buffer = ByteBuffer()
    try value.encode(into: &buffer)
    return try Value(wirePayload: buffer)
  }

  func decode<Value: WireCodable>(_ text: String, as type: Value.Type) throws -> Value {
    try Value(wirePayload: ByteBuffer(string: text))
  }

  @Test func integersRoundTripAtTheirLimits() throws {
    for value in [0, 1, -1, 42, Int.min, Int.max] { #expect(try roundTrip(value) == value) }
    for value in [Int8.min, Int8.max, 0] { #expect(try roundTrip(value) == value) }
    for value in [UInt64.min, UInt64.max] { #expect(try roundTrip(value) == value) }
    for value in [UInt8.max, 0] { #expect(try roundTrip(value) == value) }
  }

  @Test func integersReadWhatInitFromStringReads() throws {
    #expect(try decode("+5", as: Int.self) == 5)
    #expect(try decode("-0", as: Int.self) == 0)
    #expect(try decode("0042", as: Int.self) == 42)
    for bad in ["", "-", "+", " 1", "1 ", "12a", "1_000", "9223372036854775808", "0x10"] {
      #expect(Int(bad) == nil, "the standard library agrees: \(bad)")
      #expect(throws: WireDecodingError.self) { try decode(bad, as: Int.self) }
    }
    #expect(throws: WireDecodingError.self) { try decode("256", as: UInt8.self) }
    #expect(throws: WireDecodingError.self) { try decode("-1", as: UInt.self) }
    #expect(try decode("-128", as: Int8.self) == -128)
  }

  @Test func stringsRoundTripAnyTextAndRefuseInvalidUTF8() throws {
    for text in ["", "a\nb", "nul\u{0}", "é🚀", String(repeating: "x", count: 10_000)] {
      #expect(try roundTrip(text) == text)
    }
    #expect(throws: WireDecodingError("\"a\\xFFb\" is not UTF-8 text")) {
      try String(wirePayload: ByteBuffer(bytes: [0x61, 0xFF, 0x62]))
    }
  }

  @Test func floatingPointValuesRoundTripExactly() throws {
    for value in [0.1, -0.0, 1e-300, .greatestFiniteMagnitude, .infinity, 1.0 / 3] {
      #expect(try roundTrip(value) == value)
    }
    #expect(try roundTrip(Double.nan).isNaN)
    #expect(try roundTrip(Float(0.1)) == Float(0.1))
    #expect(try roundTrip(true) && !(try roundTrip(false)))
    #expect(throws: WireDecodingError.self) { try decode("yes", as: Bool.self) }
  }

  struct Reading: Codable, Equatable, WireCodable {
    var sensor: String
    var celsius: Double
  }

  struct Word: LosslessStringConvertible, Equatable, WireCodable {
    var text: String
    init?(_ description: String) {
      guard !description.contains(" ") else { return nil }
      text = description
    }
    var description: String { text }
  }

  @Test func codableTypesAreJSONAndLosslessStringConvertibleTypesAreText() throws {
    let reading = Reading(sensor: "north\n", celsius: 21.5)
    #expect(try roundTrip(reading) == reading)
    var buffer = ByteBuffer()
    try reading.encode(into: &buffer)
    #expect(String(buffer: buffer).hasPrefix("{"))
    #expect(throws: WireDecodingError.self) { try decode("{}", as: Reading.self) }

    #expect(try roundTrip(Word("hello")!) == Word("hello"))
    #expect(throws: WireDecodingError("\"two words\" is not a Word")) {
      try decode("two words", as: Word.self)
    }
  }

  @Test func bytesArriveAsTheyAre() throws {
    let bytes = ByteBuffer(bytes: Array(0...255))
    #expect(try roundTrip(bytes) == bytes)
  }
}
