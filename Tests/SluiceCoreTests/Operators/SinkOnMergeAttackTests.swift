import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import Testing

/// Attacks on a `sink` downstream of `merge`, `MergeMany` and `flatMap` (the merge owns the
/// release of the sink's value closure), written by an adversary. Every test is bounded in time.
@Suite("Operators: attacks on a sink's closure under merge and flatMap", .onThreadsOfTheirOwn)
struct SinkOnMergeAttackTests {
  typealias Sink = Subscribers.Sink<Int, TestError>

  /// What the closures saw. Every field under `lock`.
  final class Probe: @unchecked Sendable {
    // Safety: every access takes `lock`.
    private let lock = NSLock()
    private var _released = 0
    private var _running = 0
    private var _overlaps = 0
    private var _values = 0
    private var _afterRelease = 0
    private var _completions = 0
    private var _completionWhileHeld = 0
    private var _valuesAfterCompletion = 0
    private var _cancelled = false
    private var _valuesAfterCancel = 0
    var released: Int { lock.withLock { _released } }
    var overlaps: Int { lock.withLock { _overlaps } }
    var values: Int { lock.withLock { _values } }
    var afterRelease: Int { lock.withLock { _afterRelease } }
    var completions: Int { lock.withLock { _completions } }
    var completionWhileHeld: Int { lock.withLock { _completionWhileHeld } }
    var valuesAfterCompletion: Int { lock.withLock { _valuesAfterCompletion } }
    var valuesAfterCancel: Int { lock.withLock { _valuesAfterCancel } }
    func markReleased() { lock.withLock { _released += 1 } }
    func markCancelled() { lock.withLock { _cancelled = true } }
    func enter() {
      lock.withLock {
        _values += 1
        _running += 1
        if _running > 1 { _overlaps += 1 }
        if _released > 0 { _afterRelease += 1 }
        if _completions > 0 { _valuesAfterCompletion += 1 }
        if _cancelled { _valuesAfterCancel += 1 }
      }
    }
    func exit() {
      lock.withLock {
        if _released > 0 { _afterRelease += 1 }
        _running -= 1
      }
    }
    func completed() {
      lock.withLock {
        _completions += 1
        if _released == 0 { _completionWhileHeld += 1 }
      }
    }
  }

  /// Captured by the value closure; its deinit marks the release (and runs `onDeinit`).
  final class Token: @unchecked Sendable {
    // Safety: immutable after init.
    let probe: Probe
    let onDeinit: @Sendable () -> Void
    init(_ probe: Probe, onDeinit: @escaping @Sendable () -> Void = {}) {
      self.probe = probe
      self.onDeinit = onDeinit
    }
    deinit {
      probe.markReleased()
      onDeinit()
    }
  }

  /// A sink whose value closure captures a token, checks it is not released on entry and after
  /// `pause` microseconds, and runs `body`.
  static func makeSink(
    _ probe: Probe, pause: UInt32 = 0,
    body: @escaping @Sendable (Int) -> Void = { _ in },
    onDeinit: @escaping @Sendable () -> Void = {},
    onCompletion: @escaping @Sendable (Subscribers.Completion<TestError>) -> Void = { _ in }
  ) -> Sink {
    let token = Token(probe, onDeinit: onDeinit)
    return Sink(
      receiveCompletion: { completion in
        probe.completed()
        onCompletion(completion)
      },
      receiveValue: { value in
        withExtendedLifetime(token) {
          probe.enter()
          if pause > 0 { usleep(pause) }
          body(value)
          probe.exit()
        }
      })
  }

  /// Runs `count` bodies on threads of their own; false if they did not all return in `seconds`.
  static func threads(
    _ count: Int, seconds: Int = 8, _ body: @escaping @Sendable (Int) -> Void
  ) -> Bool {
    let done = DispatchSemaphore(value: 0)
    let started = SharedBox(0)
    for index in 0..<count {
      Thread.detachNewThread {
        started.withLock { $0 += 1 }
        while started.withLock({ $0 }) < count { sched_yield() }
        body(index)
        done.signal()
      }
    }
    let end = DispatchTime.now() + .seconds(seconds)
    for _ in 0..<count where done.wait(timeout: end) == .timedOut { return false }
    return true
  }

  final class Box<T>: @unchecked Sendable {
    // Safety: `value` only under `lock`.
    private let lock = NSLock()
    private var _value: T
    init(_ value: T) { _value = value }
    var value: T {
      get { lock.withLock { _value } }
      set {
        var old = Optional(newValue)
        lock.withLock { swap(&_value, &old!) }
        withExtendedLifetime(old) {}  // the old value goes outside the lock
      }
    }
  }

  enum Shape: CaseIterable, CustomStringConvertible {
    case merge, mergeErased, mergeMany, flatMap, flatMapErased, mapped
    var description: String {
      switch self {
      case .merge: "merge"
      case .mergeErased: "merge, erased"
      case .mergeMany: "MergeMany"
      case .flatMap: "flatMap"
      case .flatMapErased: "flatMap, erased"
      case .mapped: "MergeMany.map (not a direct sink)"
      }
    }

    /// Subscribes `sink` to `subjects` merged in this shape; returns a closure finishing all.
    func subscribe(_ sink: Sink, _ subjects: [PassthroughSubject<Int, TestError>])
      -> @Sendable () -> Void
    {
      switch self {
      case .merge:
        subjects[0].merge(with: subjects[1]).subscribe(sink)
      case .mergeErased:
        subjects[0].merge(with: subjects[1]).eraseToAnyPublisher().subscribe(sink)
      case .mergeMany:
        Publishers.MergeMany(subjects).subscribe(sink)
      case .mapped:
        Publishers.MergeMany(subjects).map { $0 }.subscribe(sink)
      case .flatMap, .flatMapErased:
        let outer = PassthroughSubject<PassthroughSubject<Int, TestError>, TestError>()
        if self == .flatMap {
          outer.flatMap { $0 }.subscribe(sink)
        } else {
          outer.flatMap { $0 }.eraseToAnyPublisher().subscribe(sink)
        }
        for subject in subjects { outer.send(subject) }
        return {
          outer.send(completion: .finished)
          for subject in subjects { subject.send(completion: .finished) }
        }
      }
      return { for subject in subjects { subject.send(completion: .finished) } }
    }
  }

  // MARK: 1. senders on several threads, cancel racing from another

  @Test(
    "several senders, a cancel racing: released once, never under a running closure",
    arguments: Shape.allCases)
  func sendersAndCancel(shape: Shape) {
    for round in 0..<30 {
      let subjects = (0..<3).map { _ in PassthroughSubject<Int, TestError>() }
      let probe = Probe()
      let sink = Self.makeSink(probe, pause: round % 3 == 0 ? 50 : 0)
      _ = shape.subscribe(
        sink,
        shape == .merge || shape == .mergeErased
          ? Array(subjects.prefix(2)) : subjects)
      let used = shape == .merge || shape == .mergeErased ? 2 : 3
      let ok = Self.threads(used + 1) { index in
        if index == used {
          while probe.values < 20 + round { sched_yield() }
          sink.cancel()
          probe.markCancelled()
        } else {
          for value in 0..<400 { subjects[index].send(value) }
        }
      }
      #expect(ok, "hang")
      #expect(probe.released == 1, "round \(round)")
      #expect(probe.afterRelease == 0)
      #expect(probe.overlaps == 0)
      #expect(probe.valuesAfterCancel <= used, "values after cancel returned")
      withExtendedLifetime(sink) {}
    }
  }

  // MARK: 2. cancel from many threads at once while deliveries run

  @Test("cancel from many threads at once, and from inside", arguments: Shape.allCases)
  func manyCancels(shape: Shape) {
    for round in 0..<30 {
      let subjects = (0..<3).map { _ in PassthroughSubject<Int, TestError>() }
      let probe = Probe()
      let holder = Box<Sink?>(nil)
      let sink = Self.makeSink(probe, pause: 20) { value in
        if value == 50 + round { holder.value?.cancel() }
      }
      holder.value = sink
      _ = shape.subscribe(sink, subjects)
      let ok = Self.threads(6) { index in
        if index < 2 {
          for value in 0..<300 { subjects[index].send(value) }
        } else {
          while probe.values < 10 + round { sched_yield() }
          sink.cancel()
        }
      }
      #expect(ok, "hang")
      #expect(probe.released == 1)
      #expect(probe.afterRelease == 0)
      #expect(probe.overlaps == 0)
      holder.value = nil
      withExtendedLifetime(sink) {}
    }
  }

  // MARK: 3. feedback: closure sends into a merged subject, from several threads, cancels

  @Test(
    "feedback into a merged subject from several threads, cancelled from inside",
    arguments: Shape.allCases)
  func feedbackThenCancel(shape: Shape) {
    for round in 0..<20 {
      let subjects = (0..<3).map { _ in PassthroughSubject<Int, TestError>() }
      let probe = Probe()
      let holder = Box<Sink?>(nil)
      let seen = Box(0)
      let sink = Self.makeSink(probe) { value in
        if value >= 0, value % 3 == 0 { subjects[1].send(-value - 1) }  // feedback
        let count = {
          seen.value += 1; return seen.value
        }()
        if count == 200 + round * 7 {
          holder.value?.cancel()
          probe.markCancelled()
        }
      }
      holder.value = sink
      _ = shape.subscribe(sink, subjects)
      let ok = Self.threads(3) { index in
        for value in 0..<500 { subjects[index].send(value) }
      }
      #expect(ok, "deadlock")
      #expect(probe.released == 1)
      #expect(probe.afterRelease == 0)
      #expect(probe.overlaps == 0)
      #expect(probe.valuesAfterCancel <= 3)
      holder.value = nil
      withExtendedLifetime(sink) {}
    }
  }

  // MARK: 4. two merges feeding each other (deferred waiters), one cancelled mid-way

  @Test("two merges feeding each other across threads, one cancelled mid-way")
  func crossFeedback() {
    for round in 0..<20 {
      let a = (0..<2).map { _ in PassthroughSubject<Int, TestError>() }
      let b = (0..<2).map { _ in PassthroughSubject<Int, TestError>() }
      let probeA = Probe()
      let probeB = Probe()
      let sinkA = Box<Sink?>(nil)
      let countA = Box(0)
      let sa = Self.makeSink(probeA) { value in
        if value >= 0 { b[1].send(-1) }
        countA.value += 1
        if countA.value == 100 + round { sinkA.value?.cancel() }
      }
      let sb = Self.makeSink(probeB) { value in
        if value >= 0 { a[1].send(-1) }
      }
      sinkA.value = sa
      a[0].merge(with: a[1]).subscribe(sa)
      b[0].merge(with: b[1]).eraseToAnyPublisher().subscribe(sb)
      let ok = Self.threads(4) { index in
        let target = index % 2 == 0 ? a[0] : b[0]
        for value in 0..<400 { target.send(value) }
      }
      #expect(ok, "deadlock")
      #expect(probeA.released == 1)
      #expect(probeA.afterRelease == 0)
      #expect(probeA.overlaps == 0)
      #expect(probeB.overlaps == 0)
      #expect(probeB.released == 0)
      sb.cancel()
      #expect(probeB.released == 1)
      sinkA.value = nil
      withExtendedLifetime((sa, sb)) {}
    }
  }

  // MARK: 5. flatMap with maxPublishers, inners finishing / failing on other threads

  @Test("flatMap(maxPublishers:) with inners finishing and failing on other threads")
  func flatMapMaxPublishers() {
    for round in 0..<40 {
      let outer = PassthroughSubject<PassthroughSubject<Int, TestError>, TestError>()
      let inners = (0..<6).map { _ in PassthroughSubject<Int, TestError>() }
      let probe = Probe()
      let sink = Self.makeSink(probe, pause: round % 2 == 0 ? 30 : 0)
      outer.flatMap(maxPublishers: .max(2)) { $0 }.subscribe(sink)
      for inner in inners { outer.send(inner) }
      let failing = round % 3
      let ok = Self.threads(6) { index in
        for value in 0..<100 { inners[index].send(value) }
        if index == failing && round % 2 == 1 {
          inners[index].send(completion: .failure(TestError()))
        } else {
          inners[index].send(completion: .finished)
        }
      }
      outer.send(completion: .finished)
      #expect(ok, "hang")
      #expect(probe.completions == 1, "round \(round)")
      #expect(probe.completionWhileHeld == 0, "completion before the closure's release")
      #expect(probe.valuesAfterCompletion == 0)
      #expect(probe.released == 1)
      #expect(probe.afterRelease == 0)
      #expect(probe.overlaps == 0)
      withExtendedLifetime(sink) {}
    }
  }

  // MARK: 6. a sink subscribed to two merges (the second refused)

  @Test("a sink subscribed to two merges: the second is refused, the first releases")
  func twoMerges() {
    let first = (0..<2).map { _ in PassthroughSubject<Int, TestError>() }
    let second = (0..<2).map { _ in PassthroughSubject<Int, TestError>() }
    let probe = Probe()
    let sink = Self.makeSink(probe)
    first[0].merge(with: first[1]).subscribe(sink)
    second[0].merge(with: second[1]).eraseToAnyPublisher().subscribe(sink)
    second[0].send(1)
    #expect(probe.values == 0)
    first[0].send(1)
    #expect(probe.values == 1)
    second[1].send(completion: .failure(TestError()))
    #expect(probe.completions == 0)
    #expect(probe.released == 0)
    first[1].send(2)
    #expect(probe.values == 2)
    sink.cancel()
    #expect(probe.released == 1)
    first[0].send(3)
    #expect(probe.values == 2)
  }

  @Test("a sink given a subject first, then a merge: the merge is refused")
  func subjectThenMerge() {
    let subject = PassthroughSubject<Int, TestError>()
    let merged = (0..<2).map { _ in PassthroughSubject<Int, TestError>() }
    let probe = Probe()
    let sink = Self.makeSink(probe)
    subject.subscribe(sink)
    merged[0].merge(with: merged[1]).subscribe(sink)
    merged[0].send(1)
    subject.send(2)
    #expect(probe.values == 1)
    merged[1].send(completion: .finished)
    merged[0].send(completion: .finished)
    #expect(probe.completions == 0)
    #expect(probe.released == 0)
    subject.send(completion: .finished)
    #expect(probe.completions == 1)
    #expect(probe.released == 1)
  }

  // MARK: 7. CurrentValueSubject replays, cancel during replay

  @Test("CurrentValueSubjects replay into a merge; cancelled inside the first replay")
  func replayCancel() {
    for erased in [false, true] {
      let a = CurrentValueSubject<Int, TestError>(1)
      let b = CurrentValueSubject<Int, TestError>(2)
      let probe = Probe()
      let holder = Box<Sink?>(nil)
      let sink = Self.makeSink(probe) { value in
        if value == 1 { holder.value?.cancel() }
        b.send(10)  // feedback during the replay
      }
      holder.value = sink
      if erased {
        a.merge(with: b).eraseToAnyPublisher().subscribe(sink)
      } else {
        a.merge(with: b).subscribe(sink)
      }
      #expect(probe.values == 1)
      #expect(probe.released == 1)
      a.send(3)
      b.send(4)
      #expect(probe.values == 1)
      holder.value = nil
    }
  }

  @Test("CurrentValueSubjects replay into flatMap; finishing from inside the closure")
  func replayFinishInside() {
    let a = CurrentValueSubject<Int, TestError>(1)
    let b = CurrentValueSubject<Int, TestError>(2)
    let outer = CurrentValueSubject<CurrentValueSubject<Int, TestError>, TestError>(a)
    let probe = Probe()
    let sink = Self.makeSink(probe) { value in
      if value == 2 {
        outer.send(completion: .finished)
        a.send(completion: .finished)
        b.send(completion: .finished)
      }
    }
    outer.flatMap { $0 }.subscribe(sink)
    outer.send(b)
    #expect(probe.values == 2)
    #expect(probe.completions == 1)
    #expect(probe.completionWhileHeld == 0)
    #expect(probe.released == 1)
    #expect(probe.afterRelease == 0)
  }

  @Test(
    "a failure sent from inside the closure: released, then one failure", arguments: Shape.allCases)
  func failInside(shape: Shape) {
    let subjects = (0..<3).map { _ in PassthroughSubject<Int, TestError>() }
    let probe = Probe()
    let sink = Self.makeSink(probe) { value in
      if value == 1 { subjects[1].send(completion: .failure(TestError())) }
      subjects[0].send(value + 10)  // queued after the failure: dropped
    }
    _ = shape.subscribe(sink, subjects)
    subjects[0].send(1)
    #expect(probe.values == 1)
    #expect(probe.completions == 1)
    #expect(probe.completionWhileHeld == 0)
    #expect(probe.released == 1)
    withExtendedLifetime(sink) {}
  }

  // MARK: 8. completion racing cancel

  @Test("finish racing cancel from another thread", arguments: Shape.allCases)
  func finishRacingCancel(shape: Shape) {
    for round in 0..<60 {
      let subjects = (0..<3).map { _ in PassthroughSubject<Int, TestError>() }
      let probe = Probe()
      let sink = Self.makeSink(probe, pause: round % 4 == 0 ? 100 : 0)
      let finish = shape.subscribe(sink, subjects)
      let fails = round % 2 == 1
      let ok = Self.threads(3) { index in
        switch index {
        case 0:
          for value in 0..<50 { subjects[0].send(value) }
          if fails { subjects[1].send(completion: .failure(TestError())) } else { finish() }
        case 1:
          for value in 0..<50 { subjects[1].send(value) }
        default:
          for _ in 0..<(round * 5) { sched_yield() }
          sink.cancel()
        }
      }
      #expect(ok, "hang")
      #expect(probe.completions <= 1)
      #expect(probe.completionWhileHeld == 0)
      #expect(probe.valuesAfterCompletion == 0)
      #expect(probe.released == 1, "round \(round), \(shape)")
      #expect(probe.afterRelease == 0)
      withExtendedLifetime(sink) {}
    }
  }

  @Test("failure from one thread while another delivers, and a cancel", arguments: Shape.allCases)
  func failureWhileDeliveringAndCancel(shape: Shape) {
    for round in 0..<30 {
      let subjects = (0..<3).map { _ in PassthroughSubject<Int, TestError>() }
      let probe = Probe()
      let sink = Self.makeSink(probe, pause: 200)
      _ = shape.subscribe(sink, subjects)
      let ok = Self.threads(3) { index in
        switch index {
        case 0: for value in 0..<20 { subjects[0].send(value) }
        case 1:
          while probe.values < 3 { sched_yield() }
          subjects[1].send(completion: .failure(TestError()))
        default:
          while probe.values < 3 { sched_yield() }
          for _ in 0..<round { sched_yield() }
          sink.cancel()
        }
      }
      #expect(ok, "hang")
      #expect(probe.completions <= 1)
      #expect(probe.completionWhileHeld == 0)
      #expect(probe.released == 1)
      #expect(probe.afterRelease == 0)
      #expect(probe.valuesAfterCompletion == 0)
      withExtendedLifetime(sink) {}
    }
  }

  // MARK: 9. deinit-time sends and cancels

  @Test(
    "the closure's captures send into the merge and cancel as they are released",
    arguments: Shape.allCases)
  func deinitSends(shape: Shape) {
    for round in 0..<20 {
      let subjects = (0..<3).map { _ in PassthroughSubject<Int, TestError>() }
      let probe = Probe()
      let cancellable = Box<AnyCancellable?>(nil)
      let sink = Self.makeSink(
        probe, pause: 10,
        onDeinit: {
          subjects[0].send(-1)
          subjects[1].send(completion: .failure(TestError()))
          cancellable.value?.cancel()
        })
      _ = shape.subscribe(sink, subjects)
      cancellable.value = AnyCancellable(sink)
      let ok = Self.threads(3) { index in
        if index < 2 {
          for value in 0..<200 { subjects[index].send(value) }
        } else {
          while probe.values < 5 + round { sched_yield() }
          if round % 2 == 0 {
            cancellable.value?.cancel()
          } else {
            subjects[1].send(completion: .failure(TestError()))
          }
        }
      }
      #expect(ok, "deadlock")
      #expect(probe.released == 1)
      #expect(probe.afterRelease == 0)
      #expect(probe.completions <= 1)
      cancellable.value = nil
      withExtendedLifetime(sink) {}
    }
  }

  // MARK: 10. sink released by the user while the merge delivers

  @Test("the user drops the sink and its AnyCancellable mid-stream from another thread")
  func dropCancellable() {
    for _ in 0..<30 {
      let subjects = (0..<2).map { _ in PassthroughSubject<Int, TestError>() }
      let probe = Probe()
      let cancellable = Box<AnyCancellable?>(nil)
      let sink = Self.makeSink(probe, pause: 20)
      subjects[0].merge(with: subjects[1]).subscribe(sink)
      cancellable.value = AnyCancellable(sink)
      let ok = Self.threads(3) { index in
        if index < 2 {
          for value in 0..<200 { subjects[index].send(value) }
        } else {
          while probe.values < 10 { sched_yield() }
          cancellable.value = nil
        }
      }
      #expect(ok, "hang")
      #expect(probe.released == 1)
      #expect(probe.afterRelease == 0)
      #expect(probe.overlaps == 0)
      withExtendedLifetime(sink) {}
    }
  }

  // MARK: 11. many short-lived merges: a slow closure (waiters, turns handed on), cancel early

  @Test(
    "short-lived merges: slow closure, turns handed between threads, cancelled at once",
    arguments: [Shape.merge, .mergeErased, .flatMap])
  func shortLivedHandOffs(shape: Shape) {
    for round in 0..<150 {
      let subjects = (0..<3).map { _ in PassthroughSubject<Int, TestError>() }
      let probe = Probe()
      let sink = Self.makeSink(probe, pause: 30)
      _ = shape.subscribe(sink, subjects)
      let ok = Self.threads(4) { index in
        if index == 3 {
          for _ in 0..<(round % 40) * 20 { sched_yield() }
          sink.cancel()
          probe.markCancelled()
        } else {
          for value in 0..<40 { subjects[index % 2].send(value) }
        }
      }
      #expect(ok, "hang")
      #expect(probe.released == 1, "round \(round)")
      #expect(probe.afterRelease == 0)
      #expect(probe.overlaps == 0)
      #expect(
        probe.valuesAfterCancel <= 1, "one turn delivers at a time: at most its value in flight")
      withExtendedLifetime(sink) {}
    }
  }

  // MARK: 12. flatMap: the closure subscribes more (replaying inners), then cancels

  @Test("flatMap: the closure sends replaying inners into the outer, another thread cancels")
  func flatMapSubscribeMoreFromInside() {
    for round in 0..<30 {
      let outer = PassthroughSubject<CurrentValueSubject<Int, TestError>, TestError>()
      let first = CurrentValueSubject<Int, TestError>(0)
      let probe = Probe()
      let added = Box(0)
      let sink = Self.makeSink(probe) { value in
        if value % 5 == 0, added.value < 50 {
          added.value += 1
          outer.send(CurrentValueSubject(value + 1))  // replays from inside the delivery
        }
      }
      outer.flatMap(maxPublishers: round % 2 == 0 ? .unlimited : .max(3)) { $0 }.subscribe(sink)
      outer.send(first)
      let ok = Self.threads(3) { index in
        switch index {
        case 0: for value in 0..<300 { first.send(value * 5) }
        case 1: for value in 0..<300 { outer.send(CurrentValueSubject(value)) }
        default:
          while probe.values < 50 + round { sched_yield() }
          sink.cancel()
        }
      }
      #expect(ok, "hang")
      #expect(probe.released == 1)
      #expect(probe.afterRelease == 0)
      #expect(probe.overlaps == 0)
      withExtendedLifetime(sink) {}
    }
  }

  // MARK: 13. finishing from inside the closure while another thread cancels

  @Test("finished from inside the closure while another thread cancels", arguments: Shape.allCases)
  func finishInsideRacingCancel(shape: Shape) {
    for round in 0..<40 {
      let subjects = (0..<3).map { _ in PassthroughSubject<Int, TestError>() }
      let probe = Probe()
      let finishBox = Box<(@Sendable () -> Void)?>(nil)
      let sink = Self.makeSink(probe, pause: 20) { value in
        if value == 10 { finishBox.value?() }
      }
      finishBox.value = shape.subscribe(sink, subjects)
      let ok = Self.threads(3) { index in
        if index < 2 {
          for value in 0..<30 { subjects[index].send(value) }
        } else {
          while probe.values < 8 { sched_yield() }
          for _ in 0..<round * 3 { sched_yield() }
          sink.cancel()
        }
      }
      #expect(ok, "hang")
      #expect(probe.completions <= 1)
      #expect(probe.completionWhileHeld == 0)
      #expect(probe.valuesAfterCompletion == 0)
      #expect(probe.released == 1)
      #expect(probe.afterRelease == 0)
      finishBox.value = nil
      withExtendedLifetime(sink) {}
    }
  }

  // MARK: 14. the closure subscribes its own sink to another merge (refused) and keeps going

  @Test("the closure subscribes its own sink to a second merge: refused, nothing changes")
  func resubscribeFromInside() {
    let subjects = (0..<2).map { _ in PassthroughSubject<Int, TestError>() }
    let other = (0..<2).map { _ in CurrentValueSubject<Int, TestError>(99) }
    let probe = Probe()
    let holder = Box<Sink?>(nil)
    let sink = Self.makeSink(probe) { value in
      if value == 1, let me = holder.value {
        other[0].merge(with: other[1]).eraseToAnyPublisher().subscribe(me)
      }
    }
    holder.value = sink
    subjects[0].merge(with: subjects[1]).subscribe(sink)
    subjects[0].send(1)
    subjects[1].send(2)
    other[0].send(5)
    #expect(probe.values == 2)
    subjects[0].send(completion: .finished)
    subjects[1].send(completion: .finished)
    #expect(probe.completions == 1)
    #expect(probe.completionWhileHeld == 0)
    #expect(probe.released == 1)
    holder.value = nil
  }
}
