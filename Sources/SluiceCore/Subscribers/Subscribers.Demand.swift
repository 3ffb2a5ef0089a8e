extension Subscribers {
  /// A requested number of items, sent to a publisher from a subscriber through the subscription,
  /// as in Combine.
  ///
  /// Arithmetic saturates like Combine's: anything added to or multiplied into `.unlimited` stays
  /// `.unlimited`; an overflowing sum or product becomes `.unlimited`; a difference that would be
  /// negative is clamped to `.none`; subtracting `.unlimited` from a finite demand gives `.none`.
  ///
  /// ```swift
  /// print(Subscribers.Demand.max(3) + .max(2))   // max(5)
  /// print(Subscribers.Demand.max(1) - 5)         // max(0)
  /// print(Subscribers.Demand.unlimited - 1)      // unlimited
  /// ```
  public struct Demand: Equatable, Comparable, Hashable, Codable, CustomStringConvertible,
    Sendable
  {
    /// `0...Int.max` for finite demand; `Int.max + 1` for `.unlimited`.
    @usableFromInline
    let rawValue: UInt

    @inlinable
    static var unlimitedRawValue: UInt { UInt(Int.max) + 1 }

    @inlinable
    init(rawValue: UInt) {
      self.rawValue = Swift.min(Demand.unlimitedRawValue, rawValue)
    }

    // `none` and `unlimited` are computed (Combine declares them `static let`; reading them is
    // the same): a stored static is reached through a lazy-initialisation accessor call, which
    // showed up on every value of an operator chain.

    /// A request for as many values as the publisher can produce.
    @inlinable
    public static var unlimited: Demand { Demand(rawValue: unlimitedRawValue) }

    /// A request for no elements from the publisher; the same as `.max(0)`.
    @inlinable
    public static var none: Demand { Demand(rawValue: 0) }

    /// A request for at most `value` elements. Traps when `value` is negative.
    @inlinable
    public static func max(_ value: Int) -> Demand {
      if value < 0 { negativeDemand(value) }
      return Demand(rawValue: UInt(value))
    }

    @usableFromInline
    static func negativeDemand(_ value: Int) -> Never { Violation.negativeDemand(value) }

    /// The number of requested values, or `nil` for `.unlimited`.
    @inlinable
    public var max: Int? { rawValue == Demand.unlimitedRawValue ? nil : Int(rawValue) }

    public var description: String {
      self == .unlimited ? "unlimited" : "max(\(rawValue))"
    }

    // MARK: Addition

    /// The sum of two demands; `.unlimited` plus anything is `.unlimited`.
    @inlinable
    public static func + (lhs: Demand, rhs: Demand) -> Demand {
      if lhs == .unlimited || rhs == .unlimited { return .unlimited }
      let (sum, overflow) = lhs.rawValue.addingReportingOverflow(rhs.rawValue)
      return overflow ? .unlimited : Demand(rawValue: sum)
    }

    /// Adds a demand to a demand; `.unlimited` stays `.unlimited`.
    @inlinable
    public static func += (lhs: inout Demand, rhs: Demand) { lhs = lhs + rhs }

    /// A demand plus a count (a negative count subtracts, never below `.none`); `.unlimited` stays
    /// `.unlimited`.
    @inlinable
    public static func + (lhs: Demand, rhs: Int) -> Demand {
      if lhs == .unlimited { return .unlimited }
      let (sum, overflow) = Int(lhs.rawValue).addingReportingOverflow(rhs)
      if overflow { return rhs > 0 ? .unlimited : .none }
      return sum < 0 ? .none : Demand(rawValue: UInt(sum))
    }

    /// Adds a count to a demand; `.unlimited` stays `.unlimited`.
    @inlinable
    public static func += (lhs: inout Demand, rhs: Int) { lhs = lhs + rhs }

    // MARK: Subtraction

    /// The difference of two demands, never below `.none`; `.unlimited` minus a finite demand stays
    /// `.unlimited`.
    @inlinable
    public static func - (lhs: Demand, rhs: Demand) -> Demand {
      if lhs == .unlimited { return .unlimited }
      if rhs == .unlimited { return .none }
      return lhs.rawValue >= rhs.rawValue ? Demand(rawValue: lhs.rawValue - rhs.rawValue) : .none
    }

    /// Subtracts a demand, never below `.none`; `.unlimited` stays `.unlimited`.
    @inlinable
    public static func -= (lhs: inout Demand, rhs: Demand) { lhs = lhs - rhs }

    /// A demand minus a count, never below `.none`; `.unlimited` stays `.unlimited`.
    @inlinable
    public static func - (lhs: Demand, rhs: Int) -> Demand {
      if lhs == .unlimited { return .unlimited }
      let (difference, overflow) = Int(lhs.rawValue).subtractingReportingOverflow(rhs)
      if overflow { return .none }
      return difference < 0 ? .none : Demand(rawValue: UInt(difference))
    }

    /// Subtracts a count from a demand, never below `.none`; `.unlimited` stays `.unlimited`.
    @inlinable
    public static func -= (lhs: inout Demand, rhs: Int) { lhs = lhs - rhs }

    // MARK: Multiplication

    /// A demand multiplied by a count; `.unlimited` stays `.unlimited`.
    @inlinable
    public static func * (lhs: Demand, rhs: Int) -> Demand {
      if lhs == .unlimited { return .unlimited }
      let (product, overflow) = Int(lhs.rawValue).multipliedReportingOverflow(by: rhs)
      if overflow { return rhs > 0 ? .unlimited : .none }
      return product < 0 ? .none : Demand(rawValue: UInt(product))
    }

    /// Multiplies a demand by a count; `.unlimited` stays `.unlimited`.
    @inlinable
    public static func *= (lhs: inout Demand, rhs: Int) { lhs = lhs * rhs }

    // MARK: Comparison

    @inlinable
    public static func < (lhs: Demand, rhs: Demand) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Whether the demand equals the count (never for `.unlimited`).
    @inlinable
    public static func == (lhs: Demand, rhs: Int) -> Bool {
      lhs != .unlimited && rhs >= 0 && lhs.rawValue == UInt(rhs)
    }

    /// Whether the demand differs from the count (always for `.unlimited`).
    @inlinable
    public static func != (lhs: Demand, rhs: Int) -> Bool { !(lhs == rhs) }

    /// Whether the demand equals the count (never for `.unlimited`).
    @inlinable
    public static func == (lhs: Int, rhs: Demand) -> Bool { rhs == lhs }

    /// Whether the demand differs from the count (always for `.unlimited`).
    @inlinable
    public static func != (lhs: Int, rhs: Demand) -> Bool { !(rhs == lhs) }

    /// `lhs` compared with `rhs` as a count; `.unlimited` is greater than every `Int`.
    @inlinable
    static func compare(_ lhs: Demand, _ rhs: Int) -> Int {
      if lhs == .unlimited { return 1 }
      let value = Int(lhs.rawValue)
      return value < rhs ? -1 : (value == rhs ? 0 : 1)
    }

    /// Compares a demand with a count; `.unlimited` is greater than any count.
    @inlinable
    public static func < (lhs: Demand, rhs: Int) -> Bool { compare(lhs, rhs) < 0 }
    /// Compares a demand with a count; `.unlimited` is greater than any count.
    @inlinable
    public static func <= (lhs: Demand, rhs: Int) -> Bool { compare(lhs, rhs) <= 0 }
    /// Compares a demand with a count; `.unlimited` is greater than any count.
    @inlinable
    public static func > (lhs: Demand, rhs: Int) -> Bool { compare(lhs, rhs) > 0 }
    /// Compares a demand with a count; `.unlimited` is greater than any count.
    @inlinable
    public static func >= (lhs: Demand, rhs: Int) -> Bool { compare(lhs, rhs) >= 0 }
    /// Compares a demand with a count; `.unlimited` is greater than any count.
    @inlinable
    public static func < (lhs: Int, rhs: Demand) -> Bool { compare(rhs, lhs) > 0 }
    /// Compares a demand with a count; `.unlimited` is greater than any count.
    @inlinable
    public static func <= (lhs: Int, rhs: Demand) -> Bool { compare(rhs, lhs) >= 0 }
    /// Compares a demand with a count; `.unlimited` is greater than any count.
    @inlinable
    public static func > (lhs: Int, rhs: Demand) -> Bool { compare(rhs, lhs) < 0 }
    /// Compares a demand with a count; `.unlimited` is greater than any count.
    @inlinable
    public static func >= (lhs: Int, rhs: Demand) -> Bool { compare(rhs, lhs) <= 0 }

    // MARK: Codable

    /// Encodes as a single unsigned integer: the count, or `Int.max + 1` for `.unlimited`.
    public init(from decoder: any Decoder) throws {
      let container = try decoder.singleValueContainer()
      if let raw = try? container.decode(UInt.self) {
        self.init(rawValue: raw)
        return
      }
      let signed = try container.decode(Int64.self)
      throw DecodingError.dataCorruptedError(
        in: container, debugDescription: Violation.negativeDemandDecoded(signed))
    }

    public func encode(to encoder: any Encoder) throws {
      var container = encoder.singleValueContainer()
      try container.encode(rawValue)
    }
  }
}
