/// A nonzero number that identifies the calling thread among the threads alive now (the
/// address of its ``DeliveryContext``): how a subject tells a send made from inside one of its
/// own deliveries (the same thread) from a send racing it on another thread. Inlined: one read
/// of thread-local storage.
@inlinable @inline(__always)
func currentThreadIdentity() -> UInt {
  DeliveryContext.current.identity
}
