#ifndef SLUICE_HEAP_STATS_H
#define SLUICE_HEAP_STATS_H

/// The bytes of heap allocations alive in this process now, as the allocator that serves them
/// counts them: a sanitizer's (address, thread, memory) when the process runs under one, else the
/// C library's (glibc's `mallinfo2`, Darwin's default zone). -1 where neither can be read.
///
/// Unlike resident memory, this does not grow with memory that was freed but is still held
/// (a sanitizer's quarantine, an allocator's caches): it counts what is still allocated.
long long sluice_live_heap_bytes(void);

#endif
