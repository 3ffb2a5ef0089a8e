/// How the values of a publisher are buffered while an async consumer is busy, and how much
/// demand the bridge sends upstream.
///
/// | policy | demand sent upstream | held at most | when full |
/// |---|---|---|---|
/// | ``demandOne`` | `.max(1)` per `next()`, only while the consumer waits | 0 | — |
/// | ``prefetch(_:)`` | `n` up front, topped up as the consumer takes values | `n` | cannot fill: backpressure |
/// | ``unbounded`` | `.unlimited` | everything | never full |
/// | ``bufferingNewest(_:)`` | `.unlimited` | `n` | drops the oldest |
/// | ``bufferingOldest(_:)`` | `.unlimited` | `n` | drops the newest |
///
/// **With a subject** (a hot source that drops values sent while a subscriber has no demand):
/// `demandOne` and `prefetch(n)` lose what the subject sends while the consumer is busy (the
/// *subject* drops it, as in Combine), so `values` on a subject defaults to ``unbounded``, which
/// keeps everything; ``bufferingNewest(_:)`` and ``bufferingOldest(_:)`` bound memory by dropping
/// by the rule you chose.
///
/// **A misbehaving upstream** that sends values nobody demanded never crashes a bridge: with
/// `demandOne`, `prefetch` and `unbounded` the extra values are buffered (never lost), with the
/// two dropping policies they are subject to the policy's rule.
public struct AsyncBufferingPolicy: Sendable, Hashable, CustomStringConvertible {
  @usableFromInline
  enum Kind: Hashable, Sendable {
    case demandOne
    case prefetch(Int)
    case unbounded
    case newest(Int)
    case oldest(Int)
  }

  @usableFromInline let kind: Kind

  /// One `request(.max(1))` per `next()`, as Combine's `values`: nothing is requested or held
  /// while the consumer is not waiting.
  public static let demandOne = AsyncBufferingPolicy(kind: .demandOne)

  /// Requests `count` values up front and tops the demand up as the consumer takes values, so
  /// at most `count` values are ever held and nothing is dropped: backpressure.
  ///
  /// Traps unless `count` is at least 1.
  public static func prefetch(_ count: Int) -> AsyncBufferingPolicy {
    if count < 1 { AsyncViolation.bufferSize(count, policy: "prefetch", minimum: 1) }
    return AsyncBufferingPolicy(kind: .prefetch(count))
  }

  /// Requests `.unlimited` and keeps every value until the consumer takes it.
  public static let unbounded = AsyncBufferingPolicy(kind: .unbounded)

  /// Requests `.unlimited` and keeps the newest `count` values, dropping the oldest when full.
  /// With `0`, a value reaches the consumer only if it is waiting at that moment.
  ///
  /// Traps if `count` is negative.
  public static func bufferingNewest(_ count: Int) -> AsyncBufferingPolicy {
    if count < 0 { AsyncViolation.bufferSize(count, policy: "bufferingNewest", minimum: 0) }
    return AsyncBufferingPolicy(kind: .newest(count))
  }

  /// Requests `.unlimited` and keeps the oldest `count` values, dropping new ones when full.
  /// With `0`, a value reaches the consumer only if it is waiting at that moment.
  ///
  /// Traps if `count` is negative.
  public static func bufferingOldest(_ count: Int) -> AsyncBufferingPolicy {
    if count < 0 { AsyncViolation.bufferSize(count, policy: "bufferingOldest", minimum: 0) }
    return AsyncBufferingPolicy(kind: .oldest(count))
  }

  public var description: String {
    switch kind {
    case .demandOne: "demandOne"
    case .prefetch(let count): "prefetch(\(count))"
    case .unbounded: "unbounded"
    case .newest(let count): "bufferingNewest(\(count))"
    case .oldest(let count): "bufferingOldest(\(count))"
    }
  }
}
