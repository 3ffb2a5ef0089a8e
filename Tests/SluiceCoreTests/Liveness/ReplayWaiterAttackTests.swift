import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// Adversarial checks of 85951d9 (issue 37): the holder of a subject's turn waits, holding it,
/// at a replay's ``ReplayWaiter``; the replay's call delivers at most its allowance of what the
/// holder queued for the subscriber and hands the rest back to the turn (first in its queue).
/// Claimed: no deadlock from the protocol; every call made outside any delivery delivers at
/// most ``DeliveryContext/allowancePerCall`` values of other threads; order, no loss, no leak.
@Suite("Replay waiter, attacked (adv37d)", .onThreadsOfTheirOwn)
struct ReplayWaiterAttackTests {
  static let stride = 1_000_000
  static let bound = DeliveryContext.allowancePerCall

  static func spinUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let end = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
    while !condition() {
      if DispatchTime.now().uptimeNanoseconds > end { return false }
      usleep(50)
    }
    return true
  }

  /// An atomic counter that can live in an array.
  final class Cell: Sendable {
    let value = Atomic<Int>(0)
  }

  static var thisThread: UInt { UInt(bitPattern: Int(bitPattern: pthread_self())) }

  static func waitersQueued<T>(_ subject: CurrentValueSubject<T, Never>) -> Int {
    subject.core.state.withLock { $0.subscribers.waitersQueued }
  }

  /// Whether a replay's waiter is still in the subject's queue (not yet reached by a holder).
  static func replayQueued<T>(_ subject: CurrentValueSubject<T, Never>) -> Bool {
    subject.core.state.withLock { state in
      let queue = state.subscribers
      return queue.handedOver[queue.handedOverHead...].contains {
        if case .replay? = $0 { true } else { false }
      }
    }
  }

  /// A subscriber that requests only when told, records what it receives, and counts the
  /// values that reach it on a watched thread (while that thread is inside a call the test
  /// makes) and that `isOwn` does not claim for that thread.
  final class Counter: Subscriber, @unchecked Sendable {
    // Safety: `subscription` and `values` under `lock`; the rest atomics or set in `init`.
    typealias Input = Int
    typealias Failure = Never
    let combineIdentifier = CombineIdentifier()
    private let lock = NSLock()
    private var storedSubscription: (any Subscription)?
    private var storedValues: [Int] = []
    /// The thread whose call is watched (its `pthread_self`, as a number), or 0.
    let watched = Atomic<UInt>(0)
    let othersInCall = Atomic<Int>(0)
    let isOwn: @Sendable (Int) -> Bool
    let onValue: @Sendable (Int) -> Void

    init(
      isOwn: @escaping @Sendable (Int) -> Bool = { _ in false },
      onValue: @escaping @Sendable (Int) -> Void = { _ in }
    ) {
      self.isOwn = isOwn
      self.onValue = onValue
    }

    var values: [Int] { lock.withLock { storedValues } }

    func receive(subscription: any Subscription) {
      lock.withLock { storedSubscription = subscription }
    }

    /// Runs `call` on this thread, watched.
    func watching(_ call: () -> Void) {
      watched.store(ReplayWaiterAttackTests.thisThread, ordering: .relaxed)
      call()
      watched.store(0, ordering: .relaxed)
    }

    func request(_ demand: Subscribers.Demand) {
      lock.withLock { storedSubscription }?.request(demand)
    }

    func receive(_ input: Int) -> Subscribers.Demand {
      if watched.load(ordering: .relaxed) == ReplayWaiterAttackTests.thisThread, !isOwn(input) {
        othersInCall.add(1, ordering: .relaxed)
      }
      lock.withLock { storedValues.append(input) }
      onValue(input)
      return .none
    }

    func receive(completion: Subscribers.Completion<Never>) {}

    func cancel() { lock.withLock { storedSubscription.take() }?.cancel() }
  }

  // MARK: 1. Per-call bound

  /// The replay's hand-back goes to whoever holds the turn when the replay ends — not always
  /// the thread that queued the values. Thread H holds three turns (two relays, then the
  /// subject), so its call has no allowance left at the subject's turn; its sink sends a burst
  /// into the subject (queued behind, H's own), a third thread W sends one value (no grant:
  /// it waits), and then the replay's waiter is queued. H delivers the burst — into the
  /// replaying conduit's queue — reaches W's waiter with no allowance and hands W the turn;
  /// W delivers its value and waits at the replay's waiter. The replay's call takes 64 of the
  /// burst and hands the rest back: to W, whose one `send` then delivers the whole rest of H's
  /// burst.
  @Test("a replay's hand-back after the turn passed to a waiting sender: that sender's call")
  func handBackToAnInheritedTurn() async {
    let relay1 = PassthroughSubject<Int, Never>()
    let relay2 = PassthroughSubject<Int, Never>()
    let subject = CurrentValueSubject<Int, Never>(0)
    let burst = 1_000
    let wValue = 7 * Self.stride
    let dSawW = Atomic<Bool>(false)
    let requestNow = DispatchSemaphore(value: 0)
    let wGo = DispatchSemaphore(value: 0)
    let setupFailed = Atomic<Int>(0)
    // Attached first, no demand: offered value 1 while owed, so its replay is 1.
    let isFirst = Atomic<Bool>(true)
    let probe = Counter(isOwn: { $0 == wValue }) { _ in
      // (The replay may be overtaken by value 2: see "Differences from Combine".)
      guard isFirst.exchange(false, ordering: .relaxed) else { return }
      // The replay: slow until W holds the turn (it delivered its value to `d`) — or until H
      // stopped at this replay before handing the turn on (its waiter left the queue).
      if !Self.spinUntil(20, { dSawW.load(ordering: .relaxed) || !Self.replayQueued(subject) }) {
        setupFailed.add(1, ordering: .relaxed)
      }
    }
    subject.subscribe(probe)
    let d = subject.sink { value in
      if value == wValue { dSawW.store(true, ordering: .relaxed) }
      guard value == 1 else { return }
      for k in 2...(burst + 1) { subject.send(k) }  // queued behind this delivery
      wGo.signal()
      if !Self.spinUntil(20, { Self.waitersQueued(subject) == 1 }) {
        setupFailed.add(1, ordering: .relaxed)
      }
      requestNow.signal()
      if !Self.spinUntil(20, { Self.waitersQueued(subject) == 2 }) {
        setupFailed.add(1, ordering: .relaxed)
      }
    }
    let r1 = relay1.sink { relay2.send($0) }
    let r2 = relay2.sink { subject.send($0) }
    let requestCall = Atomic<Int>(-1)
    let returned = await allReturn(threads: 3, deadline: .seconds(120)) { index in
      switch index {
      case 0:
        relay1.send(1)  // H: three turns deep at the subject's
      case 1:
        wGo.wait()
        probe.watching { subject.send(wValue) }  // W
      default:
        requestNow.wait()
        let before = probe.values.count
        probe.request(.unlimited)  // R: the replay
        requestCall.store(probe.values.count - before, ordering: .relaxed)
      }
    }
    #expect(returned, "every call returned")
    #expect(setupFailed.load(ordering: .relaxed) == 0, "the interleaving was not reached")
    // The replay's request takes effect when its drain adds the demand, beside H's turn: H goes
    // on once R's waiter is queued, and may offer the probe some of the burst before that (a
    // thread slow there, as under the address sanitizer). A subscriber without demand misses
    // those, as in Combine, and the replay is the value current then: the values are the burst
    // from the replayed one on, then W's value, none lost or reordered after the request.
    let values = probe.values
    let first = values.first ?? 0
    #expect(
      (1...(burst + 1)).contains(first) && values == Array(first...(burst + 1)) + [wValue],
      "replay (or a later current value), the rest of the burst, W's value: \(Self.summary(values))"
    )
    let inW = probe.othersInCall.load(ordering: .relaxed)
    print(
      "adv37d: handBackToAnInheritedTurn: W's send delivered \(inW) values of other threads; "
        + "R's request \(requestCall.load(ordering: .relaxed)) (bound \(Self.bound) + replay)")
    #expect(inW <= Self.bound, "W's one send call delivered \(inW) values of another thread")
    probe.cancel()
    withExtendedLifetime((d, r1, r2)) {}
  }

  /// One `request` on a `merge` of three `CurrentValueSubject`s asks each for `.unlimited` in
  /// turn, outside any turn of its own; each replay runs beside a holder that has a burst
  /// queued ahead of the replay's waiter. Each replay's turn begins a new call's allowance
  /// (``DeliveryContext/enter()`` at depth 0), so the one request call delivers up to three
  /// allowances of other threads' values.
  @Test("one request on a merge of three CurrentValueSubjects, each replay beside a burst")
  func oneRequestThroughMergeOfReplays() async {
    let count = 3
    let subjects = (0..<count).map { _ in CurrentValueSubject<Int, Never>(0) }
    // One allowance each: a replay's call takes it all and hands nothing back, so no holder
    // delivers into the merge while the request goes on to the next subject.
    let burst = Self.bound
    let dReceived = (0..<count).map { _ in Cell() }
    let ready = DispatchSemaphore(value: 0)
    let go = (0..<count).map { _ in DispatchSemaphore(value: 0) }
    let setupFailed = Atomic<Int>(0)
    // The replays (and the initial 0s the merge buffered at subscribe) are not counted.
    let probe = Counter(isOwn: { $0 % Self.stride <= 1 }) { value in
      guard value % Self.stride == 1 else { return }
      let k = value / Self.stride - 1
      go[k].signal()
      // The replay: slow until its holder delivered its burst (into the conduit's queue).
      if !Self.spinUntil(20, { dReceived[k].value.load(ordering: .relaxed) >= burst + 1 }) {
        setupFailed.add(1, ordering: .relaxed)
      }
    }
    Publishers.MergeMany(subjects).subscribe(probe)  // inners attached first, no demand
    let sinks = (0..<count).map { k in
      subjects[k].sink { value in
        dReceived[k].value.add(1, ordering: .relaxed)
        guard value % Self.stride == 1 else { return }
        for i in 2...(burst + 1) { subjects[k].send((k + 1) * Self.stride + i) }
        ready.signal()
        if go[k].wait(timeout: .now() + 20) == .timedOut { setupFailed.add(1, ordering: .relaxed) }
      }
    }
    let returned = await allReturn(threads: count + 1, deadline: .seconds(120)) { index in
      if index < count {
        subjects[index].send((index + 1) * Self.stride + 1)
        return
      }
      for _ in 0..<count { ready.wait() }
      probe.watching { probe.request(.unlimited) }
    }
    #expect(returned, "every call returned")
    #expect(setupFailed.load(ordering: .relaxed) == 0, "the interleaving was not reached")
    let inCall = probe.othersInCall.load(ordering: .relaxed)
    print(
      "adv37d: oneRequestThroughMergeOfReplays: one request call delivered \(inCall) values "
        + "of other threads (bound \(Self.bound))")
    #expect(inCall <= Self.bound, "one request call delivered \(inCall) values of others")
    let values = probe.values
    #expect(values.count == count * (burst + 2), "every value, once: \(values.prefix(8))")
    probe.cancel()
    withExtendedLifetime(sinks) {}
  }

  // MARK: 2. Deadlock, order and loss under feedback

  /// For each sender tag of `values` (`tag * stride + i`): in order, none twice, and — a
  /// subscriber with unlimited demand attached before the senders end — every value from the
  /// first it saw up to the sender's last (`last`), so nothing stays stranded in a queue.
  static func problems(_ values: [Int], last: Int) -> [String] {
    var byTag: [Int: [Int]] = [:]
    for value in values where value >= Self.stride {
      byTag[value / Self.stride, default: []].append(value % Self.stride)
    }
    var found: [String] = []
    for (tag, seen) in byTag where seen != Array(seen[0]...last) {
      found.append("tag \(tag): \(seen.count) values from \(seen[0]), last \(seen.last ?? -1)")
    }
    return found
  }

  /// Two `CurrentValueSubject`s whose permanent sinks forward each other's senders' values
  /// (A's to B, B's to A: turns that feed each other), two threads sending into each, while
  /// two threads keep attaching subscribers whose replay (slow) subscribes to the other
  /// subject and requests its replay from inside (a replay nested in a replay), sends into
  /// the other subject or the same one, or re-requests `.max(1)`; a fifth thread cancels
  /// them from outside, during their replays. Nothing hangs; the subscribers kept to the end
  /// receive each sender's values in order, none lost after the first.
  @Test("cross-forwarding subjects, nested and feeding replays, cancels from another thread")
  func crossForwardingWithReplayChaos() async {
    let a = CurrentValueSubject<Int, Never>(0)
    let b = CurrentValueSubject<Int, Never>(0)
    let fa = a.sink { v in if [1, 2].contains(v / Self.stride) { b.send(v + 10 * Self.stride) } }
    let fb = b.sink { v in if [3, 4].contains(v / Self.stride) { a.send(v + 10 * Self.stride) } }
    let perSender = max(2_000, stressScaled(20_000))
    let sendersDone = Atomic<Int>(0)
    let toCancel = SharedBox<[AnyCancellable]>([])
    let kept = SharedBox<[(Int, SharedBox<[Int]>, AnyCancellable)]>([])
    let weakProbes = SharedBox<[() -> AnyObject?]>([])
    let attachersDone = Atomic<Int>(0)
    let returned = await allReturn(threads: 7, deadline: .seconds(300)) { index in
      switch index {
      case 0..<4:
        let subject = index < 2 ? a : b
        for i in 0..<perSender { subject.send((index + 1) * Self.stride + i) }
        sendersDone.add(1, ordering: .sequentiallyConsistent)
      case 4, 5:
        defer { attachersDone.add(1, ordering: .relaxed) }
        var round = 0
        while sendersDone.load(ordering: .sequentiallyConsistent) < 4 {
          round += 1
          let (mine, other) = (round + index) % 2 == 0 ? (a, b) : (b, a)
          let received = SharedBox<[Int]>([])
          let first = Atomic<Bool>(true)
          let kind = round % 5
          let cancellable = mine.sink { value in
            received.withLock { $0.append(value) }
            guard first.exchange(false, ordering: .relaxed) else { return }
            switch kind {
            case 0:
              // A replay nested in a replay (and in the other subject's turn, perhaps).
              let inner = other.sink { _ in
                let c = mine.sink { _ in }; c.cancel()
              }
              inner.cancel()
            case 1: other.send(30 * Self.stride + round)
            case 2: mine.send(40 * Self.stride + round)
            default: usleep(UInt32(round % 4) * 200)
            }
          }
          if round % 40 == 1, kept.withLock({ $0.count }) < 6 {
            kept.withLock { $0.append((mine === a ? 0 : 1, received, cancellable)) }
          } else {
            toCancel.withLock { $0.append(cancellable) }
          }
          // `.max(1)` re-requested from inside: a replay after demand ran out.
          let probe = RequestTurnAttackTests.Probe<Int>(initialDemand: .max(1)) { probe, _ in
            probe.received.load(ordering: .relaxed) < 5 ? 1 : 0
          }
          weakProbes.withLock { [weak probe] in $0.append({ probe }) }
          mine.subscribe(probe)
          probe.request(1)
          probe.cancel()
        }
      default:
        while attachersDone.load(ordering: .relaxed) < 2 {
          let batch = toCancel.withLock { list -> [AnyCancellable] in
            defer { list.removeAll() }
            return list
          }
          for c in batch { c.cancel() }
          if batch.isEmpty { usleep(100) }
        }
      }
    }
    #expect(returned, "every call returned")
    for c in toCancel.withLock({ $0 }) { c.cancel() }
    var found: [String] = []
    for (_, received, _) in kept.withLock({ $0 }) {
      let values = received.withLock { $0 }
      // Tags 30 and 40: one value per round (the attachers' own); the rest per sender.
      found += Self.problems(values.filter { $0 / Self.stride < 30 }, last: perSender - 1)
    }
    #expect(found.isEmpty, "\(found.prefix(6)) (\(found.count) in all)")
    for (_, _, c) in kept.withLock({ $0 }) { c.cancel() }
    let alive = weakProbes.withLock { $0 }.filter { $0() != nil }.count
    #expect(alive == 0, "\(alive) cancelled subscribers still alive")
    withExtendedLifetime((fa, fb)) {}
  }

  /// A `@Published` model as apps have it: two threads set `x`; `objectWillChange`'s sink
  /// attaches to `$y` from inside (a replay requested from inside another publisher's
  /// delivery); two threads keep attaching "views" to `$x` whose replay sets `y`, while a sink
  /// on `$y` sets `x` back for some values (the turns feed each other). Nothing hangs, and a
  /// view kept to the end sees each setter's values in order with none lost.
  @Test("@Published + ObservableObject: views attaching while setters and feedback run")
  func publishedViewsWithFeedback() async {
    final class Model: ObservableObject, @unchecked Sendable {
      // Safety: `@Published` storage is thread-safe (its subject and lock).
      @Published var x = 0
      @Published var y = 0
    }
    let model = Model()
    let perSender = max(1_000, stressScaled(10_000))
    // `$x` is a `mutating get` (as in Combine): taken once, not from every thread at once.
    // Safety: a `Published.Publisher` only holds its storage, which is thread-safe.
    nonisolated(unsafe) let xs = model.$x
    nonisolated(unsafe) let ys = model.$y
    let will = model.objectWillChange.sink { _ in
      let c = ys.sink { _ in }; c.cancel()
    }
    let back = ys.sink { v in if v % 7 == 0, v < Self.stride { model.x = 50 * Self.stride + v } }
    let done = Atomic<Int>(0)
    let kept = SharedBox<[SharedBox<[Int]>]>([])
    let keep = SharedBox<[AnyCancellable]>([])
    let returned = await allReturn(threads: 4, deadline: .seconds(300)) { index in
      if index < 2 {
        for i in 0..<perSender { model.x = (index + 1) * Self.stride + i }
        done.add(1, ordering: .sequentiallyConsistent)
        return
      }
      var round = 0
      while done.load(ordering: .sequentiallyConsistent) < 2 {
        round += 1
        let received = SharedBox<[Int]>([])
        let first = Atomic<Bool>(true)
        let view = xs.sink { value in
          received.withLock { $0.append(value) }
          if first.exchange(false, ordering: .relaxed) { model.y = round * 10 + index }
        }
        if round % 50 == 1, kept.withLock({ $0.count }) < 4 {
          kept.withLock { $0.append(received) }
          keep.withLock { $0.append(view) }
        } else {
          view.cancel()
        }
      }
    }
    #expect(returned, "every call returned")
    var found: [String] = []
    for received in kept.withLock({ $0 }) {
      found += Self.problems(
        received.withLock { $0 }.filter { $0 / Self.stride < 50 }, last: perSender - 1)
    }
    #expect(found.isEmpty, "\(found.prefix(6)) (\(found.count) in all)")
    for c in keep.withLock({ $0 }) { c.cancel() }
    withExtendedLifetime((will, back)) {}
  }

  // MARK: 3. Completion and cancel while a replay's rest is handed back

  /// The burst shape, deterministic: the replay's call stops after its allowance and hands
  /// the rest back; meanwhile a third thread completes the subject (queued behind the replay's
  /// waiter), or cancels the replaying subscriber. Completed: the subscriber receives the
  /// whole burst, then the completion, once. Cancelled: nothing reaches it after `cancel()`
  /// returned, and it is released.
  @Test(
    "completion or cancel from another thread while a replay's rest is handed back",
    arguments: [false, true])
  func completionOrCancelDuringHandBack(cancelling: Bool) async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let burst = 500
    let dReceived = Atomic<Int>(0)
    let dBlocked = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    let third = DispatchSemaphore(value: 0)
    let thirdDone = DispatchSemaphore(value: 0)
    let cancelReturned = Atomic<Bool>(false)
    let afterCancel = Atomic<Int>(0)
    let timedOut = Atomic<Int>(0)
    let probe = RequestTurnAttackTests.Probe<Int>(initialDemand: .none) { probe, value in
      if cancelReturned.load(ordering: .sequentiallyConsistent) {
        afterCancel.add(1, ordering: .relaxed)
      }
      guard probe.received.load(ordering: .relaxed) == 1 else { return 0 }
      go.signal()
      if !Self.spinUntil(20, { dReceived.load(ordering: .relaxed) >= burst + 1 }) {
        timedOut.add(1, ordering: .relaxed)
      }
      third.signal()
      if thirdDone.wait(timeout: .now() + 20) == .timedOut { timedOut.add(1, ordering: .relaxed) }
      return 0
    }
    subject.subscribe(probe)
    let subscription = probe.subscription
    let d = subject.sink { value in
      dReceived.add(1, ordering: .relaxed)
      guard value == 1 else { return }
      for k in 2...(burst + 1) { subject.send(k) }
      dBlocked.signal()
      if go.wait(timeout: .now() + 20) == .timedOut { timedOut.add(1, ordering: .relaxed) }
    }
    let returned = await allReturn(threads: 3, deadline: .seconds(120)) { index in
      switch index {
      case 0: subject.send(1)
      case 1:
        dBlocked.wait()
        probe.request(1_000_000)
      default:
        third.wait()
        if cancelling {
          probe.cancel()
          cancelReturned.store(true, ordering: .sequentiallyConsistent)
        } else {
          subject.send(completion: .finished)
        }
        thirdDone.signal()
      }
    }
    #expect(returned, "every call returned")
    #expect(timedOut.load(ordering: .relaxed) == 0, "a wait timed out: the interleaving hung")
    if cancelling {
      #expect(afterCancel.load(ordering: .relaxed) == 0, "values after cancel() returned")
      #expect(probe.values == [1], "only the replay before the cancel")
    } else {
      #expect(probe.values == Array(1...(burst + 1)), "the replay, then the whole burst")
      #expect(probe.completions == 1)
      #expect(probe.afterCompletion.load(ordering: .relaxed) == 0)
      probe.cancel()
    }
    d.cancel()
    // The conduit released its subscriber (its mirror's `downstream` is nil once ended).
    let downstream = subscription.map { Mirror(reflecting: $0) }?.children.first {
      $0.label == "downstream"
    }?.value
    #expect(downstream.map { "\($0)" } == "nil", "the conduit still holds its subscriber")
  }

  /// `values` in runs of consecutive integers ("1002 values: 1...1001, 7000000"), for a
  /// failure's message.
  static func summary(_ values: [Int]) -> String {
    var runs: [ClosedRange<Int>] = []
    for value in values {
      if let run = runs.last, value == run.upperBound + 1 {
        runs[runs.count - 1] = run.lowerBound...value
      } else {
        runs.append(value...value)
      }
    }
    let text = runs.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0)" }
    return "\(values.count) values: " + text.joined(separator: ", ")
  }
}
