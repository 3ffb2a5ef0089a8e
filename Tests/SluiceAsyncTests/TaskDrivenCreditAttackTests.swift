import Dispatch
import Foundation
import SluiceAsync
import SluiceTestSupport
import Synchronization
import Testing

// Adversarial tests of the task-driven engine's lock-free per-value path (b5937d9): the task
// takes all the demand at once into `credit`, spends it checking `endedFlag`, and calls the
// subscriber through a `DeliveryGate` whose elected releaser drops it.

/// 1, 2, 3, … counting its pulls; its iterator holds a `Token` (released when the task ends).
/// Yields every 32 pulls (a source that never suspends would hold a pool thread).
final class CreditTally: AsyncSequence, Sendable {
  let pulls = Atomic<Int>(0)
  let limit: Int
  let census: TokenCensus
  /// Suspends (cancellation-aware) before producing value `stallAt` and every value after.
  let stallAt: Int
  /// How many times an iterator began to stall: once it has, the task is inside `next()`,
  /// not delivering.
  let stalls = Atomic<Int>(0)

  init(limit: Int = .max, census: TokenCensus = TokenCensus(), stallAt: Int = .max) {
    self.limit = limit
    self.census = census
    self.stallAt = stallAt
  }

  struct AsyncIterator: AsyncIteratorProtocol {
    let source: CreditTally
    let token: Token
    mutating func next() async -> Int? {
      token.touch()
      let pulled = source.pulls.load(ordering: .relaxed)
      if pulled + 1 >= source.stallAt {
        source.stalls.add(1, ordering: .relaxed)
        do { try await Task.sleep(for: .seconds(60)) } catch { return nil }
      }
      guard pulled < source.limit else { return nil }
      source.pulls.store(pulled + 1, ordering: .relaxed)
      if pulled % 32 == 31 { await Task.yield() }
      return pulled + 1
    }
  }

  func makeAsyncIterator() -> AsyncIterator {
    AsyncIterator(source: self, token: Token(census))
  }
}

/// A subscriber that checks the rules as signals arrive: overlapping signals, signals after a
/// completion, signals that began after a `cancel()` returned, more values than demanded.
final class CreditProbe: Subscriber, CancelMarkingSubscriber, @unchecked Sendable {
  // Safety: `lock` guards `values`, `subscription`; the rest are atomics; closures set in init.
  typealias Input = Int
  typealias Failure = Never

  let lock = NSLock()
  var values: [Int] = []
  var subscription: (any Subscription)?
  let completions = Atomic<Int>(0)
  let overlaps = Atomic<Int>(0)
  let afterCompletion = Atomic<Int>(0)
  let lateSignals = Atomic<Int>(0)
  let cancelReturned = Atomic<Bool>(false)
  let inFlight = Atomic<Int>(0)
  /// Demand granted so far (requests + returned); a value past it is an excess.
  let granted = Atomic<Int>(0)
  let excess = Atomic<Int>(0)
  let unlimited = Atomic<Bool>(false)
  let arrived = DispatchSemaphore(value: 0)
  let completed = DispatchSemaphore(value: 0)
  let initial: Subscribers.Demand
  let onValue: (@Sendable (CreditProbe, Int) -> Subscribers.Demand)?
  let onCompletion: (@Sendable (CreditProbe) -> Void)?
  let census: TokenCensus?

  init(
    initial: Subscribers.Demand = .none, census: TokenCensus? = nil,
    onValue: (@Sendable (CreditProbe, Int) -> Subscribers.Demand)? = nil,
    onCompletion: (@Sendable (CreditProbe) -> Void)? = nil
  ) {
    self.initial = initial
    self.onValue = onValue
    self.onCompletion = onCompletion
    self.census = census
    census?.alive.add(1, ordering: .releasing)
  }

  deinit { census?.alive.subtract(1, ordering: .releasing) }

  func grant(_ demand: Subscribers.Demand) {
    if let n = demand.max, n < Int.max / 16 {
      granted.add(n, ordering: .relaxed)
    } else {
      unlimited.store(true, ordering: .relaxed)
    }
  }

  func receive(subscription: any Subscription) {
    lock.withLock { self.subscription = subscription }
    if initial > 0 {
      grant(initial)
      subscription.request(initial)
    }
  }

  func enter() {
    if inFlight.add(1, ordering: .acquiringAndReleasing).oldValue != 0 {
      overlaps.add(1, ordering: .relaxed)
    }
    if cancelReturned.load(ordering: .acquiring) { lateSignals.add(1, ordering: .relaxed) }
    if completions.load(ordering: .acquiring) > 0 { afterCompletion.add(1, ordering: .relaxed) }
  }

  func leave() { inFlight.subtract(1, ordering: .acquiringAndReleasing) }

  func receive(_ input: Int) -> Subscribers.Demand {
    enter()
    let count = lock.withLock {
      values.append(input)
      return values.count
    }
    if !unlimited.load(ordering: .relaxed), count > granted.load(ordering: .relaxed) {
      excess.add(1, ordering: .relaxed)
    }
    let more = onValue?(self, input) ?? .none
    if more > 0 { grant(more) }
    leave()
    arrived.signal()
    return more
  }

  func receive(completion: Subscribers.Completion<Never>) {
    enter()
    completions.add(1, ordering: .releasing)
    onCompletion?(self)
    leave()
    completed.signal()
  }

  var snapshot: [Int] { lock.withLock { values } }
  var count: Int { lock.withLock { values.count } }

  /// Requests through the held subscription, counting the grant first.
  func request(_ demand: Subscribers.Demand) {
    grant(demand)
    currentSubscription?.request(demand)
  }

  func markCancelReturned() { cancelReturned.store(true, ordering: .releasing) }

  func dropSubscription() { lock.withLock { subscription = nil } }

  func waitValues(_ n: Int, seconds: Int = 600) -> Bool {
    (0..<n).allSatisfy { _ in arrived.wait(timeout: .now() + .seconds(seconds)) == .success }
  }

  var clean: Bool {
    overlaps.load(ordering: .relaxed) == 0 && afterCompletion.load(ordering: .relaxed) == 0
      && excess.load(ordering: .relaxed) == 0
  }
}

/// A shared counter (an `Atomic` cannot be captured by an escaping closure).
final class CreditCounter: Sendable {
  let atomic = Atomic<Int>(0)
  func add(_ n: Int = 1) { atomic.add(n, ordering: .relaxed) }
  var value: Int { atomic.load(ordering: .relaxed) }
}

/// A shared, locked value.
final class CreditBox<Value>: @unchecked Sendable {
  // Safety: `value` only under `lock`.
  let lock = NSLock()
  var value: Value
  init(_ value: Value) { self.value = value }
  func with<R>(_ body: (inout Value) -> R) -> R { lock.withLock { body(&value) } }
}

/// Spins on the current thread until `condition` holds or `seconds` pass (test on its own thread).
/// The deadline is a net against a hang only: with the whole suite running (the thread
/// sanitizer, stress tests, exit tests' blocking reads), the cooperative pool that the
/// publishers' tasks need has been held for more than 100 s.
func creditSpin(seconds: Double = 600, _ condition: () -> Bool) -> Bool {
  let end = Date().addingTimeInterval(seconds)
  while Date() < end {
    if condition() { return true }
    usleep(200)
  }
  return condition()
}

@Suite("Task-driven credit and gate, attacked", .serialized, .onThreadsOfTheirOwn)
struct TaskDrivenCreditAttackTests {
  // MARK: demand accounting

  @Test("request(.max(1)) ×400 from 8 threads while values flow: exactly 400 pulls and values")
  func piecemealRequestsFromManyThreads() async {
    let source = CreditTally()
    let probe = CreditProbe()
    source.publisher.subscribe(probe)
    let returned = await allReturn(threads: 8, deadline: .seconds(30)) { _ in
      for _ in 0..<50 { probe.request(.max(1)) }
    }
    #expect(returned)
    #expect(probe.waitValues(400))
    usleep(50_000)
    #expect(probe.snapshot == Array(1...400))
    #expect(source.pulls.load(ordering: .relaxed) == 400)
    #expect(probe.clean)
    probe.cancelAndDrop()
  }

  @Test("requests inside receive(_:), returned demand and requests from threads add up exactly")
  func mixedDemandSources() async {
    let source = CreditTally()
    // 5 initial; values 1…100 each request 1 from inside; even values ≤ 100 return 1 (50);
    // 4 threads × 25 requests of 1 (100): 255 in all.
    let probe = CreditProbe(initial: .max(5)) { probe, value in
      guard value <= 100 else { return .none }
      probe.request(.max(1))
      return value % 2 == 0 ? .max(1) : .none
    }
    source.publisher.subscribe(probe)
    #expect(
      await allReturn(threads: 4, deadline: .seconds(30)) { _ in
        for _ in 0..<25 { probe.request(.max(1)) }
      })
    #expect(probe.waitValues(255))
    usleep(50_000)
    #expect(probe.snapshot == Array(1...255))
    #expect(source.pulls.load(ordering: .relaxed) == 255)
    #expect(probe.clean)
    probe.cancelAndDrop()
  }

  @Test("a large .max(n) then a request of .max(Int.max): saturates, no trap, values flow")
  func hugeDemands() async {
    let source = CreditTally()
    let probe = CreditProbe(initial: .max(Int.max - 1))
    source.publisher.subscribe(probe)
    #expect(probe.waitValues(100))
    probe.request(.max(Int.max))
    probe.request(.max(5))
    #expect(probe.waitValues(100))
    probe.cancel()
    #expect(probe.clean)
    #expect(probe.lateSignals.load(ordering: .relaxed) <= 1)
  }

  @Test(".unlimited, then requests from 4 threads, then cancel(): no trap, values stop")
  func unlimitedThenMore() async {
    let census = TokenCensus()
    let subscribers = TokenCensus()
    do {
      let source = CreditTally(census: census)
      let probe = CreditProbe(initial: .unlimited, census: subscribers)
      source.publisher.subscribe(probe)
      #expect(probe.waitValues(500))
      #expect(
        await allReturn(threads: 4, deadline: .seconds(30)) { index in
          for step in 0..<100 { probe.request(step % 10 == 0 ? .unlimited : .max(3)) }
        })
      probe.cancelAndDrop()
      let seen = probe.count
      usleep(20_000)
      #expect(probe.count <= seen + 1)
      #expect(probe.lateSignals.load(ordering: .relaxed) <= 1)
      #expect(probe.completions.load(ordering: .relaxed) == 0)
      #expect(probe.overlaps.load(ordering: .relaxed) == 0)
    }
    #expect(creditSpin { subscribers.count == 0 }, "subscriber released")
    #expect(creditSpin { census.count == 0 }, "iterator released: the task ended")
  }

  // MARK: cancel at every moment

  @Test("cancel() from another thread at a random moment, 300 times: ≤ 1 late value, all released")
  func cancelAnywhere() async {
    let census = TokenCensus()
    let subscribers = TokenCensus()
    for round in 0..<300 {
      let source = CreditTally(census: census)
      let demand = 1 + round % 17
      let probe = CreditProbe(initial: .max(demand), census: subscribers) { _, value in
        value % 3 == 0 ? .max(1) : .none
      }
      source.publisher.subscribe(probe)
      // Some rounds cancel at once, others after a few values.
      if round % 3 == 1 { _ = probe.arrived.wait(timeout: .now() + 2) }
      if round % 3 == 2 { for _ in 0..<(round % 5) { usleep(UInt32(round % 7) * 20) } }
      await onThreadOfItsOwn { probe.cancelAndDrop() }
      #expect(probe.lateSignals.load(ordering: .relaxed) <= 1)
      #expect(probe.completions.load(ordering: .relaxed) == 0)
      #expect(probe.clean)
    }
    #expect(creditSpin { subscribers.count == 0 }, "subscribers released: \(subscribers.count)")
    #expect(creditSpin { census.count == 0 }, "iterators released: \(census.count)")
  }

  @Test("a request that unparks the task races cancel(), 500 times: no hang, ≤ 1 more value")
  func unparkRacesCancel() async {
    let census = TokenCensus()
    let subscribers = TokenCensus()
    for round in 0..<500 {
      let source = CreditTally(census: census)
      let probe = CreditProbe(initial: .max(2), census: subscribers)
      source.publisher.subscribe(probe)
      #expect(probe.waitValues(2))
      if round % 2 == 0 { usleep(100) }  // parked, usually
      await simultaneously({ probe.request(.max(1)) }, { probe.cancelAndDrop() })
      #expect(probe.count <= 3)
      #expect(probe.lateSignals.load(ordering: .relaxed) <= 1)
      #expect(probe.clean)
      #expect(source.pulls.load(ordering: .relaxed) <= 3)
    }
    #expect(creditSpin { subscribers.count == 0 }, "subscribers released: \(subscribers.count)")
    #expect(creditSpin { census.count == 0 }, "tasks ended: \(census.count)")
  }

  @Test(
    "cancel() while the task awaits the source (nothing in flight): subscriber released by cancel() itself"
  )
  func releasedAtOnceWhileInsideSource() async {
    let census = TokenCensus()
    for _ in 0..<50 {
      let subscribers = TokenCensus()
      let source = CreditTally(census: census, stallAt: 2)
      var subscription: (any Subscription)?
      do {
        let probe = CreditProbe(initial: .max(5), census: subscribers)
        source.publisher.subscribe(probe)
        #expect(probe.waitValues(1))
        subscription = probe.currentSubscription
        probe.dropSubscription()
      }
      // Once the task sleeps in next(), no delivery is in flight. (Waiting a fixed time was
      // not enough: on a loaded machine the task can still be leaving value 1's delivery.)
      #expect(creditSpin { source.stalls.load(ordering: .relaxed) > 0 })
      #expect(subscribers.count == 1)
      subscription?.cancel()
      #expect(subscribers.count == 0, "released by cancel() itself")
      subscription = nil
    }
    #expect(creditSpin { census.count == 0 }, "the tasks woke and ended")
  }

  @Test(
    "cancel() from inside receive(_:) with credit left, then returning .unlimited: nothing more")
  func cancelInsideReturningUnlimited() async {
    let subscribers = TokenCensus()
    for cut in [1, 2, 7, 32, 33, 64] {
      let source = CreditTally()
      do {
        let probe = CreditProbe(initial: .max(100), census: subscribers) { probe, value in
          if value == cut {
            probe.cancel()
            return .unlimited
          }
          return .none
        }
        source.publisher.subscribe(probe)
        #expect(probe.waitValues(cut))
        usleep(20_000)
        #expect(probe.snapshot == Array(1...cut))
        #expect(source.pulls.load(ordering: .relaxed) == cut)
        #expect(probe.completions.load(ordering: .relaxed) == 0)
        probe.dropSubscription()
      }
      #expect(creditSpin { subscribers.count == 0 })
    }
  }

  @Test(
    "finite source: cancel() races the completion, 500 times: one completion at most, none late")
  func cancelRacesCompletion() async {
    let subscribers = TokenCensus()
    for round in 0..<500 {
      let source = CreditTally(limit: 1 + round % 4)
      let probe = CreditProbe(initial: .max(2 + round % 4), census: subscribers)
      source.publisher.subscribe(probe)
      if round % 2 == 0 { _ = probe.arrived.wait(timeout: .now() + 2) }
      await onThreadOfItsOwn { probe.cancelAndDrop() }
      #expect(probe.completions.load(ordering: .relaxed) <= 1)
      #expect(probe.lateSignals.load(ordering: .relaxed) <= 1)
      #expect(probe.clean)
    }
    #expect(creditSpin { subscribers.count == 0 }, "subscribers released: \(subscribers.count)")
  }

  @Test("cancel() and request() from inside receive(completion:): one completion, released")
  func cancelInsideCompletion() async {
    let subscribers = TokenCensus()
    for limit in [0, 1, 5] {
      let source = CreditTally(limit: limit)
      do {
        let probe = CreditProbe(initial: .unlimited, census: subscribers) { _, _ in
          .none
        } onCompletion: { probe in
          probe.request(.max(3))
          probe.cancel()
          probe.cancel()
        }
        source.publisher.subscribe(probe)
        #expect(probe.completed.wait(timeout: .now() + 600) == .success)
        usleep(10_000)
        #expect(probe.count == limit)
        #expect(probe.completions.load(ordering: .relaxed) == 1)
        #expect(probe.clean)
        probe.dropSubscription()
      }
      #expect(creditSpin { subscribers.count == 0 })
    }
  }

  @Test("storm: 2 threads request, 1 cancels, 120 rounds: never more than demanded, ≤ 1 late")
  func requestCancelStorm() async {
    let census = TokenCensus()
    let subscribers = TokenCensus()
    for round in 0..<120 {
      let source = CreditTally(census: census)
      let probe = CreditProbe(initial: .max(1), census: subscribers) { _, value in
        value % 4 == 0 ? .max(1) : .none
      }
      source.publisher.subscribe(probe)
      #expect(
        await allReturn(threads: 3, deadline: .seconds(30)) { index in
          if index == 2 {
            for _ in 0..<(round % 40) { sched_yield() }
            probe.cancel()
          } else {
            for step in 0..<20 { probe.request(.max(1 + step % 2)) }
          }
        })
      #expect(probe.clean)
      #expect(probe.lateSignals.load(ordering: .relaxed) <= 1)
      probe.dropSubscription()
    }
    #expect(creditSpin { subscribers.count == 0 }, "subscribers released: \(subscribers.count)")
    #expect(creditSpin { census.count == 0 }, "tasks ended: \(census.count)")
  }

  // MARK: AsyncProducer and AsyncFuture

  @Test("AsyncProducer: 4 child tasks send under piecemeal demand: exactly the demanded values")
  func producerChildrenSend() async {
    let census = TokenCensus()
    let trueSends = CreditCounter()
    let falseSends = CreditCounter()
    let probe: CreditProbe
    do {
      let token = Token(census)
      let producer = AsyncProducer<Int, Never> { sender in
        token.touch()
        await withTaskGroup(of: Void.self) { group in
          for child in 0..<4 {
            group.addTask {
              var index = 0
              while true {
                index += 1
                if await sender.send(child * 1_000_000 + index) {
                  trueSends.add()
                } else {
                  falseSends.add()
                  return
                }
                if index % 16 == 0 { await Task.yield() }
              }
            }
          }
        }
      }
      probe = CreditProbe()
      producer.subscribe(probe)
    }
    #expect(
      await allReturn(threads: 8, deadline: .seconds(30)) { _ in
        for _ in 0..<25 { probe.request(.max(1)) }
      })
    #expect(probe.waitValues(200))
    usleep(50_000)
    #expect(probe.count == 200)
    #expect(trueSends.value == 200)
    #expect(probe.clean)
    // Each child's values in order.
    let values = probe.snapshot
    for child in 0..<4 {
      let mine = values.filter { $0 / 1_000_000 == child }.map { $0 % 1_000_000 }
      #expect(mine == (0..<mine.count).map { $0 + 1 })
    }
    probe.cancelAndDrop()
    #expect(creditSpin { falseSends.value == 4 }, "every child's send returned false")
    #expect(trueSends.value == 200)
    #expect(probe.count == 200)
    #expect(creditSpin { census.count == 0 }, "the producer closure released")
  }

  @Test(
    "AsyncProducer: send after cancel() returns false at once, with credit left, and delivers nothing"
  )
  func sendAfterCancel() async {
    for initial in [Subscribers.Demand.max(100), .unlimited, .max(3)] {
      let results = CreditBox<[Bool]>([])
      let resume = CreditBox<CheckedContinuation<Void, Never>?>(nil)
      let waiting = DispatchSemaphore(value: 0)
      let producer = AsyncProducer<Int, Never> { sender in
        for value in 1...3 { _ = await sender.send(value) }
        await withCheckedContinuation { continuation in
          resume.with { $0 = continuation }
          waiting.signal()
        }
        for value in 4...6 {
          let sent = await sender.send(value)
          results.with { $0.append(sent) }
        }
      }
      let probe = CreditProbe(initial: initial)
      producer.subscribe(probe)
      #expect(probe.waitValues(3))
      #expect(waiting.wait(timeout: .now() + 600) == .success)
      probe.cancel()
      resume.with { $0 }?.resume()
      #expect(creditSpin { results.with { $0.count } == 3 })
      #expect(results.with { $0 } == [false, false, false])
      #expect(probe.snapshot == [1, 2, 3])
      #expect(probe.completions.load(ordering: .relaxed) == 0)
      #expect(probe.lateSignals.load(ordering: .relaxed) == 0)
      probe.dropSubscription()
    }
  }

  @Test(
    "AsyncFuture: cancel() races the operation's return, 500 times: ≤ 1 value, completion only after it"
  )
  func futureRacesCancel() async {
    let census = TokenCensus()
    let subscribers = TokenCensus()
    for round in 0..<500 {
      let token = Token(census)
      let future = AsyncFuture<Int, Never> {
        token.touch()
        if round % 2 == 0 { await Task.yield() }
        return round
      }
      let probe = CreditProbe(initial: .max(1 + round % 3), census: subscribers)
      future.subscribe(probe)
      if round % 4 == 0 { usleep(50) }
      await onThreadOfItsOwn { probe.cancelAndDrop() }
      let got = probe.count
      #expect(got <= 1)
      #expect(probe.completions.load(ordering: .relaxed) <= got)
      #expect(probe.lateSignals.load(ordering: .relaxed) <= 1)
      #expect(probe.clean)
    }
    #expect(creditSpin { subscribers.count == 0 }, "subscribers released: \(subscribers.count)")
    #expect(creditSpin { census.count == 0 }, "operations released: \(census.count)")
  }

  @Test("AsyncFuture with demand requested in pieces from threads: one value, one completion")
  func futurePiecemeal() async {
    for round in 0..<100 {
      let probe = CreditProbe()
      AsyncFuture<Int, Never> { round }.subscribe(probe)
      #expect(
        await allReturn(threads: 3, deadline: .seconds(30)) { _ in
          for _ in 0..<3 { probe.request(.max(1)) }
        })
      #expect(probe.completed.wait(timeout: .now() + 600) == .success)
      #expect(probe.snapshot == [round])
      #expect(probe.completions.load(ordering: .relaxed) == 1)
      #expect(probe.clean)
    }
  }

  // MARK: composed

  @Test(
    "erased → flatMap(maxPublishers: .max(2)) of AsyncFutures → sink: every value, one completion")
  func flatMapOfFutures() async {
    let source = CreditTally(limit: 300)
    let received = CreditBox<[Int]>([])
    let completions = CreditCounter()
    let done = DispatchSemaphore(value: 0)
    let cancellable = source.publisher.eraseToAnyPublisher()
      .flatMap(maxPublishers: .max(2)) { value in AsyncFuture<Int, Never> { value } }
      .sink(
        receiveCompletion: { _ in
          completions.add()
          done.signal()
        },
        receiveValue: { value in received.with { $0.append(value) } })
    #expect(done.wait(timeout: .now() + 600) == .success)
    #expect(received.with { $0.sorted() } == Array(1...300))
    usleep(10_000)
    #expect(completions.value == 1)
    #expect(source.pulls.load(ordering: .relaxed) == 300)
    cancellable.cancel()
  }

  @Test("merge of two sequence publishers under piecemeal demand: never more than demanded")
  func mergeUnderDemand() async {
    let first = CreditTally()
    let second = CreditTally()
    let probe = CreditProbe()
    first.publisher.map { $0 * 2 }.merge(with: second.publisher.map { $0 * 2 + 1 })
      .eraseToAnyPublisher().subscribe(probe)
    #expect(
      await allReturn(threads: 4, deadline: .seconds(30)) { _ in
        for _ in 0..<40 { probe.request(.max(1)) }
      })
    #expect(probe.waitValues(160))
    usleep(50_000)
    #expect(probe.count == 160)
    #expect(probe.clean)
    probe.cancelAndDrop()
    let seen = probe.count
    usleep(20_000)
    #expect(probe.count == seen)
  }

  @Test("round trip publisher → values → publisher: exact values; cancel() releases both sources")
  func roundTrip() async {
    let census = TokenCensus()
    let subscribers = TokenCensus()
    do {
      let finite = CreditTally(limit: 200, census: census)
      let probe = CreditProbe(initial: .unlimited, census: subscribers)
      finite.publisher.values.publisher.subscribe(probe)
      #expect(probe.completed.wait(timeout: .now() + 600) == .success)
      #expect(probe.snapshot == Array(1...200))
      #expect(probe.completions.load(ordering: .relaxed) == 1)
      #expect(probe.clean)
      probe.dropSubscription()
    }
    do {
      let infinite = CreditTally(census: census)
      let probe = CreditProbe(census: subscribers)
      infinite.publisher.values.publisher.subscribe(probe)
      #expect(
        await allReturn(threads: 4, deadline: .seconds(30)) { _ in
          for _ in 0..<10 { probe.request(.max(1)) }
        })
      #expect(probe.waitValues(40))
      usleep(30_000)
      #expect(probe.snapshot == Array(1...40))
      #expect(probe.clean)
      probe.cancelAndDrop()
      #expect(probe.lateSignals.load(ordering: .relaxed) == 0)
    }
    #expect(creditSpin { subscribers.count == 0 }, "subscribers released")
    #expect(creditSpin { census.count == 0 }, "both iterators released")
  }

  @Test("share() of a sequence publisher with two sinks: first gets all, one completion each")
  func shared() async {
    for _ in 0..<20 {
      let source = CreditTally(limit: 100)
      let shared = source.publisher.share()
      let a = CreditBox<[Int]>([])
      let b = CreditBox<[Int]>([])
      let doneA = DispatchSemaphore(value: 0)
      let doneB = DispatchSemaphore(value: 0)
      let completionsA = CreditCounter()
      let completionsB = CreditCounter()
      let ca = shared.sink(
        receiveCompletion: { _ in
          completionsA.add()
          doneA.signal()
        }, receiveValue: { v in a.with { $0.append(v) } })
      let cb = shared.sink(
        receiveCompletion: { _ in
          completionsB.add()
          doneB.signal()
        }, receiveValue: { v in b.with { $0.append(v) } })
      #expect(doneA.wait(timeout: .now() + 600) == .success)
      #expect(doneB.wait(timeout: .now() + 600) == .success)
      #expect(a.with { $0 } == Array(1...100))
      let bs = b.with { $0 }
      #expect(bs == Array(1...100).suffix(bs.count))
      usleep(2_000)
      #expect(completionsA.value == 1)
      #expect(completionsB.value == 1)
      ca.cancel()
      cb.cancel()
    }
  }

  // MARK: more shapes

  @Test(
    "sink on an unlimited stream, its AnyCancellable dropped on another thread: closure released, ≤ 1 late value"
  )
  func sinkDroppedElsewhere() async {
    let census = TokenCensus()
    for _ in 0..<100 {
      let received = CreditCounter()
      let cancelled = Atomic<Bool>(false)
      let late = CreditCounter()
      let box = CreditBox<AnyCancellable?>(nil)
      let arrived = DispatchSemaphore(value: 0)
      do {
        let token = Token(census)
        let cancellable = CreditTally().publisher.eraseToAnyPublisher().sink { _ in
          token.touch()
          if cancelled.load(ordering: .acquiring) { late.add() }
          if received.value == 0 { arrived.signal() }
          received.add()
        }
        box.with { $0 = cancellable }
      }
      #expect(arrived.wait(timeout: .now() + 600) == .success)
      await onThreadOfItsOwn {
        box.with { $0 = nil }  // AnyCancellable's deinit cancels
        cancelled.store(true, ordering: .releasing)
      }
      #expect(late.value <= 1)
    }
    #expect(creditSpin { census.count == 0 }, "sink closures released: \(census.count)")
  }

  @Test(
    "a Sender kept past the producer's return: send returns false, nothing after the completion")
  func senderAfterReturn() async {
    for initial in [Subscribers.Demand.max(10), .unlimited] {
      let kept = CreditBox<AsyncProducer<Int, Never>.Sender?>(nil)
      let producer = AsyncProducer<Int, Never> { sender in
        kept.with { $0 = sender }
        _ = await sender.send(1)
      }
      let probe = CreditProbe(initial: initial)
      producer.subscribe(probe)
      #expect(probe.completed.wait(timeout: .now() + 600) == .success)
      let sender = kept.with { $0 }
      let sent = await sender?.send(2)
      #expect(sent == false)
      #expect(probe.snapshot == [1])
      #expect(probe.completions.load(ordering: .relaxed) == 1)
      #expect(probe.clean)
      kept.with { $0 = nil }
    }
  }

  @Test(
    "failing producer and throwing sequence racing cancel(), 300 times: ≤ 1 completion, none late")
  func failureRacesCancel() async {
    let subscribers = TokenCensus()
    for round in 0..<300 {
      let probe = CreditProbe(initial: .max(3), census: subscribers)
      let failing = AsyncProducer<Int, Never> { sender in
        _ = await sender.send(round)
        if round % 2 == 0 { await Task.yield() }
      }
      let throwing = AsyncThrowingStream<Int, any Error> { continuation in
        continuation.yield(1)
        continuation.finish(throwing: TestError())
      }
      if round % 2 == 0 {
        failing.subscribe(probe)
      } else {
        throwing.publisher.catch { _ in AsyncFuture<Int, Never> { -1 } }.subscribe(probe)
      }
      if round % 3 == 0 { _ = probe.arrived.wait(timeout: .now() + 2) }
      await onThreadOfItsOwn { probe.cancelAndDrop() }
      #expect(probe.completions.load(ordering: .relaxed) <= 1)
      #expect(probe.lateSignals.load(ordering: .relaxed) <= 1)
      #expect(probe.clean)
    }
    #expect(creditSpin { subscribers.count == 0 }, "subscribers released: \(subscribers.count)")
  }

  @Test(
    "a subscriber whose deinit cancels and requests its own subscription, released by cancel() or finish"
  )
  func deinitCallsBack() async {
    final class SelfCancelling: Subscriber, @unchecked Sendable {
      typealias Input = Int
      typealias Failure = Never
      let lock = NSLock()
      var subscription: (any Subscription)?
      let census: TokenCensus
      let got = DispatchSemaphore(value: 0)
      init(_ census: TokenCensus) {
        self.census = census
        census.alive.add(1, ordering: .releasing)
      }
      deinit {
        let kept = lock.withLock { subscription }
        kept?.request(.max(1))
        kept?.cancel()
        census.alive.subtract(1, ordering: .releasing)
      }
      func receive(subscription: any Subscription) {
        lock.withLock { self.subscription = subscription }
        subscription.request(.max(2))
      }
      func receive(_ input: Int) -> Subscribers.Demand {
        got.signal()
        return .none
      }
      func receive(completion: Subscribers.Completion<Never>) { got.signal() }
    }
    let census = TokenCensus()
    for round in 0..<100 {
      let subscription: (any Subscription)?
      do {
        let subscriber = SelfCancelling(census)
        CreditTally(limit: round % 2 == 0 ? 1 : .max).publisher.subscribe(subscriber)
        _ = subscriber.got.wait(timeout: .now() + 600)
        subscription = subscriber.lock.withLock { subscriber.subscription }
        // The subscriber keeps its subscription: a cycle that cancel() or the completion breaks.
      }
      let shared = Shared(subscription)
      if round % 2 == 1 { await onThreadOfItsOwn { shared.value?.cancel() } }
    }
    #expect(creditSpin { census.count == 0 }, "subscribers released: \(census.count)")
  }

  @Test(
    "a kept Sender's send while the completion is being delivered: not delivered, returns false")
  func sendDuringCompletion() async {
    for initial in [Subscribers.Demand.max(10), .unlimited] {
      let kept = CreditBox<AsyncProducer<Int, Never>.Sender?>(nil)
      let completing = DispatchSemaphore(value: 0)
      let sendReturned = DispatchSemaphore(value: 0)
      let producer = AsyncProducer<Int, Never> { sender in
        kept.with { $0 = sender }
        _ = await sender.send(1)
      }
      // receive(completion:) waits (briefly, bounded) until the send below returned.
      let probe = CreditProbe(initial: initial) { _, _ in
        .none
      } onCompletion: { _ in
        completing.signal()
        _ = sendReturned.wait(timeout: .now() + 2)
      }
      producer.subscribe(probe)
      #expect(completing.wait(timeout: .now() + 600) == .success)
      let sent = await kept.with { $0 }?.send(2)
      sendReturned.signal()
      #expect(probe.completed.wait(timeout: .now() + 600) == .success)
      #expect(sent == false, "a send after the producer returned must not deliver")
      #expect(probe.snapshot == [1], "no value after (or during) the completion")
      #expect(probe.overlaps.load(ordering: .relaxed) == 0, "no value overlapping the completion")
      kept.with { $0 = nil }
    }
  }
}
