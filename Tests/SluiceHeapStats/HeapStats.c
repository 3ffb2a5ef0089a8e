#include "SluiceHeapStats.h"

#include <stddef.h>
#include <stdlib.h>  // defines __GLIBC__ (through features.h) on glibc

#if defined(__APPLE__)
#include <dlfcn.h>
#include <malloc/malloc.h>
#elif defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__APPLE__)
/// The sanitizers' allocator interface (compiler-rt's sanitizer_allocator_interface.h), looked up
/// at run time: a weak reference to an undefined symbol does not link on Darwin.
static size_t (*sanitizer_allocated_bytes(void))(void) {
  return (size_t (*)(void))dlsym(RTLD_DEFAULT, "__sanitizer_get_current_allocated_bytes");
}
#else
/// The sanitizers' allocator interface (compiler-rt's sanitizer_allocator_interface.h): defined
/// when a sanitizer's runtime is linked in, whose allocator then serves every allocation; a weak
/// reference is null otherwise.
extern size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));
static size_t (*sanitizer_allocated_bytes(void))(void) {
  return __sanitizer_get_current_allocated_bytes;
}
#endif

long long sluice_live_heap_bytes(void) {
  size_t (*sanitizer)(void) = sanitizer_allocated_bytes();
  if (sanitizer) return (long long)sanitizer();
#if defined(__APPLE__)
  malloc_statistics_t stats;
  malloc_zone_statistics(NULL, &stats);
  return (long long)stats.size_in_use;
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  // In use in every arena, plus the blocks too large for one (mapped on their own).
  struct mallinfo2 info = mallinfo2();
  return (long long)(info.uordblks + info.hblkhd);
#else
  return -1;
#endif
}
