public import SluiceCore

/// What one subscriber did to a ``MarblePublisher``, in ticks from the publisher's creation:
/// when it subscribed, what it requested and when, and when it cancelled.
///
/// ```swift
/// log.marbles     // "--^---!": subscribed at tick 2, cancelled at tick 6
/// log.requests    // [tick 2: max(1), tick 4: max(1)]
/// ```
public struct MarbleSubscriptionLog: Sendable, Hashable, CustomStringConvertible {
  /// One `request(_:)`, or demand returned from `receive(_:)`.
  public struct Request: Sendable, Hashable, CustomStringConvertible {
    /// The tick it was made at.
    public let tick: Int
    /// The demand requested.
    public let demand: Subscribers.Demand

    /// A request of `demand` at `tick`.
    public init(tick: Int, demand: Subscribers.Demand) {
      self.tick = tick
      self.demand = demand
    }

    public var description: String { "tick \(tick): \(demand)" }
  }

  /// The tick of the subscription.
  public internal(set) var subscribedAt: Int
  /// Every `request(_:)`, and every demand returned from `receive(_:)`, in order.
  public internal(set) var requests: [Request] = []
  /// The tick of the first `cancel()`, if any.
  public internal(set) var cancelledAt: Int?

  /// A log of a subscription made at `subscribedAt`.
  init(subscribedAt: Int) { self.subscribedAt = subscribedAt }

  /// The subscription timeline from the publisher's creation (tick 0): `^` at the
  /// subscription, `!` at the cancellation.
  public var diagram: Marbles {
    var frames = [subscribedAt: [Marbles.Event.subscribed]]
    if let cancelledAt { frames[cancelledAt, default: []].append(.cancelled) }
    return Marbles(
      frames: frames.map { Marbles.Frame(tick: $0.key, events: $0.value) }, firstTick: 0)
  }

  /// ``diagram`` drawn: `"--^---!"` (parsed again, its `^` would become tick 0).
  public var marbles: String { diagram.description }

  public var description: String {
    "\(marbles) requests: [\(requests.map(\.description).joined(separator: ", "))]"
  }
}
