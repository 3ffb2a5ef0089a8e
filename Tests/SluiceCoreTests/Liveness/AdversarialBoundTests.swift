import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// Adversarial checks of issue 37's claims (issue 37): the per-call bound and bounded memory in
/// shapes the CallBoundTests do not build, and the documented rule for blocking subscribers.
@Suite(
  "Liveness, attacked: per-call bound, memory and the blocking-subscriber rule",
  .onThreadsOfTheirOwn)
struct AdversarialBoundTests {
  typealias Meter = CallBoundTests.CallMeter

  static func spin(_ nanoseconds: UInt64) {
    let end = DispatchTime.now().uptimeNanoseconds + nanoseconds
    while DispatchTime.now().uptimeNanoseconds < end {}
  }

  /// How many values the four senders of ``worstSend(perSender:attachAfter:send:attach:)``
  /// have sent.
  final class Progress: Sendable {
    let sent = Atomic<Int>(0)
    var count: Int { sent.load(ordering: .relaxed) }
  }

  /// Four threads each send `perSender` values (`send`, metered) while a fifth, once
  /// `attachAfter` values were sent, runs `attach`; the largest count of others' values one
  /// send delivered, or `nil` if a call never returned.
  static func worstSend(
    perSender: Int, attachAfter: Int, send: @escaping @Sendable (Int) -> Void,
    attach: @escaping @Sendable (Progress) -> Void
  ) async -> Int? {
    let meters = (0..<4).map { Meter(sender: $0) }
    let shared = UncheckedSendable(meters)
    let progress = Progress()
    let returned = await allReturn(threads: 5, deadline: .seconds(600)) { index in
      if index == 4 {
        while progress.count < attachAfter { usleep(100) }
        attach(progress)
        return
      }
      let meter = shared.value[index]
      meter.install()
      for i in 0..<perSender {
        meter.call { send(CallBoundTests.value(index, i)) }
        progress.sent.add(1, ordering: .relaxed)
      }
    }
    return returned ? meters.map(\.worst).max() ?? 0 : nil
  }

  /// A new subscriber of a `CurrentValueSubject` whose first value (the replay, delivered on
  /// the subscribing thread) is slow, while four threads send: the replay runs holding the
  /// subject's turn, so the senders hand over their grants and then wait, and no call — the
  /// subscribing one included — delivers more than its allowance of others' values. (Before,
  /// the values sent meanwhile queued in the new conduit and a sender's `send` later delivered
  /// every one of them: 300–1,100 per call.)
  @Test("CurrentValueSubject: slow replay on a new subscriber, four senders")
  func slowReplayHandsItsQueueToASender() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    // A subscriber already there, so that the turn is busy (~5 µs a value) as in an app.
    let first = subject.sink { CallBoundTests.received($0) }
    let maxLag = Atomic<Int>(0)
    let receivedBySecond = Atomic<Int>(0)
    let holder = SharedBox<AnyCancellable?>(nil)
    // Attaches once the senders are going; its first value takes 40 ms.
    let measured = await Self.worstSend(perSender: 3_000, attachAfter: 200) { value in
      subject.send(value)
    } attach: { progress in
      let isFirst = Atomic<Bool>(true)
      let cancellable = subject.sink { value in
        if isFirst.exchange(false, ordering: .relaxed) {
          usleep(40_000)
          return
        }
        let got = receivedBySecond.add(1, ordering: .relaxed).newValue
        maxLag.max(progress.count - got, ordering: .relaxed)
        CallBoundTests.received(value)
      }
      holder.withLock { $0 = cancellable }
    }
    #expect(measured != nil, "every call returned")
    let worst = measured ?? .max
    print(
      "liveness: slowReplay: worst send delivered \(worst) values of others (bound "
        + "\(DeliveryContext.allowancePerCall)); the second subscriber lagged by up to "
        + "\(maxLag.load(ordering: .relaxed)) values")
    // Both subscribers count what reaches them, so each value of others counts twice.
    #expect(
      worst <= 2 * DeliveryContext.allowancePerCall, "worst send: \(worst) deliveries of others")
    withExtendedLifetime((first, holder)) {}
  }

  /// A subscriber that stays inside `receive(subscription:)` (having asked for `.unlimited`)
  /// while four threads send into its `PassthroughSubject`, which another subscriber already
  /// has: what the senders' turns deliver to it meanwhile waits in its queue until the attach
  /// returns. Each turn that queued values for it stops at its end until then (no other turn
  /// adds to that queue), and delivers them itself afterwards — so no `send` delivers more than
  /// its allowance of others' values to each subscriber. (Before, the turns went on one after
  /// another, each queueing its share, and the first sender to come back delivered all of
  /// them: 200–330 values of others, a bound that grew with the number of senders.)
  @Test("PassthroughSubject: a slow attach while four threads send, each call bounded")
  func slowAttachQueueIsDeliveredByTheCallsThatQueuedIt() async {
    let subject = PassthroughSubject<Int, Never>()
    let first = subject.sink { CallBoundTests.received($0) }
    let received = Atomic<Int>(0)
    let holder = SharedBox<AnyCancellable?>(nil)
    let order = Mutex<[Int]>([])
    let perSender = 2_000
    let measured = await Self.worstSend(perSender: perSender, attachAfter: 100) { value in
      subject.send(value)
    } attach: { progress in
      let subscriber = AnySubscriber<Int, Never>(
        receiveSubscription: { subscription in
          subscription.request(.unlimited)
          // Inside the attach until the senders have been still for 20 ms (or 2 s).
          var last = -1
          let end = DispatchTime.now().uptimeNanoseconds + 2_000_000_000
          while DispatchTime.now().uptimeNanoseconds < end, progress.count != last {
            last = progress.count
            usleep(20_000)
          }
          holder.withLock { $0 = AnyCancellable(subscription) }
        },
        receiveValue: { value in
          received.add(1, ordering: .relaxed)
          order.withLock { $0.append(value) }
          CallBoundTests.received(value)
          return .none
        },
        receiveCompletion: { _ in })
      subject.subscribe(subscriber)
    }
    #expect(measured != nil, "every call returned")
    let worst = measured ?? .max
    print(
      "liveness: slowAttach: worst send delivered \(worst) values of others (bound "
        + "\(DeliveryContext.allowancePerCall) per subscriber); the attached subscriber received "
        + "\(received.load(ordering: .relaxed))")
    #expect(
      worst <= 2 * DeliveryContext.allowancePerCall, "worst send: \(worst) deliveries of others")
    // Nothing lost, duplicated or reordered: from its first value of each sender on, the
    // attached subscriber received every later one, in order.
    let values = order.withLock { $0 }
    for sender in 0..<4 {
      let indices = values.filter { $0 / 1_000_000 - 1 == sender }.map { $0 % 1_000_000 }
      guard let start = indices.first else { continue }
      #expect(indices == Array(start..<perSender), "sender \(sender): \(indices.count) values")
    }
    // The subscriber's closures hold `holder`, which holds its subscription: cancelled, the
    // cycle ends.
    let subscription = holder.withLock { held in
      defer { held = nil }
      return held
    }
    subscription?.cancel()
    first.cancel()
  }

  /// Memory: while a new `CurrentValueSubject` subscriber's first value (its replay, on the
  /// subscribing thread) is still being received, the senders feel its pace, as behind any
  /// delivery. Here the first `receive` returns only once the senders have sent 50,000 more
  /// values (or after 2 s): paced, they cannot, and what they sent meanwhile — queued for the
  /// subscriber — stays within the turn's grants and one value per sender. (Before, 50,000.)
  @Test("CurrentValueSubject: values queued behind a slow replay are bounded")
  func slowReplayQueueIsUnbounded() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let sent = Atomic<Int>(0)
    let queuedAtMost = Atomic<Int>(0)
    let received = Atomic<Int>(0)
    let holder = SharedBox<AnyCancellable?>(nil)
    let attached = Atomic<Bool>(false)
    let returned = await allReturn(threads: 3, deadline: .seconds(600)) { index in
      if index == 2 {
        let isFirst = Atomic<Bool>(true)
        let cancellable = subject.sink { _ in
          if isFirst.exchange(false, ordering: .relaxed) {
            attached.store(true, ordering: .relaxed)
            let start = sent.load(ordering: .relaxed)
            let end = DispatchTime.now().uptimeNanoseconds + 2_000_000_000
            while sent.load(ordering: .relaxed) < start + 50_000,
              DispatchTime.now().uptimeNanoseconds < end
            {
              usleep(200)
            }
            queuedAtMost.store(sent.load(ordering: .relaxed) - start, ordering: .relaxed)
            return
          }
          received.add(1, ordering: .relaxed)
        }
        holder.withLock { $0 = cancellable }
        return
      }
      while !attached.load(ordering: .relaxed) { sched_yield() }
      for i in 0..<40_000 {
        subject.send(i)
        sent.add(1, ordering: .relaxed)
      }
    }
    #expect(returned)
    let queued = queuedAtMost.load(ordering: .relaxed)
    print(
      "liveness: slowReplayQueue: \(queued) values sent (and queued for the subscriber) while its "
        + "first receive ran; it then received \(received.load(ordering: .relaxed))")
    #expect(
      queued <= DeliveryContext.allowancePerCall + 2,
      "values queued behind one slow receive: \(queued)")
    withExtendedLifetime(holder) {}
  }

  /// The documented rule, the nested case: no third thread sends at all and the other thread
  /// sends one value — but the blocked subscriber's turn is the third one its call holds
  /// (subject → subject → subject), whose grants the first two turns already reserved from the
  /// call's allowance (32 + 32 of 64), so the one value finds no grant and waits: without the
  /// subscriber's timeout (2 s here), a deadlock. Pinned as documented.
  @Test("blocking subscriber, nested three subjects deep: the other thread's one value waits")
  func blockingSubscriberThreeDeep() async {
    let s0 = PassthroughSubject<Int, Never>()
    let s1 = PassthroughSubject<Int, Never>()
    let target = PassthroughSubject<Int, Never>()
    let entered = DispatchSemaphore(value: 0)
    let otherReturned = DispatchSemaphore(value: 0)
    let sawOtherReturn = Mutex<Bool?>(nil)
    let c0 = s0.sink { s1.send($0) }
    let c1 = s1.sink { target.send($0) }
    let c2 = target.sink { value in
      guard value == 0 else { return }
      entered.signal()
      let got = otherReturned.wait(timeout: .now() + .seconds(1)) == .success
      sawOtherReturn.withLock { $0 = got }
    }
    let returned = await allReturn(threads: 1, deadline: .seconds(600)) { _ in
      let done = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        s0.send(0)
        done.signal()
      }
      entered.wait()
      target.send(1)  // one value, no other thread sending
      otherReturned.signal()
      done.wait()
    }
    #expect(returned)
    #expect(
      sawOtherReturn.withLock { $0 } == false,
      "Rule: a turn nested below turns that reserved the call's allowance has no grant")
    withExtendedLifetime((c0, c1, c2)) {}
  }

  /// The same through the shape apps write: a merge whose sink relays into a subject that a
  /// blocking subscriber observes. The subject's turn is the third of the call (subject,
  /// merge, subject), with no grant left: the one value waits (as documented).
  @Test("blocking subscriber behind merge → relay subject: the other thread's one value waits")
  func blockingSubscriberBehindMerge() async {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<Int, Never>()
    let relay = PassthroughSubject<Int, Never>()
    let entered = DispatchSemaphore(value: 0)
    let otherReturned = DispatchSemaphore(value: 0)
    let sawOtherReturn = Mutex<Bool?>(nil)
    let c0 = a.merge(with: b).sink { relay.send($0) }
    let c1 = relay.sink { value in
      guard value == 0 else { return }
      entered.signal()
      let got = otherReturned.wait(timeout: .now() + .seconds(1)) == .success
      sawOtherReturn.withLock { $0 = got }
    }
    let returned = await allReturn(threads: 1, deadline: .seconds(600)) { _ in
      let done = DispatchSemaphore(value: 0)
      Thread.detachNewThread {
        a.send(0)
        done.signal()
      }
      entered.wait()
      relay.send(1)
      otherReturned.signal()
      done.wait()
    }
    #expect(returned)
    #expect(
      sawOtherReturn.withLock { $0 } == false,
      "Rule: a turn nested below turns that reserved the call's allowance has no grant")
    withExtendedLifetime((c0, c1)) {}
  }

  /// `CurrentValueSubject.send` replaces the current value under the subject's lock: the old
  /// value's `deinit` runs there (the Lock's rule says dropped objects are released after
  /// unlocking). A value whose `deinit` reads the subject re-enters the lock: "Recursive call
  /// to lock Mutex" (run in a child process: the crash would end the test run).
  @Test("CurrentValueSubject: the old value's deinit reads the subject")
  func oldValueDeinitReadsTheSubject() async {
    await #expect(processExitsWith: .success) {
      final class Token: @unchecked Sendable {
        let onDeinit: () -> Void
        init(_ onDeinit: @escaping () -> Void) { self.onDeinit = onDeinit }
        deinit { onDeinit() }
      }
      let subject = CurrentValueSubject<Token?, Never>(nil)
      subject.send(Token { [subject] in _ = subject.value })
      subject.send(nil)  // the token's deinit
    }
  }

  /// The app shape: a view model kept in a `CurrentValueSubject` holds subscriptions — one to
  /// that same subject. Replacing it releases it under the subject's lock; its cancellables
  /// cancel, and the cancel detaches from the subject: the lock re-entered.
  @Test("CurrentValueSubject<ViewModel?>: replacing a view model subscribed to the subject")
  func replacedViewModelCancelsItsSubscription() async {
    await #expect(processExitsWith: .success) {
      final class ViewModel {
        var cancellables = Set<AnyCancellable>()
        var seen = 0
        init(_ current: CurrentValueSubject<ViewModel?, Never>) {
          current.sink { [weak self] _ in self?.seen += 1 }.store(in: &cancellables)
        }
      }
      let current = CurrentValueSubject<ViewModel?, Never>(nil)
      current.value = ViewModel(current)
      current.value = ViewModel(current)  // the first one is released
      current.value = nil
    }
  }
}

/// The per-call bound through operators the CallBoundTests leave out (issue 37): SerialDelivery
/// (delay / receive(on:) on ImmediateScheduler), switchToLatest, combineLatest of three, a
/// merge whose sink relays into a shared subject.
@Suite("Liveness, attacked: the per-call bound through more operators", .onThreadsOfTheirOwn)
struct AdversarialMoreBoundTests {
  static var bound: Int { DeliveryContext.allowancePerCall }

  @Test("merge → delay(ImmediateScheduler) → receive(on: ImmediateScheduler)")
  func serialDelivery() async {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<Int, Never>()
    let sink = a.merge(with: b)
      .delay(for: .zero, scheduler: ImmediateScheduler.shared)
      .receive(on: ImmediateScheduler.shared)
      .sink { CallBoundTests.received($0) }
    let worst = await CallBoundTests.worstCall { sender, value in (sender < 2 ? a : b).send(value) }
    #expect(worst != nil)
    #expect((worst ?? .max) <= Self.bound, "worst call: \(worst ?? -1)")
    withExtendedLifetime(sink) {}
  }

  @Test("switchToLatest over a subject that stays the latest")
  func switchToLatest() async {
    let outer = PassthroughSubject<AnyPublisher<Int, Never>, Never>()
    let inner = PassthroughSubject<Int, Never>()
    let sink = outer.switchToLatest().sink { CallBoundTests.received($0) }
    outer.send(inner.eraseToAnyPublisher())
    let worst = await CallBoundTests.worstCall { _, value in inner.send(value) }
    #expect(worst != nil)
    #expect((worst ?? .max) <= Self.bound, "worst call: \(worst ?? -1)")
    withExtendedLifetime(sink) {}
  }

  @Test("merge whose sink relays into a subject shared by two subscribers")
  func mergeIntoSharedRelay() async {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<Int, Never>()
    let relay = PassthroughSubject<Int, Never>()
    let shared = relay.share()
    let first = shared.sink { CallBoundTests.received($0) }
    let second = shared.sink { _ in }
    let feeding = a.merge(with: b).sink { relay.send($0) }
    let worst = await CallBoundTests.worstCall { sender, value in (sender < 2 ? a : b).send(value) }
    #expect(worst != nil)
    #expect((worst ?? .max) <= Self.bound, "worst call: \(worst ?? -1)")
    withExtendedLifetime((first, second, feeding)) {}
  }

  @Test("four senders into CurrentValueSubjects combined (combineLatest3), erased")
  func combineLatestThree() async {
    let subjects = (0..<3).map { _ in CurrentValueSubject<Int, Never>(0) }
    let sink = subjects[0].combineLatest(subjects[1], subjects[2]).eraseToAnyPublisher()
      .sink { x, y, z in
        if let meter = CallBoundTests.CallMeter.current,
          ![x, y, z].contains(where: { $0 / 1_000_000 - 1 == meter.sender })
        {
          meter.othersInCall += 1
        }
        let end = DispatchTime.now().uptimeNanoseconds + 5_000
        while DispatchTime.now().uptimeNanoseconds < end {}
      }
    let worst = await CallBoundTests.worstCall { sender, value in subjects[sender % 3].send(value) }
    #expect(worst != nil)
    #expect((worst ?? .max) <= Self.bound, "worst call: \(worst ?? -1)")
    withExtendedLifetime(sink) {}
  }
}
