import Foundation
import SluiceCore
import Testing

@Suite("Subscribers.Demand")
struct DemandTests {
  typealias Demand = Subscribers.Demand

  @Test func constructionAndMax() {
    #expect(Demand.none == .max(0))
    #expect(Demand.none.max == 0)
    #expect(Demand.max(42).max == 42)
    #expect(Demand.unlimited.max == nil)
    #expect(Demand.max(Int.max) != .unlimited)
  }

  @Test func description() {
    #expect(Demand.none.description == "max(0)")
    #expect(Demand.max(42).description == "max(42)")
    #expect(Demand.unlimited.description == "unlimited")
  }

  @Test func addition() {
    #expect(Demand.max(42) + .unlimited == .unlimited)
    #expect(Demand.unlimited + .max(42) == .unlimited)
    #expect(Demand.max(100) + .max(42) == .max(142))
    #expect(Demand.max(81) + 42 == .max(123))
    #expect(Demand.unlimited + 42 == .unlimited)
    #expect(Demand.max(Int.max) + 1 == .unlimited, "overflow saturates to unlimited")
    #expect(Demand.max(Int.max) + .max(1) == .unlimited)
    var demand = Demand.none
    demand += .max(1)
    demand += 21
    #expect(demand == .max(22))
    demand += .unlimited
    demand += 10
    #expect(demand == .unlimited)
  }

  @Test func subtraction() {
    #expect(Demand.max(42) - .unlimited == .none)
    #expect(Demand.unlimited - .unlimited == .unlimited)
    #expect(Demand.unlimited - .max(42) == .unlimited)
    #expect(Demand.max(100) - .max(42) == .max(58))
    #expect(Demand.max(81) - 42 == .max(39))
    #expect(Demand.unlimited - 42 == .unlimited)
    #expect(Demand.max(1) - 5 == .none, "negative results clamp to none")
    #expect(Demand.max(1) - .max(5) == .none)
    #expect(Demand.max(Int.max) - (-1) == .none, "overflow clamps to none")
    var demand = Demand.max(100)
    demand -= .max(1)
    demand -= 21
    #expect(demand == .max(78))
    demand -= .unlimited
    #expect(demand == .none)
  }

  @Test func multiplication() {
    #expect(Demand.max(42) * 2 == .max(84))
    #expect(Demand.unlimited * Int.max == .unlimited)
    #expect(Demand.max(Int.max) * 2 == .unlimited)
    var demand = Demand.max(20)
    demand *= 2
    #expect(demand == .max(40))
    demand = .none
    demand *= 10
    #expect(demand == .none)
  }

  @Test func comparisons() {
    #expect(!(Demand.unlimited < .unlimited))
    #expect(Demand.unlimited <= .unlimited && Demand.unlimited >= .unlimited)
    #expect(Demand.unlimited > .max(42) && Demand.max(42) < .unlimited)
    #expect(Demand.unlimited > 42 && Demand.unlimited >= 42)
    #expect(!(Demand.unlimited < 42) && !(Demand.unlimited <= 42) && Demand.unlimited != 42)
    #expect(42 < Demand.unlimited && 42 <= Demand.unlimited && !(42 > Demand.unlimited))
    #expect(Demand.max(42) < 100 && Demand.max(142) > 100 && Demand.max(100) == 100)
    #expect(Demand.max(100) <= 100 && Demand.max(100) >= 100 && !(Demand.max(100) != 100))
    #expect(42 < Demand.max(100) && 142 > Demand.max(100) && 100 == Demand.max(100))
    #expect(100 >= Demand.max(100) && 100 <= Demand.max(100) && !(100 != Demand.max(100)))
    #expect(Demand.max(42) < .max(100) && Demand.max(142) > .max(100))
    #expect(Demand.none == 0 && Demand.none != -1)
  }

  @Test func codable() throws {
    struct Wrapper: Codable, Equatable { var value: Demand }
    let encoder = JSONEncoder()
    #expect(
      String(decoding: try encoder.encode(Wrapper(value: .max(42))), as: UTF8.self)
        == #"{"value":42}"#)
    #expect(
      String(decoding: try encoder.encode(Wrapper(value: .unlimited)), as: UTF8.self)
        == #"{"value":\#(UInt(Int.max) + 1)}"#)
    let decoder = JSONDecoder()
    #expect(try decoder.decode(Wrapper.self, from: Data(#"{"value":7}"#.utf8)).value == .max(7))
    #expect(
      try decoder.decode(Wrapper.self, from: Data(#"{"value":\#(UInt.max)}"#.utf8)).value
        == .unlimited)
    #expect(throws: DecodingError.self) {
      try decoder.decode(Wrapper.self, from: Data(#"{"value":-1}"#.utf8))
    }
  }

  @Test func negativeDemandTrapsWithAClearMessage() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let count = Int(CommandLine.arguments.count) - 100  // negative, not constant-folded
      _ = Subscribers.Demand.max(count)
    }
    let message = standardError(of: result)
    #expect(message.contains("API Violation: Subscribers.Demand.max("))
    #expect(message.contains("demand must not be negative"))
  }
}

@Suite("Subscribers.Completion")
struct CompletionTests {
  @Test func equalityAndHashing() {
    let finished = Subscribers.Completion<TestError>.finished
    #expect(finished == .finished)
    #expect(
      Subscribers.Completion<TestError>.failure(TestError(code: 1)) != .failure(TestError(code: 2)))
    #expect(Set([finished, .finished, .failure(TestError())]).count == 2)
  }

  @Test func codable() throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    let finished = Subscribers.Completion<TestError>.finished
    let failure = Subscribers.Completion<TestError>.failure(TestError(code: 3))
    #expect(String(decoding: try encoder.encode(finished), as: UTF8.self) == #"{"success":true}"#)
    #expect(
      String(decoding: try encoder.encode(failure), as: UTF8.self)
        == #"{"error":{"code":3},"success":false}"#)
    let decoder = JSONDecoder()
    #expect(
      try decoder.decode(Subscribers.Completion<TestError>.self, from: try encoder.encode(failure))
        == failure)
  }
}

@Suite("CombineIdentifier")
struct CombineIdentifierTests {
  @Test func uniqueAndStable() {
    #expect(CombineIdentifier() != CombineIdentifier())
    let object = TestSubscriptionObject()
    #expect(CombineIdentifier(object) == CombineIdentifier(object))
    #expect(object.combineIdentifier == CombineIdentifier(object))
    #expect(CombineIdentifier().description.hasPrefix("0x"))
  }
}

private final class TestSubscriptionObject: CustomCombineIdentifierConvertible {}
