#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#elseif canImport(WinSDK)
  import WinSDK
#endif

/// Offers the calling thread's processor to another runnable thread, returning at once if there
/// is none (`sched_yield`; `SwitchToThread` on Windows). One system call, never a sleep: a
/// thread that yields stays runnable, so it is a short delay, not a wait for anything.
@usableFromInline
func yieldProcessor() {
  #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
    _ = sched_yield()
  #elseif canImport(WinSDK)
    _ = SwitchToThread()
  #endif
}
