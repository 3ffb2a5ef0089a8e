import SluiceTestSupport
import Testing

/// ``liveHeapBytes()``, which the memory tests bound, sees what is kept and what is let go, in
/// every configuration the suite runs in (plain, and under the address and thread sanitizers).
/// (Where the C library is neither glibc nor Darwin's, it may have no count to read.)
#if canImport(Glibc) || canImport(Darwin)
  @Suite("liveHeapBytes: the allocator's count of what is still allocated")
  struct LiveHeapTests {
    /// 64 MiB kept, then freed: the count rises and falls by about that much. The margin (half of
    /// it) leaves room for what tests running at the same time allocate and free.
    @Test func countsWhatIsKeptAndNotWhatWasFreed() throws {
      let size = 64 << 20
      let before = try #require(liveHeapBytes(), "the allocator's statistics cannot be read here")
      var kept: [UInt8]? = Array(repeating: 1, count: size)
      let holding = try #require(liveHeapBytes())
      #expect(holding - before > size / 2, "kept: +\((holding - before) >> 10) KiB")
      #expect(kept?.count == size)
      kept = nil
      let after = try #require(liveHeapBytes())
      #expect(holding - after > size / 2, "freed: -\((holding - after) >> 10) KiB")
    }
  }
#endif
