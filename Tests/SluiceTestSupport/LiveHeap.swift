import SluiceHeapStats

/// The bytes of heap allocations alive in this process now, as its allocator counts them (a
/// sanitizer's under `--sanitize=address` or `thread`, else the C library's); `nil` where the
/// allocator cannot tell.
///
/// Memory tests measure this rather than ``residentBytes()``: what a leak keeps is still
/// allocated under every configuration, while resident memory also holds what was freed but
/// kept (the address sanitizer's quarantine keeps up to 256 MB of freed blocks resident, and
/// allocators keep freed pages). It counts every thread's allocations, other tests' included:
/// a bound on it must leave room for what tests running at the same time hold.
package func liveHeapBytes() -> Int? {
  let bytes = sluice_live_heap_bytes()
  return bytes < 0 ? nil : Int(bytes)
}
