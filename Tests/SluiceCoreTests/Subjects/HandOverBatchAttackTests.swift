import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// The batch of granted values (``SharedSubscriberList/Next/runValues(_:from:)``), attacked in
/// the shapes apps write: many threads sending into a subject with several subscribers while
/// others subscribe, cancel and complete; subscribers that send into the subject, set a
/// `CurrentValueSubject`'s value, cancel, subscribe or complete from inside `receive`; limited
/// demand; replays; values whose `deinit` calls back into the subject; memory kept by the
/// buffers. What a subscriber can observe is checked: every subscriber attached from the start
/// receives the same sequence (the one order the sends were serialised in), each sender's
/// values in order, none twice, none lost; a subscriber attached (or cancelled) meanwhile
/// receives a contiguous slice of that sequence; one completion, nothing after it or after
/// `cancel()` returned; deliveries to one subscriber never overlap.
@Suite("Subjects: the holder's batch of granted values, attacked", .onThreadsOfTheirOwn)
struct HandOverBatchAttackTests {
  // MARK: Support

  /// What a subscriber received, and what it must not have seen.
  final class Log: @unchecked Sendable {
    // Safety: every field is read and written under `lock` (an NSLock), `inside` is atomic.
    private let lock = NSLock()
    private var _values: [Int] = []
    private var _completions = 0
    private var _afterEnd = 0
    private var _afterCancel = 0
    private var ended = false
    private var cancelReturned = false
    let inside = Atomic<Bool>(false)
    let overlaps = Atomic<Int>(0)

    func receive(_ value: Int) {
      if inside.exchange(true, ordering: .acquiringAndReleasing) {
        overlaps.add(1, ordering: .relaxed)
      }
      lock.withLock {
        if ended { _afterEnd += 1 }
        if cancelReturned { _afterCancel += 1 }
        _values.append(value)
      }
      inside.store(false, ordering: .releasing)
    }
    func complete() {
      lock.withLock {
        if ended { _afterEnd += 1 }
        _completions += 1
        ended = true
      }
    }
    /// `cancel()` returned: nothing may come after.
    func cancelled() { lock.withLock { cancelReturned = true } }
    /// Values that began after `cancel()` returned — or were in flight as it returned (a value
    /// already being delivered on another thread completes its delivery: at most one).
    var afterCancel: Int { lock.withLock { _afterCancel } }
    var values: [Int] { lock.withLock { _values } }
    var completions: Int { lock.withLock { _completions } }
    var afterEnd: Int { lock.withLock { _afterEnd } }
    var count: Int { lock.withLock { _values.count } }
  }

  /// A list of logs that grows from any thread.
  final class Logs: @unchecked Sendable {
    // Safety: under `lock`.
    private let lock = NSLock()
    private var logs: [Log] = []
    func add(_ log: Log) { lock.withLock { logs.append(log) } }
    var all: [Log] { lock.withLock { logs } }
  }

  /// A value under an NSLock (whose hand-overs the thread sanitizer sees, unlike a contended
  /// `Mutex`'s on Linux).
  final class Locked<T>: @unchecked Sendable {
    // Safety: `value` only under `lock`.
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    func withLock<R>(_ body: (inout T) -> R) -> R { lock.withLock { body(&value) } }
  }

  /// Cancellables kept from any thread.
  final class Bag: @unchecked Sendable {
    // Safety: under `lock`.
    private let lock = NSLock()
    private var items: [AnyCancellable] = []
    func add(_ item: AnyCancellable) { lock.withLock { items.append(item) } }
    func removeAll() { lock.withLock { items.removeAll() } }
  }

  /// Whether `slice` is a contiguous run of `reference` (whose values are unique).
  static func isContiguous(_ slice: [Int], in reference: [Int]) -> Bool {
    guard let first = slice.first else { return true }
    guard let start = reference.firstIndex(of: first), start + slice.count <= reference.count
    else { return false }
    return Array(reference[start..<(start + slice.count)]) == slice
  }

  static func noDuplicates(_ values: [Int]) -> Bool { Set(values).count == values.count }

  static func spin(_ nanoseconds: UInt64) {
    let end = DispatchTime.now().uptimeNanoseconds + nanoseconds
    while DispatchTime.now().uptimeNanoseconds < end {}
  }

  static func sink(_ subject: PassthroughSubject<Int, Never>, _ log: Log, work: UInt64 = 0)
    -> AnyCancellable
  {
    subject.sink(
      receiveCompletion: { _ in log.complete() },
      receiveValue: { value in
        log.receive(value)
        if work > 0 { spin(work) }
      })
  }

  /// A subscriber with limited demand: asks for `initial`, then on each value either returns
  /// `.max(1)` or requests one from inside `receive` (alternately), or — `replenishes` false —
  /// nothing.
  final class Demanding: Subscriber, @unchecked Sendable {
    // Safety: `subscription` is set once in `receive(subscription:)`, before any value, under
    // `lock`; `log` is thread-safe.
    typealias Input = Int
    typealias Failure = Never
    let log = Log()
    let initial: Int
    let replenishes: Bool
    private let lock = NSLock()
    private var _subscription: (any Subscription)?
    var subscription: (any Subscription)? { lock.withLock { _subscription } }

    init(initial: Int, replenishes: Bool) {
      self.initial = initial
      self.replenishes = replenishes
    }
    func receive(subscription: any Subscription) {
      lock.withLock { _subscription = subscription }
      subscription.request(.max(initial))
    }
    func receive(_ input: Int) -> Subscribers.Demand {
      log.receive(input)
      guard replenishes else { return .none }
      if input & 1 == 0 {
        subscription?.request(.max(1))
        return .none
      }
      return .max(1)
    }
    func receive(completion: Subscribers.Completion<Never>) { log.complete() }
  }

  // MARK: Many senders, churn

  @Test("many senders, three subscribers and churn: one order for all, slices for the churned")
  func manySendersWithChurn() async {
    let subject = PassthroughSubject<Int, Never>()
    let logs = (0..<3).map { _ in Log() }
    let sinks = logs.enumerated().map { index, log in
      Self.sink(subject, log, work: index == 2 ? 2_000 : 0)
    }
    let churned = Logs()
    let senders = 4
    let perSender = 3000
    let sendersDone = Atomic<Int>(0)
    let ok = await allReturn(threads: senders + 2) { thread in
      if thread < senders {
        for index in 0..<perSender {
          subject.send(SenderCoded.value(sender: thread, index: index))
          if index % 301 == 0 { sched_yield() }
        }
        sendersDone.add(1, ordering: .releasing)
      } else {
        // Subscribe, let it receive a little, cancel — from two threads.
        var round = 0
        while sendersDone.load(ordering: .acquiring) < senders, round < 400 {
          round += 1
          let log = Log()
          churned.add(log)
          let cancellable = Self.sink(subject, log)
          for _ in 0..<(round % 4) { sched_yield() }
          cancellable.cancel()
          log.cancelled()
        }
      }
    }
    #expect(ok, "a call never returned")
    let reference = logs[0].values
    #expect(reference.count == senders * perSender, "values lost or duplicated")
    #expect(SenderCoded.inOrderPerSender(reference))
    #expect(Self.noDuplicates(reference))
    for log in logs.dropFirst() {
      #expect(log.values == reference, "two subscribers saw different orders")
    }
    var bad = 0
    for log in churned.all where !Self.isContiguous(log.values, in: reference) { bad += 1 }
    #expect(bad == 0, "a churned subscriber's values were not one contiguous run of the order")
    #expect(churned.all.allSatisfy { $0.afterCancel <= 1 }, "values after cancel() returned")
    // Completion from two threads at once: exactly one each.
    await simultaneously(
      { subject.send(completion: .finished) }, { subject.send(completion: .finished) })
    for log in logs {
      #expect(log.completions == 1)
      #expect(log.afterEnd == 0)
      #expect(log.overlaps.load(ordering: .relaxed) == 0)
    }
    Self.expectIdle(subject.core)
    // (A batch ran: its buffer came back as the spare, with its capacity.)
    let batched = subject.core.state.withLock {
      max($0.subscribers.spareBuffer.capacity, $0.subscribers.handedOver.capacity) >= 2
    }
    #expect(batched, "no batch ran: the test did not reach what it attacks")
    withExtendedLifetime(sinks) {}
  }

  /// The subject's queue is empty and its counter of non-value work is 0.
  static func expectIdle<Output>(_ core: SubjectCore<Output, Never>) {
    let (idle, other, waiters) = core.state.withLock {
      ($0.subscribers.isIdle, $0.subscribers.otherWork, $0.subscribers.waitersQueued)
    }
    #expect(idle)
    #expect(other == 0, "the counter of queued non-value work drifted")
    #expect(waiters == 0)
    #expect(core.subscribers.reader.load(ordering: .relaxed) == 0, "the turn was not given back")
  }

  @Test("a completion racing batches: the same prefix for all, one completion, nothing after")
  func completionRacingBatches() async {
    for round in 0..<6 {
      let subject = PassthroughSubject<Int, Never>()
      let logs = (0..<3).map { _ in Log() }
      let sinks = logs.map { Self.sink(subject, $0) }
      let senders = 4
      let ok = await allReturn(threads: senders + 1) { thread in
        if thread < senders {
          for index in 0..<2000 { subject.send(SenderCoded.value(sender: thread, index: index)) }
        } else {
          while logs[0].count < 300 + round * 200 { sched_yield() }
          subject.send(completion: .finished)
        }
      }
      #expect(ok)
      let reference = logs[0].values
      #expect(SenderCoded.inOrderPerSender(reference))
      for log in logs {
        #expect(log.values == reference, "subscribers saw different values before the completion")
        #expect(log.completions == 1)
        #expect(log.afterEnd == 0, "a value after the completion")
      }
      Self.expectIdle(subject.core)
      withExtendedLifetime(sinks) {}
    }
  }

  @Test("a subscriber cancelled from another thread while batches run: nothing after cancel()")
  func cancelFromAnotherThread() async {
    for _ in 0..<20 {
      let subject = PassthroughSubject<Int, Never>()
      let keep = Log()
      let victim = Log()
      let keeper = Self.sink(subject, keep)
      let cancellable = CancellableSlot()
      cancellable.value = Self.sink(subject, victim, work: 2000)
      let ok = await allReturn(threads: 4) { thread in
        if thread < 3 {
          for index in 0..<600 { subject.send(SenderCoded.value(sender: thread, index: index)) }
        } else {
          while victim.count < 20 { sched_yield() }
          cancellable.value?.cancel()
          victim.cancelled()
        }
      }
      #expect(ok)
      #expect(victim.afterCancel <= 1, "values reached a subscriber after cancel() returned")
      #expect(keep.values.count == 1800)
      #expect(Self.isContiguous(victim.values, in: keep.values))
      #expect(victim.overlaps.load(ordering: .relaxed) == 0)
      Self.expectIdle(subject.core)
      withExtendedLifetime(keeper) {}
    }
  }

  // MARK: Re-entrancy during a batch

  @Test("feedback: subscribers send, cancel and subscribe from inside receive during batches")
  func reentrantFeedback() async {
    let subject = PassthroughSubject<Int, Never>()
    let reference = Log()
    let mirror = Log()
    let late = Logs()
    let selfCancelled = Log()
    let lateCancellables = Bag()
    let echoSender = 40
    // Subscriber 0: echoes every 7th original value (an echo after its original, in one order).
    let feedback = subject.sink { value in
      reference.receive(value)
      let sender = SenderCoded.sender(of: value)
      let index = value % SenderCoded.stride
      if sender < echoSender, index % 7 == 0 {
        subject.send(SenderCoded.value(sender: echoSender + sender, index: index))
      }
    }
    let mirrored = Self.sink(subject, mirror)
    // Subscriber 2: cancels itself on its 500th value.
    let slot = CancellableSlot()
    slot.value = subject.sink { value in
      selfCancelled.receive(value)
      if selfCancelled.count == 500 {
        slot.value?.cancel()
        selfCancelled.cancelled()
      }
    }
    // Subscriber 3: every 250th original value, subscribes a new subscriber from inside
    // `receive` (it must not receive that value, nor anything before it).
    let subscriber = subject.sink { value in
      let index = value % SenderCoded.stride
      guard SenderCoded.sender(of: value) < echoSender, index % 250 == 0 else { return }
      let log = Log()
      late.add(log)
      let cancellable = subject.sink { log.receive($0) }
      lateCancellables.add(cancellable)
      Self.attachedAt.withLock { $0[ObjectIdentifier(log)] = value }
    }
    let senders = 4
    let perSender = 2500
    let ok = await allReturn(threads: senders) { thread in
      for index in 0..<perSender { subject.send(SenderCoded.value(sender: thread, index: index)) }
    }
    #expect(ok)
    let all = reference.values
    let echoes = senders * ((perSender + 6) / 7)
    #expect(all.count == senders * perSender + echoes, "values lost or duplicated")
    #expect(mirror.values == all, "two subscribers saw different orders")
    #expect(SenderCoded.inOrderPerSender(all))
    #expect(Self.noDuplicates(all))
    // Each echo after its original.
    var position: [Int: Int] = [:]
    for (offset, value) in all.enumerated() { position[value] = offset }
    var misplaced = 0
    for value in all where SenderCoded.sender(of: value) >= echoSender {
      let original = SenderCoded.value(
        sender: SenderCoded.sender(of: value) - echoSender, index: value % SenderCoded.stride)
      if let before = position[original], before < position[value]! { continue }
      misplaced += 1
    }
    #expect(misplaced == 0, "an echo came before its original")
    #expect(selfCancelled.values == Array(all.prefix(500)))
    #expect(selfCancelled.afterCancel == 0, "a value after a cancel from inside receive")
    var badLate = 0
    var early = 0
    for log in late.all {
      let values = log.values
      guard let attached = Self.attachedAt.withLock({ $0[ObjectIdentifier(log)] }),
        let at = position[attached]
      else { continue }
      if !Self.isContiguous(values, in: all) { badLate += 1 }
      // A contiguous run ending with the last value (it was never cancelled), after `attached`.
      if let first = values.first, position[first]! <= at { early += 1 }
      if let last = values.last, last != all.last { badLate += 1 }
    }
    #expect(badLate == 0, "a subscriber attached from inside receive missed values sent after")
    #expect(early == 0, "a subscriber attached from inside receive got a value sent before")
    Self.expectIdle(subject.core)
    withExtendedLifetime((feedback, mirrored, subscriber, lateCancellables)) {}
  }

  static let attachedAt = Locked<[ObjectIdentifier: Int]>([:])

  @Test("a subscriber that completes the subject from inside receive while batches run")
  func completeFromInsideReceive() async {
    for round in 0..<8 {
      let subject = PassthroughSubject<Int, Never>()
      let first = Log()
      let second = Log()
      let limit = 200 + 150 * round
      let completer = subject.sink(
        receiveCompletion: { _ in first.complete() },
        receiveValue: { value in
          first.receive(value)
          if first.count == limit { subject.send(completion: .finished) }
        })
      let other = Self.sink(subject, second)
      let ok = await allReturn(threads: 4) { thread in
        for index in 0..<1500 { subject.send(SenderCoded.value(sender: thread, index: index)) }
      }
      #expect(ok)
      // The completion is queued behind the value being delivered — and behind values already
      // queued: the same values reach both, then one completion.
      #expect(first.values == second.values)
      #expect(first.values.count >= limit)
      #expect(first.completions == 1 && second.completions == 1)
      #expect(first.afterEnd == 0 && second.afterEnd == 0)
      Self.expectIdle(subject.core)
      withExtendedLifetime((completer, other)) {}
    }
  }

  @Test("CurrentValueSubject: value set from inside receive while threads set and send")
  func currentValueFeedback() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let logs = (0..<3).map { _ in Log() }
    let echoSender = 40
    var cancellables = [AnyCancellable]()
    cancellables.append(
      subject.sink { value in
        logs[0].receive(value)
        let index = value % SenderCoded.stride
        let sender = SenderCoded.sender(of: value)
        if sender >= 0, sender < echoSender, index % 5 == 0 {
          subject.value = SenderCoded.value(sender: echoSender + sender, index: index)
        }
      })
    for log in logs.dropFirst() { cancellables.append(subject.sink { log.receive($0) }) }
    let lateLogs = Logs()
    let senders = 4
    let perSender = 2000
    let sendersDone = Atomic<Int>(0)
    let ok = await allReturn(threads: senders + 1) { thread in
      if thread < senders {
        for index in 0..<perSender {
          let value = SenderCoded.value(sender: thread, index: index)
          if index & 1 == 0 { subject.send(value) } else { subject.value = value }
        }
        sendersDone.add(1, ordering: .releasing)
      } else {
        // Late subscribers (replays beside the turn), some cancelled at once.
        var round = 0
        while sendersDone.load(ordering: .acquiring) < senders, round < 300 {
          round += 1
          let log = Log()
          lateLogs.add(log)
          let cancellable = subject.sink { log.receive($0) }
          if round % 3 == 0 {
            cancellable.cancel()
            log.cancelled()
          } else {
            Self.lateKeep.add(cancellable)
          }
        }
      }
    }
    #expect(ok)
    let reference = logs[0].values
    #expect(reference.first == 0)
    for log in logs.dropFirst() {
      #expect(log.values == reference, "subscribers saw different orders")
    }
    #expect(reference.last == subject.value, "the last value received is not the subject's value")
    #expect(SenderCoded.inOrderPerSender(reference))
    #expect(Self.noDuplicates(reference))
    #expect(reference.count == 1 + senders * perSender + senders * (perSender / 5))
    var bad = 0
    var badReplay = 0
    for log in lateLogs.all {
      let values = log.values
      guard let replayed = values.first else { badReplay += 1; continue }
      // The replay, then the values sent after it was the value, in order.
      guard let at = reference.firstIndex(of: replayed) else { badReplay += 1; continue }
      let rest = Array(values.dropFirst())
      if !rest.isEmpty,
        rest != Array(reference[(at + 1)..<min(reference.count, at + 1 + rest.count)])
      {
        bad += 1
      }
      if log.afterCancel > 1 { bad += 1 }
    }
    #expect(badReplay == 0, "a late subscriber's replay was not a value of the order")
    #expect(bad == 0, "a late subscriber's values did not follow its replay in the order")
    for log in logs + lateLogs.all { #expect(log.overlaps.load(ordering: .relaxed) == 0) }
    Self.expectIdle(subject.core)
    Self.lateKeep.removeAll()
    withExtendedLifetime(cancellables) {}
  }

  static let lateKeep = Bag()

  // MARK: Demand

  @Test("limited demand replenished from inside receive loses nothing; a cap gets the prefix")
  func limitedDemand() async {
    let subject = PassthroughSubject<Int, Never>()
    let reference = Log()
    let unlimited = Self.sink(subject, reference)
    let replenishing = Demanding(initial: 1, replenishes: true)
    let replenishingMore = Demanding(initial: 3, replenishes: true)
    let capped = Demanding(initial: 100, replenishes: false)
    subject.subscribe(replenishing)
    subject.subscribe(replenishingMore)
    subject.subscribe(capped)
    let ok = await allReturn(threads: 4) { thread in
      for index in 0..<2000 { subject.send(SenderCoded.value(sender: thread, index: index)) }
    }
    #expect(ok)
    let all = reference.values
    #expect(all.count == 8000)
    #expect(replenishing.log.values == all, "a value demanded from inside receive was lost")
    #expect(replenishingMore.log.values == all, "a value demanded from inside receive was lost")
    #expect(capped.log.values == Array(all.prefix(100)))
    Self.expectIdle(subject.core)
    // A subscriber holding its subscription keeps both alive until it cancels (as in Combine):
    // the leak sanitizer's run of the suite would report them.
    for demanding in [replenishing, replenishingMore, capped] { demanding.subscription?.cancel() }
    withExtendedLifetime(unlimited) {}
  }

  @Test("counter drift: waiters, replays, drains, releases, completions, then more values")
  func counterDrift() async {
    for round in 0..<4 {
      let subject = CurrentValueSubject<Int, Never>(-5)
      let reference = Log()
      let keeper = subject.sink(
        receiveCompletion: { _ in reference.complete() },
        receiveValue: { value in
          reference.receive(value)
          if value % 13 == 0 { Self.spin(1_000) }
        })
      let subscribers = Logs()
      let senders = 3
      let sendersDone = Atomic<Int>(0)
      let ok = await allReturn(threads: senders + 2) { thread in
        if thread < senders {
          // Long runs past 32 grants per turn (waiters), from three threads.
          for index in 0..<3000 { subject.send(SenderCoded.value(sender: thread, index: index)) }
          sendersDone.add(1, ordering: .releasing)
        } else {
          // Replays (limited demand: each request replays the owed value, or drains), cancels
          // while another thread delivers.
          var count = 0
          while sendersDone.load(ordering: .acquiring) < senders, count < 150 {
            count += 1
            let demanding = Demanding(initial: 1, replenishes: thread == senders)
            subscribers.add(demanding.log)
            subject.subscribe(demanding)
            for _ in 0..<3 {
              demanding.subscription?.request(.max(2))
              sched_yield()
            }
            demanding.subscription?.cancel()
            demanding.log.cancelled()
          }
        }
      }
      #expect(ok)
      var bad = 0
      for log in subscribers.all {
        if !SenderCoded.inOrderPerSender(log.values) || !Self.noDuplicates(log.values)
          || log.afterEnd > 0 || log.afterCancel > 1 || log.overlaps.load(ordering: .relaxed) > 0
        {
          bad += 1
        }
      }
      #expect(bad == 0, "a limited subscriber saw values out of order, twice, or after cancel")
      #expect(reference.values.count == 1 + senders * 3000)
      #expect(SenderCoded.inOrderPerSender(reference.values))
      Self.expectIdle(subject.core)
      // Then more values, from two threads, and a completion: all delivered.
      let ok2 = await allReturn(threads: 2) { thread in
        for index in 0..<500 { subject.send(SenderCoded.value(sender: 10 + thread, index: index)) }
      }
      #expect(ok2)
      subject.send(completion: .finished)
      #expect(reference.values.count == 1 + senders * 3000 + 1000, "round \(round): values lost")
      #expect(reference.completions == 1)
      Self.expectIdle(subject.core)
      withExtendedLifetime(keeper) {}
    }
  }

  // MARK: Values that call back, memory

  /// A value that counts itself alive, and whose `deinit` may call back.
  final class Token: @unchecked Sendable {
    // Safety: every field is set at init and never changed.
    let id: Int
    let onDeinit: (@Sendable (Int) -> Void)?
    init(_ id: Int, counter: LiveCounter, onDeinit: (@Sendable (Int) -> Void)? = nil) {
      self.id = id
      self.counter = counter
      self.onDeinit = onDeinit
      counter.count.add(1, ordering: .relaxed)
    }
    let counter: LiveCounter
    deinit {
      counter.count.subtract(1, ordering: .relaxed)
      onDeinit?(id)
    }
  }

  final class LiveCounter: Sendable {
    let count = Atomic<Int>(0)
  }

  @Test("values whose deinit sends, reads the value and subscribes, released during batches")
  func deinitCallsBack() async {
    let counter = LiveCounter()
    let subject = CurrentValueSubject<Token?, Never>(nil)
    let plain = PassthroughSubject<Token, Never>()
    let received = Atomic<Int>(0)
    let marks = Atomic<Int>(0)
    let keep = subject.sink { token in
      if token != nil { received.add(1, ordering: .relaxed) }
    }
    let keepPlain = plain.sink { _ in received.add(1, ordering: .relaxed) }
    let ok = await allReturn(threads: 4) { thread in
      for index in 0..<1500 {
        let id = thread * 100_000 + index
        let token = Token(id, counter: counter) { id in
          switch id % 4 {
          case 0:
            // Sends into the subject it came from (a value without callback).
            subject.send(Token(-1, counter: counter))
            marks.add(1, ordering: .relaxed)
          case 1:
            _ = subject.value
            marks.add(1, ordering: .relaxed)
          case 2:
            let cancellable = subject.sink { _ in }
            cancellable.cancel()
            marks.add(1, ordering: .relaxed)
          default:
            plain.send(Token(-2, counter: counter))
            marks.add(1, ordering: .relaxed)
          }
        }
        if index & 1 == 0 { subject.send(token) } else { plain.send(token) }
      }
    }
    #expect(ok, "a call never returned")
    // The subject keeps its current value (one token); nothing else is kept.
    subject.value = nil
    #expect(marks.load(ordering: .relaxed) == 6000)
    #expect(counter.count.load(ordering: .relaxed) == 0, "the subjects kept values alive")
    Self.expectIdle(subject.core)
    Self.expectIdle(plain.core)
    withExtendedLifetime((keep, keepPlain)) {}
  }

  @Test("the two buffers keep no value alive once the sends end (slow subscriber: batches)")
  func buffersKeepNothing() async {
    let counter = LiveCounter()
    let subject = PassthroughSubject<Token, Never>()
    let weakCheck = Locked<[WeakToken]>([])
    let received = Atomic<Int>(0)
    let keep = subject.sink { _ in
      received.add(1, ordering: .relaxed)
      Self.spin(500)
    }
    let ok = await allReturn(threads: 4) { thread in
      for index in 0..<800 {
        let token = Token(thread * 10_000 + index, counter: counter)
        if index % 50 == 0 { weakCheck.withLock { $0.append(WeakToken(token)) } }
        subject.send(token)
      }
    }
    #expect(ok)
    #expect(received.load(ordering: .relaxed) == 3200)
    #expect(counter.count.load(ordering: .relaxed) == 0, "a value outlived its delivery")
    #expect(weakCheck.withLock { $0.allSatisfy { $0.token == nil } })
    let capacities = subject.core.state.withLock {
      ($0.subscribers.handedOver.count, $0.subscribers.spareBuffer.count)
    }
    #expect(capacities == (0, 0))
    withExtendedLifetime(keep) {}
  }

  final class WeakToken: @unchecked Sendable {
    weak var token: Token?
    init(_ token: Token) { self.token = token }
  }

  // MARK: Operators fed by subjects

  @Test("merge and share fed by two subjects from several threads: one order for both sinks")
  func mergeAndShare() async {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<Int, Never>()
    let shared = a.merge(with: b).share()
    let first = Log()
    let second = Log()
    let one = shared.sink { first.receive($0) }
    let two = shared.sink { second.receive($0) }
    let ok = await allReturn(threads: 4) { thread in
      let subject = thread & 1 == 0 ? a : b
      for index in 0..<2000 { subject.send(SenderCoded.value(sender: thread, index: index)) }
    }
    #expect(ok)
    #expect(first.values.count == 8000)
    #expect(first.values == second.values)
    #expect(SenderCoded.inOrderPerSender(first.values))
    #expect(first.overlaps.load(ordering: .relaxed) == 0)
    withExtendedLifetime((one, two)) {}
  }

  @Test("flatMap over inner subjects, fed from several threads: order per sender, nothing lost")
  func flatMapInnerSubjects() async {
    let outer = PassthroughSubject<PassthroughSubject<Int, Never>, Never>()
    let inners = (0..<3).map { _ in PassthroughSubject<Int, Never>() }
    let log = Log()
    let flat = outer.flatMap(maxPublishers: .unlimited) { $0 }.sink { log.receive($0) }
    for inner in inners { outer.send(inner) }
    let ok = await allReturn(threads: 6) { thread in
      for index in 0..<1000 {
        inners[thread % 3].send(SenderCoded.value(sender: thread, index: index))
      }
    }
    #expect(ok)
    #expect(log.values.count == 6000)
    #expect(SenderCoded.inOrderPerSender(log.values))
    #expect(log.overlaps.load(ordering: .relaxed) == 0)
    withExtendedLifetime(flat) {}
  }

  @Test("receive(on:) a serial queue from several senders: order per sender, nothing lost")
  func receiveOnQueue() async {
    let subject = PassthroughSubject<Int, Never>()
    let queue = DispatchQueue(label: "HandOverBatchAttack")
    let log = Log()
    let done = DispatchSemaphore(value: 0)
    let total = 4 * 1500
    let cancellable = subject.receive(on: queue).sink { value in
      log.receive(value)
      if log.count == total { done.signal() }
    }
    let ok = await allReturn(threads: 4) { thread in
      for index in 0..<1500 { subject.send(SenderCoded.value(sender: thread, index: index)) }
    }
    #expect(ok)
    let arrived = await onThreadOfItsOwn { done.wait(timeout: .now() + 600) == .success }
    #expect(arrived, "values lost on the way to the queue")
    #expect(SenderCoded.inOrderPerSender(log.values))
    withExtendedLifetime(cancellable) {}
  }

  // MARK: @Published and ObservableObject

  final class Model: ObservableObject, @unchecked Sendable {
    // Safety: `@Published` storage is a subject (thread-safe); the wrapper itself is never
    // reassigned.
    @Published var reading = 0
  }

  @Test("@Published set from several threads, objectWillChange observed: one order, all counted")
  func publishedFromManyThreads() async {
    let model = Model()
    let logs = (0..<3).map { _ in Log() }
    var cancellables = logs.map { log in model.$reading.sink { log.receive($0) } }
    let changes = [LiveCounter(), LiveCounter()]
    let willChange = Log()
    cancellables.append(model.objectWillChange.sink { changes[0].count.add(1, ordering: .relaxed) })
    cancellables.append(
      model.objectWillChange.sink {
        changes[1].count.add(1, ordering: .relaxed)
        willChange.receive(0)
      })
    let senders = 4
    let perSender = 1500
    let ok = await allReturn(threads: senders) { thread in
      for index in 0..<perSender { model.reading = SenderCoded.value(sender: thread, index: index) }
    }
    #expect(ok)
    let reference = logs[0].values
    #expect(reference.count == 1 + senders * perSender)
    for log in logs.dropFirst() { #expect(log.values == reference) }
    #expect(SenderCoded.inOrderPerSender(reference))
    #expect(reference.last == model.reading)
    #expect(changes[0].count.load(ordering: .relaxed) == senders * perSender)
    #expect(changes[1].count.load(ordering: .relaxed) == senders * perSender)
    #expect(willChange.overlaps.load(ordering: .relaxed) == 0)
    withExtendedLifetime(cancellables) {}
  }
}
