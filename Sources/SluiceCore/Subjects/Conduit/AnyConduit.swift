/// A subject's subscription as the subject sees it, whatever the subscriber's type: two
/// functions made where the subscriber attached, in code specialized for its type (one indirect
/// call per value, no existential, no generic metadata lookups). ``Conduit`` is the only
/// subclass.
///
/// Why a class holding functions, not a pair of closures in the list, nor overridden methods:
/// ``SharedSubscriberList`` lets a sender read the list in place, without owning what it
/// reads. Calling a closure kept in shared memory retains its context around the call, while
/// the `let` properties of an object the caller guarantees need no retain; and a generic
/// class's overridden methods are reached through its vtable, which holds their unspecialized
/// implementations.
@usableFromInline
class AnyConduit<Output, Failure: Error>: @unchecked Sendable {
  // Safety: immutable; subclasses carry their own rule.
  /// ``Conduit/offer(_:)`` for this conduit (passed in: capturing it would be a cycle).
  @usableFromInline let offerToConduit: (AnyConduit, Output) -> Void
  /// ``Conduit/finish(_:)`` for this conduit.
  @usableFromInline let finishConduit: (AnyConduit, Subscribers.Completion<Failure>) -> Void

  @inlinable
  init(
    offer: @escaping (AnyConduit, Output) -> Void,
    finish: @escaping (AnyConduit, Subscribers.Completion<Failure>) -> Void
  ) {
    offerToConduit = offer
    finishConduit = finish
  }

  /// Delivers `value` if the subscriber has demand for it (see ``Conduit``).
  @inlinable @inline(__always)
  final func receiveFromSubject(_ value: Output) { offerToConduit(self, value) }

  /// Delivers `completion` once, after what is queued.
  @inlinable @inline(__always)
  final func receiveFromSubject(completion: Subscribers.Completion<Failure>) {
    finishConduit(self, completion)
  }
}
