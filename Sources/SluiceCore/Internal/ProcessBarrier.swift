public import CSluiceFences

/// Keeps the compiler from moving memory accesses across this point; no instruction is
/// emitted. One side of an asymmetric fence: a thread that stores, then calls this, then loads,
/// pairs with another thread's ``processBarrier()`` as a full fence would.
@inlinable @inline(__always)
func compilerBarrier() { sluice_compiler_barrier() }

/// Whether ``processBarrier()`` can be used (Linux's `membarrier`, registered for this process
/// once, the first time a subject is made). `false` on other systems, on kernels without it and
/// in sandboxes that forbid it: subjects then use an ordinary fence on their fast path.
@usableFromInline let processBarrierIsAvailable = sluice_process_barrier_register() == 1

/// Makes every other running thread of the process execute a full memory barrier before it
/// returns (a few microseconds): the expensive side of the asymmetric fence whose cheap side
/// is ``compilerBarrier()``. Only where ``processBarrierIsAvailable``.
@usableFromInline
func processBarrier() {
  let result = sluice_process_barrier()
  precondition(result == 0, "Sluice: membarrier failed after it was registered (\(result))")
}
