#ifndef MALLOC_COUNT_H
#define MALLOC_COUNT_H

/// The number of `malloc`, `calloc`, `realloc`, `posix_memalign` and `aligned_alloc` calls made
/// so far by the whole process (every thread, every library): the executable that links this
/// target defines those functions, so the dynamic linker binds every library's calls to them.
long malloc_count_total(void);

#endif
