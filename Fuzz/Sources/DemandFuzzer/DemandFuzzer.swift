import Foundation
import FuzzDriver
import SluiceCore

// `Subscribers.Demand` arithmetic, comparisons and coding against a model that cannot
// overflow: demands are `0...Int.max` or unlimited, and each operation is computed exactly in
// 128 bits, then held to what the type promises (Combine's saturating rules):
// - nothing traps, and no result is negative or beyond `Int.max` unless it is `.unlimited`;
// - a sum or product beyond `Int.max` is `.unlimited`; a difference below zero is `.none`;
//   `.unlimited` stays `.unlimited` whatever is added, subtracted or multiplied; a finite demand
//   minus `.unlimited` is `.none`;
// - a finite demand minus a count so negative that the difference passes `Int.max` is `.none`
//   (Combine's subtraction reports the overflow as nothing left: kept for parity);
// - comparisons order demands as their counts, `.unlimited` above every `Int`;
// - `max`, `description` and `Codable` agree with the value; decoding any JSON number either
//   gives a demand or throws (never a negative demand).
// The input is a program: a start value, then operations, each an opcode byte and an operand.

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzDemand(_ data: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
  var input = FuzzReader(fuzzInput(data, count))
  if input.byte() == 0xFF {
    decodeAnything(input.rest())
    return 0
  }
  var demand = readDemand(&input)
  var steps = 0
  while !input.isAtEnd, steps < 64 {
    steps += 1
    let before = demand
    switch input.choice(12) {
    case 0: demand = checked(before, "+", readDemand(&input)) { $0 + $1 }
    case 1: demand = checked(before, "+", input.int()) { $0 + $1 }
    case 2: demand = checked(before, "-", readDemand(&input)) { $0 - $1 }
    case 3: demand = checked(before, "-", input.int()) { $0 - $1 }
    case 4: demand = checked(before, "*", input.int()) { $0 * $1 }
    case 5:
      let other = readDemand(&input)
      var sum = before
      sum += other
      require(sum == before + other, "\(before) += \(other) gave \(sum), + gives \(before + other)")
      demand = sum
    case 6:
      let count = input.int()
      var difference = before
      difference -= count
      require(difference == before - count, "\(before) -= \(count) gave \(difference)")
      var product = before
      product *= count
      require(product == before * count, "\(before) *= \(count) gave \(product)")
      demand = difference
    case 7: compare(before, readDemand(&input))
    case 8: compare(before, input.int())
    case 9: checkCoding(before)
    case 10: require(before.description == Model(before).description, "description of \(before)")
    default: demand = readDemand(&input)
    }
    require(Model(demand).isValid, "\(demand) is out of range (raw \(Model(demand)))")
  }
  return 0
}

/// A demand read from the input: `.unlimited`, `.none`, a small count or any count.
func readDemand(_ input: inout FuzzReader) -> Subscribers.Demand {
  switch input.choice(4) {
  case 0: return .unlimited
  case 1: return .none
  case 2: return .max(Int(input.byte()))
  default: return .max(input.int() & Int.max)
  }
}

/// A demand as the model sees it: a count that cannot overflow, or unlimited.
struct Model: Equatable, CustomStringConvertible {
  var count: Int128?  // nil: unlimited

  init(_ demand: Subscribers.Demand) { count = demand.max.map { Int128($0) } }
  init(count: Int128?) { self.count = count }

  static let unlimited = Model(count: nil)

  /// What the type promises for an exact result: saturated above, clamped below.
  static func saturating(_ exact: Int128) -> Model {
    if exact < 0 { return Model(count: 0) }
    if exact > Int128(Int.max) { return .unlimited }
    return Model(count: exact)
  }

  var isValid: Bool { count.map { (0...Int128(Int.max)).contains($0) } ?? true }
  var description: String { count.map { "max(\($0))" } ?? "unlimited" }
}

/// `lhs op rhs` on demands, checked against the model.
func checked(
  _ lhs: Subscribers.Demand, _ op: String, _ rhs: Subscribers.Demand,
  _ apply: (Subscribers.Demand, Subscribers.Demand) -> Subscribers.Demand
) -> Subscribers.Demand {
  let result = apply(lhs, rhs)
  let (a, b) = (Model(lhs), Model(rhs))
  let expected: Model
  switch op {
  case "+":
    guard let x = a.count, let y = b.count else {
      expected = .unlimited
      break
    }
    expected = .saturating(x + y)
  default:
    guard let x = a.count else {
      expected = .unlimited
      break
    }
    guard let y = b.count else {
      expected = Model(count: 0)
      break
    }
    expected = .saturating(x - y)
  }
  require(
    Model(result) == expected, "\(lhs) \(op) \(rhs) = \(result), expected \(expected)")
  return result
}

/// `lhs op count` on a demand and an `Int`, checked against the model.
func checked(
  _ lhs: Subscribers.Demand, _ op: String, _ rhs: Int,
  _ apply: (Subscribers.Demand, Int) -> Subscribers.Demand
) -> Subscribers.Demand {
  let result = apply(lhs, rhs)
  let expected: Model
  if let x = Model(lhs).count {
    let y = Int128(rhs)
    switch op {
    case "+": expected = .saturating(x + y)
    case "-":
      // Combine's subtraction reports an overflow (a difference past Int.max, from a negative
      // count) as nothing left.
      expected = x - y > Int128(Int.max) ? Model(count: 0) : .saturating(x - y)
    default: expected = .saturating(x * y)
    }
  } else {
    expected = .unlimited
  }
  require(
    Model(result) == expected, "\(lhs) \(op) \(rhs) = \(result), expected \(expected)")
  return result
}

/// The comparisons of two demands against their counts.
func compare(_ lhs: Subscribers.Demand, _ rhs: Subscribers.Demand) {
  let (a, b) = (Model(lhs).count ?? Int128.max, Model(rhs).count ?? Int128.max)
  require((lhs < rhs) == (a < b), "\(lhs) < \(rhs)")
  require((lhs <= rhs) == (a <= b), "\(lhs) <= \(rhs)")
  require((lhs > rhs) == (a > b), "\(lhs) > \(rhs)")
  require((lhs >= rhs) == (a >= b), "\(lhs) >= \(rhs)")
  require((lhs == rhs) == (a == b), "\(lhs) == \(rhs)")
  require(lhs != rhs || lhs.hashValue == rhs.hashValue, "equal demands \(lhs) hash apart")
}

/// The comparisons of a demand and a count.
func compare(_ lhs: Subscribers.Demand, _ rhs: Int) {
  let (a, b) = (Model(lhs).count ?? Int128.max, Int128(rhs))
  require((lhs < rhs) == (a < b), "\(lhs) < \(rhs)")
  require((lhs <= rhs) == (a <= b), "\(lhs) <= \(rhs)")
  require((lhs > rhs) == (a > b), "\(lhs) > \(rhs)")
  require((lhs >= rhs) == (a >= b), "\(lhs) >= \(rhs)")
  require((lhs == rhs) == (a == b), "\(lhs) == \(rhs)")
  require((lhs != rhs) == (a != b), "\(lhs) != \(rhs)")
  require((rhs < lhs) == (b < a), "\(rhs) < \(lhs)")
  require((rhs <= lhs) == (b <= a), "\(rhs) <= \(lhs)")
  require((rhs > lhs) == (b > a), "\(rhs) > \(lhs)")
  require((rhs >= lhs) == (b >= a), "\(rhs) >= \(lhs)")
  require((rhs == lhs) == (b == a), "\(rhs) == \(lhs)")
  require(lhs.max.map { $0 >= 0 } ?? true, "\(lhs).max is negative")
}

/// A demand encoded and decoded again.
func checkCoding(_ demand: Subscribers.Demand) {
  do {
    let data = try JSONEncoder().encode([demand])
    let decoded = try JSONDecoder().decode([Subscribers.Demand].self, from: data)
    require(decoded == [demand], "\(demand) coded as \(String(decoding: data, as: UTF8.self))")
  } catch {
    propertyFailed("\(demand) does not code: \(error)")
  }
}

/// Any bytes decoded as JSON into demands: a demand in range, or an error.
func decodeAnything(_ bytes: [UInt8]) {
  guard let decoded = try? JSONDecoder().decode([Subscribers.Demand].self, from: Data(bytes))
  else { return }
  for demand in decoded {
    require(Model(demand).isValid, "decoded \(demand) out of range")
  }
}
