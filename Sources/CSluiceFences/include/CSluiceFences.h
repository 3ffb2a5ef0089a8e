// Fences that Swift's Synchronization module does not offer, for SluiceCore's subjects.
#ifndef CSLUICEFENCES_H
#define CSLUICEFENCES_H

/// Keeps the compiler from moving memory accesses across this point (no instruction is
/// emitted): the cheap side of an asymmetric fence, whose other side is
/// `sluice_process_barrier()`.
static inline __attribute__((always_inline)) void sluice_compiler_barrier(void) {
  __asm__ __volatile__("" ::: "memory");
}

/// Registers the process for `sluice_process_barrier()` (Linux `membarrier`, private expedited).
/// Returns 1 if the process barrier can be used from now on, 0 if not (another system, a kernel
/// without it, or a sandbox that forbids the call).
int sluice_process_barrier_register(void);

/// Makes every other thread of the process execute a full memory barrier before it returns:
/// a store a thread made before its last `sluice_compiler_barrier()` is visible to the caller
/// afterwards, or that thread's loads after the barrier see what the caller stored before it.
/// Only after `sluice_process_barrier_register()` returned 1. Returns 0 on success.
int sluice_process_barrier(void);

#endif
