// Counts allocations for the real-time benchmark rows: the executable defines the C allocation
// functions, counts each call, and forwards it to glibc's implementation (`__libc_*`, which
// needs no `dlsym`, itself an allocating call).
#include "MallocCount.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static atomic_long total;

long malloc_count_total(void) { return atomic_load_explicit(&total, memory_order_relaxed); }

static void count(void) { atomic_fetch_add_explicit(&total, 1, memory_order_relaxed); }

void *malloc(size_t size) {
  count();
  return __libc_malloc(size);
}

void *calloc(size_t count_, size_t size) {
  count();
  return __libc_calloc(count_, size);
}

void *realloc(void *pointer, size_t size) {
  count();
  return __libc_realloc(pointer, size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
  count();
  void *pointer = __libc_memalign(alignment, size);
  if (pointer == NULL) return ENOMEM;
  *result = pointer;
  return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
