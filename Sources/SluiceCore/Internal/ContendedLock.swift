#if canImport(Glibc) || canImport(Musl)
  #if canImport(Glibc)
    public import Glibc
  #else
    public import Musl
  #endif

  /// The lock of an engine that many threads hand work to at once (a subject's list and turn,
  /// `merge`'s and the fan-in operators' cores, a scheduler hop's delivery): ``Lock``'s contract
  /// and rules, on a lock that does not hand itself to a sleeping thread.
  ///
  /// On Linux, `Synchronization.Mutex` is a priority-inheriting futex: when a thread unlocks it
  /// while others wait, the kernel makes the oldest waiter the owner before that waiter runs, so
  /// the thread that unlocked — the engine's deliverer, about to lock again for its next item —
  /// waits until the sleeper has been scheduled, locked and unlocked (a lock convoy), and a
  /// contended `lock` spins first, taking the core from the deliverer. Measured with eight
  /// threads sending into one `PassthroughSubject` whose sink works ~1 µs per value
  /// (`Benchmarks/Shapes`, "1 sink of ~1 µs"): 0.28× OpenCombine's throughput on `Mutex`, 1.1× on
  /// this lock. A `pthread_mutex_t` of the default type lets the running thread take the lock
  /// again (waiters are woken and retry), as OpenCombine's lock and Darwin's `os_unfair_lock` do.
  /// It must not spin either: glibc's adaptive type (`PTHREAD_MUTEX_ADAPTIVE_NP`), which spins
  /// before it sleeps, measured 0.21× OpenCombine with eight senders and 0.18× with sixteen —
  /// spinning threads outnumber the cores and take them from the thread holding the lock.
  /// Its storage (mutex and state, one allocation) has a stable address, as the C API needs; the
  /// thread sanitizer sees `pthread_mutex_t` directly. Elsewhere this is ``Lock``.
  @usableFromInline
  package struct ContendedLock<State>: ~Copyable, @unchecked Sendable {
    // Safety: `State` is only reachable inside `withLock`, which holds the mutex; see ``Lock``.
    @usableFromInline
    struct Storage {
      @usableFromInline var mutex = pthread_mutex_t()
      @usableFromInline var state: State

      @inlinable init(state: consuming State) { self.state = state }
    }

    @usableFromInline let storage: UnsafeMutablePointer<Storage>

    @inlinable
    package init(_ initialState: consuming State) {
      storage = .allocate(capacity: 1)
      storage.initialize(to: Storage(state: initialState))
      pthread_mutex_init(Self.mutex(of: storage), nil)
    }

    deinit {
      pthread_mutex_destroy(Self.mutex(of: storage))
      storage.deinitialize(count: 1)
      storage.deallocate()
    }

    @inlinable @inline(__always)
    static func mutex(of storage: UnsafeMutablePointer<Storage>) -> UnsafeMutablePointer<
      pthread_mutex_t
    > {
      UnsafeMutableRawPointer(storage).advanced(
        by: MemoryLayout<Storage>.offset(of: \Storage.mutex)!
      ).assumingMemoryBound(to: pthread_mutex_t.self)
    }

    /// Runs `body` with exclusive access to the state and returns what it returns.
    @inlinable @inline(__always)
    package func withLock<Result>(_ body: (inout State) -> Result) -> Result {
      let mutex = Self.mutex(of: storage)
      pthread_mutex_lock(mutex)
      defer { pthread_mutex_unlock(mutex) }
      return body(&storage.pointee.state)
    }
  }
#else
  /// The lock of an engine that many threads hand work to at once: ``Lock`` (on Darwin,
  /// `Mutex` is an `os_unfair_lock`, which does not hand itself to a sleeping waiter).
  @usableFromInline
  package typealias ContendedLock<State> = Lock<State>
#endif
