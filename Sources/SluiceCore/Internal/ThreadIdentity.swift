#if canImport(Glibc)
  public import Glibc
#elseif canImport(Musl)
  public import Musl
#elseif canImport(Darwin)
  public import Darwin
#endif

/// A nonzero number that identifies the calling thread among the threads alive now (its
/// `pthread_t`): how a subject tells a send made from inside one of its own deliveries (the
/// same thread) from a send racing it on another thread. Inlined: one call into the C library
/// on each `send`.
@inlinable @inline(__always)
func currentThreadIdentity() -> UInt {
  #if canImport(Darwin)
    UInt(bitPattern: pthread_self())
  #else
    UInt(pthread_self())
  #endif
}
