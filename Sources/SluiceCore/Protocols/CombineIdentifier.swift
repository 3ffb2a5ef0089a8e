import Synchronization

/// A unique identifier for identifying publisher streams, as in Combine.
///
/// `CombineIdentifier()` draws a fresh value from a process-wide counter;
/// `CombineIdentifier(object)` identifies an object by its address, so two identifiers made from
/// the same live object are equal.
public struct CombineIdentifier: Hashable, CustomStringConvertible, Sendable {
  private static let counter = Atomic<UInt64>(0)

  private let rawValue: UInt64

  /// Creates a unique identifier.
  public init() {
    rawValue = Self.counter.wrappingAdd(1, ordering: .relaxed).newValue
  }

  /// Creates an identifier for `object`, stable for its lifetime.
  public init(_ object: AnyObject) {
    rawValue = UInt64(UInt(bitPattern: ObjectIdentifier(object)))
  }

  public var description: String { "0x" + String(rawValue, radix: 16) }
}

/// A protocol for uniquely identifying publisher streams, as in Combine.
///
/// Classes get `combineIdentifier` for free, derived from their identity.
public protocol CustomCombineIdentifierConvertible {
  /// An identifier that uniquely identifies this stream element.
  var combineIdentifier: CombineIdentifier { get }
}

extension CustomCombineIdentifierConvertible where Self: AnyObject {
  public var combineIdentifier: CombineIdentifier { CombineIdentifier(self) }
}
