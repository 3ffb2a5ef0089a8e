/// A subject's subscription as the subject sees it, whatever the subscriber's type: functions
/// made where the subscriber attached, in code specialized for its type (one indirect call per
/// value, no existential, no generic metadata lookups). ``Conduit`` is the only subclass.
///
/// Why a class holding functions, not closures in the list, nor overridden methods:
/// ``SharedSubscriberList`` lets a sender read the list in place, without owning what it
/// reads. Calling a closure kept in shared memory retains its context around the call, while
/// the `let` properties of an object the caller guarantees need no retain; and a generic
/// class's overridden methods are reached through its vtable, which holds their unspecialized
/// implementations.
@usableFromInline
class AnyConduit<Output, Failure: Error>: @unchecked Sendable {
  // Safety: immutable; subclasses carry their own rule.
  /// ``Conduit/offerInPlace(_:)`` for this conduit (passed in: capturing it would be a cycle).
  @usableFromInline let offerInPlaceToConduit: (AnyConduit, Output) -> Void
  /// ``Conduit/finish(_:)`` for this conduit.
  @usableFromInline let finishConduit: (AnyConduit, Subscribers.Completion<Failure>) -> Void
  /// ``Conduit/releaseDeferredDownstream()`` for this conduit.
  @usableFromInline let releaseConduit: (AnyConduit) -> Void
  /// ``Conduit/drain(adding:)`` for this conduit, continued by the subject's turn.
  @usableFromInline let drainConduit: (AnyConduit) -> Void

  @inlinable
  init(
    offerInPlace: @escaping (AnyConduit, Output) -> Void,
    finish: @escaping (AnyConduit, Subscribers.Completion<Failure>) -> Void,
    release: @escaping (AnyConduit) -> Void,
    drain: @escaping (AnyConduit) -> Void
  ) {
    offerInPlaceToConduit = offerInPlace
    finishConduit = finish
    releaseConduit = release
    drainConduit = drain
  }

  /// Delivers `value` if the subscriber has demand for it, from the sender that holds the
  /// subject's list (see ``SharedSubscriberList``): no atomic read-modify-write while the
  /// conduit's fast path is open.
  @inlinable @inline(__always)
  final func receiveInPlace(_ value: Output) { offerInPlaceToConduit(self, value) }

  /// Delivers `completion` once, after what is queued.
  @inlinable @inline(__always)
  final func receiveFromSubject(completion: Subscribers.Completion<Failure>) {
    finishConduit(self, completion)
  }

  /// Releases the subscriber of a conduit cancelled while a sender read the list, now that
  /// none does (see ``SharedSubscriberList``).
  @inlinable @inline(__always)
  final func releaseAfterSenders() { releaseConduit(self) }

  /// Continues a drain that another thread handed to the subject's turn (see
  /// ``Conduit/drain(adding:)``): no sender can add to the conduit's queue meanwhile.
  @inlinable @inline(__always)
  final func continueDrain() { drainConduit(self) }
}
