/// Heap storage for the fields of a generic object, destroyed by code specialized where the
/// object was made.
///
/// Swift runs a generic class's `deinit` unspecialized: destroying a stored property whose type
/// depends on the class's generic parameters (`Lock<State<Downstream>>`, `Source.Output?`) looks
/// that type up in the runtime's metadata cache, once for each generic type nested in it, every
/// time an object dies. ``FieldLock`` removes the lock's share of that; for an object that lives
/// for one value or two (a `Just` subscription) the rest still cost more than an allocation.
/// Here the fields live in memory of their own, and a closure formed in the initializer — which
/// is inlined and specialized where the object is made — destroys them, so the `deinit` looks
/// nothing up. Made in unspecialized code, the closure is generic and the lookups come back,
/// as before.
///
/// The owner reads and writes the fields through ``pointer(to:)`` under its own rules; this type
/// only owns the memory.
@usableFromInline
struct OutOfLineFields: ~Copyable {
  @usableFromInline let address: UnsafeMutableRawPointer
  @usableFromInline let destroy: (UnsafeMutableRawPointer) -> Void

  @inlinable init<Fields: ~Copyable>(_ fields: consuming Fields) {
    let pointer = UnsafeMutablePointer<Fields>.allocate(capacity: 1)
    pointer.initialize(to: fields)
    address = UnsafeMutableRawPointer(pointer)
    destroy = { address in
      let pointer = address.assumingMemoryBound(to: Fields.self)
      pointer.deinitialize(count: 1)
      pointer.deallocate()
    }
  }

  /// The fields, typed as they were stored (`type` must be the type given to `init`).
  @inlinable func pointer<Fields: ~Copyable>(to type: Fields.Type) -> UnsafeMutablePointer<Fields> {
    address.assumingMemoryBound(to: Fields.self)
  }

  deinit { destroy(address) }
}
