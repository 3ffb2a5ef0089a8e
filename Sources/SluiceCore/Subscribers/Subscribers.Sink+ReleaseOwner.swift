public import Synchronization

/// The interface through which a delivery engine of another module (SluiceNIO's subscription)
/// takes over a sink's closure release, as the subject's conduit does. Public for those
/// engines, underscored because apps have no use for it.
extension Subscribers.Sink {
  /// `downstream` as the `Sink` it is, or that it wraps (an `AnySubscriber` made from a sink, as
  /// `AnyPublisher` makes), or `nil`. Decided where the caller is specialised: for any other
  /// subscriber type it is `nil` without a cast at run time.
  ///
  /// For delivery engines (see ``_claimValueRelease(for:)``).
  @inlinable @inline(__always)
  public static func _releasable<Downstream: Subscriber>(
    _ downstream: Downstream
  ) -> Subscribers.Sink<Input, Failure>?
  where Downstream.Input == Input, Downstream.Failure == Failure {
    sink(of: downstream)
  }

  /// See ``_releasable(_:)`` (the module's own engines call this one).
  @inlinable @inline(__always)
  static func sink<Downstream: Subscriber>(
    of downstream: Downstream
  ) -> Subscribers.Sink<Input, Failure>?
  where Downstream.Input == Input, Downstream.Failure == Failure {
    typealias Sink = Subscribers.Sink<Input, Failure>
    // Bit casts to the type it is, not `as`, which for an unconstrained generic goes through
    // the runtime's casts.
    if Downstream.self == Sink.self { return reinterpret(downstream, as: Sink.self) }
    if Downstream.self == AnySubscriber<Input, Failure>.self {
      return reinterpret(downstream, as: AnySubscriber<Input, Failure>.self).box.sink
    }
    return nil
  }

  @inlinable @inline(__always)
  static func reinterpret<Value, Target>(_ value: Value, as target: Target.Type) -> Target {
    unsafeBitCast(value, to: target)
  }

  /// A subscription that delivers this sink's values serially and knows when its last delivery
  /// is over takes over the release of `receiveValue` (see ``releaseOwner``): it then delivers
  /// with ``_receiveFromReleaseOwner(_:)``, without the sink's gate (two atomic read-modify-write
  /// operations less per value), and must call ``_endValueRelease(by:)`` after its last
  /// delivery — when it ends by cancel (at once if no delivery is in flight, else as that
  /// delivery returns) and before it delivers a completion. `true` if `owner` owns the release
  /// (now or already); `false` if the sink decided first (a cancel or completion came first):
  /// then deliver through ``receive(_:)``.
  ///
  /// Call it only from the subscription the sink accepted, at its request (the sink requests
  /// only on that one, before any value); `owner` is that subscription. The owner is known by
  /// its address, which a later object may reuse once it is freed: that is safe because a sink
  /// whose subscription ended refuses any other (it cannot be claimed again).
  @inlinable
  public func _claimValueRelease(for owner: AnyObject) -> Bool {
    let word = Self.ownerWord(owner)
    let (exchanged, original) = releaseOwner.compareExchange(
      expected: 0, desired: word, ordering: .acquiringAndReleasing)
    return exchanged || original == word
  }

  /// A value from the subscription that owns the release (``_claimValueRelease(for:)``), which
  /// never delivers two at once nor after its ``_endValueRelease(by:)``.
  @inlinable @inline(__always)
  public func _receiveFromReleaseOwner(_ value: Input) {
    receiveFromOwner(value)
  }

  /// The owner's last delivery is over: releases `receiveValue`, unless the sink decided
  /// first. Idempotent.
  @inlinable
  public func _endValueRelease(by owner: AnyObject) {
    if decidedReleaseOwner() == Self.ownerWord(owner) { closeGate() }
  }

  /// How ``releaseOwner`` names `owner`: its address (never 0 or 1).
  @inlinable @inline(__always)
  static func ownerWord(_ owner: AnyObject) -> UInt {
    UInt(bitPattern: Unmanaged.passUnretained(owner).toOpaque())
  }
}
