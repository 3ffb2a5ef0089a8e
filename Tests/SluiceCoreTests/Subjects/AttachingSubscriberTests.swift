import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import Synchronization
import Testing

/// A subscriber still inside `receive(subscription:)` receives nothing from another thread
/// (serial signals): what other threads send, complete or request meanwhile waits until that
/// call returns, while what the subscribing thread does itself (its request's replay, a value
/// an upstream sends inside it) is delivered at once, as in Combine. (Found by the address
/// sanitizer's run of `concurrentMixedTraffic`: a value sent on another thread reached a
/// subscriber that had requested inside `receive(subscription:)` before that call returned.)
@Suite("A subscriber attaching to a subject", .onThreadsOfTheirOwn)
struct AttachingSubscriberTests {
  /// One signal as the subscriber saw it.
  struct Event: Equatable, CustomStringConvertible {
    var signal: String
    /// Received while its `receive(subscription:)` was running.
    var insideAttach: Bool
    /// Received on the thread that subscribed.
    var onSubscribingThread: Bool

    var description: String {
      "\(signal)\(insideAttach ? " (inside, \(onSubscribingThread ? "same" : "other") thread)" : "")"
    }
  }

  /// Runs `whileAttaching` inside `receive(subscription:)` and records every signal.
  final class Attacher: Subscriber, @unchecked Sendable {
    // Safety: `state` is a SharedBox (NSLock); the closure is set once at init.
    typealias Input = Int
    typealias Failure = Never
    struct State {
      var subscription: Shared<any Subscription>?
      var inside = false
      var subscribingThread: pthread_t?
      var events: [Event] = []
    }
    let state = SharedBox(State())
    let whileAttaching: (any Subscription) -> Void

    init(whileAttaching: @escaping (any Subscription) -> Void) {
      self.whileAttaching = whileAttaching
    }

    var events: [Event] { state.withLock { $0.events } }
    /// Signals received from another thread while the subscriber was attaching.
    var overlapping: [Event] { events.filter { $0.insideAttach && !$0.onSubscribingThread } }
    var values: [String] { events.map(\.signal) }

    func receive(subscription: any Subscription) {
      state.withLock {
        $0.subscription = Shared(subscription)
        $0.inside = true
        $0.subscribingThread = pthread_self()
      }
      whileAttaching(subscription)
      state.withLock { $0.inside = false }
    }

    func record(_ signal: String) {
      state.withLock {
        $0.events.append(
          Event(
            signal: signal, insideAttach: $0.inside,
            onSubscribingThread: $0.subscribingThread == pthread_self()))
      }
    }

    func receive(_ input: Int) -> Subscribers.Demand {
      record("\(input)")
      return .none
    }

    func receive(completion: Subscribers.Completion<Never>) { record("finished") }

    func cancel() { state.withLock { $0.subscription }?.value.cancel() }
  }

  /// Runs `body` on another thread and waits (10 s at most) until it returns.
  static func onAnotherThread(_ body: @escaping @Sendable () -> Void) {
    let returned = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      body()
      returned.signal()
    }
    #expect(returned.wait(timeout: .now() + 10) == .success, "the other thread's call returned")
  }

  @Test func valuesAndCompletionFromAnotherThreadWaitUntilTheAttachReturns() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let attacher = Attacher { subscription in
      subscription.request(.unlimited)
      Self.onAnotherThread {
        for value in 1...3 { shared.value.send(value) }
        shared.value.send(completion: .finished)
      }
    }
    subject.subscribe(attacher)
    #expect(attacher.overlapping.isEmpty)
    #expect(attacher.values == ["1", "2", "3", "finished"])
  }

  @Test func aRequestFromAnotherThreadWaitsUntilTheAttachReturns() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let attacher = Attacher { subscription in
      let sharedSubscription = Shared(subscription)
      Self.onAnotherThread {
        sharedSubscription.value.request(.max(2))
        for value in 1...3 { shared.value.send(value) }
      }
    }
    subject.subscribe(attacher)
    #expect(attacher.overlapping.isEmpty)
    #expect(attacher.values == ["1", "2"], "two demanded")
    subject.send(4)
    #expect(attacher.values == ["1", "2"])
    attacher.cancel()
  }

  @Test func theReplayIsSynchronousAndTheOtherThreadsValuesFollowIt() {
    let subject = CurrentValueSubject<Int, Never>(0)
    let shared = Shared(subject)
    let attacher = Attacher { subscription in
      subscription.request(.unlimited)  // replays 0 here, as in Combine
      Self.onAnotherThread {
        shared.value.send(1)
        shared.value.send(2)
      }
    }
    subject.subscribe(attacher)
    #expect(attacher.overlapping.isEmpty)
    #expect(attacher.values == ["0", "1", "2"])
    #expect(attacher.events.first?.insideAttach == true, "the replay is inside the request")
    subject.send(3)  // after the attach: the fast path
    #expect(attacher.values == ["0", "1", "2", "3"])
    attacher.cancel()
  }

  @Test func aReplayRequestedFromAnotherThreadWaitsUntilTheAttachReturns() {
    let subject = CurrentValueSubject<Int, Never>(0)
    let attacher = Attacher { subscription in
      let sharedSubscription = Shared(subscription)
      Self.onAnotherThread { sharedSubscription.value.request(.max(1)) }
    }
    subject.subscribe(attacher)
    #expect(attacher.overlapping.isEmpty)
    #expect(attacher.values == ["0"], "replayed as the attach returned")
    attacher.cancel()
  }

  @Test func aCancelFromAnotherThreadWhileAttachingEndsIt() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    weak var released: Attacher?
    do {
      let attacher = Attacher { subscription in
        subscription.request(.unlimited)
        let sharedSubscription = Shared(subscription)
        Self.onAnotherThread {
          shared.value.send(1)
          sharedSubscription.value.cancel()
          shared.value.send(2)
        }
      }
      released = attacher
      subject.subscribe(attacher)
      subject.send(3)
      #expect(attacher.events.isEmpty, "cancelled before the queued value's delivery")
    }
    #expect(released == nil, "the subscription let go of its subscriber")
  }

  /// Values of another thread queued while attaching, then the subscribing thread sends one:
  /// it delivers them at once, in order, its own last, on its own thread.
  @Test func theSubscribingThreadsSendDeliversWhatWaitsFirst() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let attacher = Attacher { subscription in
      subscription.request(.unlimited)
      Self.onAnotherThread { for value in 1...10 { shared.value.send(value) } }
      shared.value.send(-1)
    }
    subject.subscribe(attacher)
    #expect(attacher.overlapping.isEmpty)
    #expect(attacher.values == (1...10).map { "\($0)" } + ["-1"])
    #expect(attacher.events.allSatisfy { $0.insideAttach && $0.onSubscribingThread })
    attacher.cancel()
  }

  /// A sender of another thread that floods a subscriber still attaching waits once a drain's
  /// share (32) is queued for it, until the attach ends: the queue stays bounded, and the
  /// subscribe call delivers only those 32 of it; the rest follows on the sender's thread.
  @Test func aSlowAttachPacesASenderOfAnotherThread() {
    let subject = PassthroughSubject<Int, Never>()
    let shared = Shared(subject)
    let sent = Atomic<Int>(0)
    let senderDone = DispatchSemaphore(value: 0)
    let sentWhileAttaching = Atomic<Int>(-1)
    let attacher = Attacher { subscription in
      subscription.request(.unlimited)
      Thread.detachNewThread {
        for value in 1...1_000 {
          shared.value.send(value)
          sent.add(1, ordering: .relaxed)
        }
        senderDone.signal()
      }
      let deadline = ContinuousClock.now + .seconds(10)
      while sent.load(ordering: .relaxed) < 31, ContinuousClock.now < deadline { usleep(100) }
      usleep(50_000)  // time for more sends, were they not paced
      sentWhileAttaching.store(sent.load(ordering: .relaxed), ordering: .relaxed)
    }
    subject.subscribe(attacher)
    let onSubscribingThread = attacher.events.filter(\.onSubscribingThread).count
    #expect(senderDone.wait(timeout: .now() + 10) == .success, "the sender went on")
    #expect(sentWhileAttaching.load(ordering: .relaxed) == 31, "the 32nd send waited")
    #expect(onSubscribingThread <= 64, "the subscribe call delivered \(onSubscribingThread)")
    #expect(attacher.overlapping.isEmpty)
    #expect(attacher.values == (1...1_000).map { "\($0)" })
    attacher.cancel()
  }

  /// A replay asked for by another thread while attaching is delivered, even though the
  /// subject completes before the attach ends (found by the adversary of this change).
  @Test func aReplayRequestedWhileAttachingSurvivesACompletion() {
    let subject = CurrentValueSubject<Int, Never>(7)
    let shared = Shared(subject)
    let attacher = Attacher { subscription in
      let sharedSubscription = Shared(subscription)
      Self.onAnotherThread {
        sharedSubscription.value.request(.max(1))
        shared.value.send(completion: .finished)
      }
    }
    subject.subscribe(attacher)
    #expect(attacher.overlapping.isEmpty)
    #expect(attacher.values == ["7", "finished"])
  }

  /// Subscribers attach while three threads send, complete and request: none of them receives
  /// anything on another thread while it attaches, and each receives every sender's values in
  /// order.
  @Test func attachingWhileThreadsSend() async {
    let rounds = max(20, Int(200 * stressScale))
    let overlaps = Atomic<Int>(0)
    let outOfOrder = Atomic<Int>(0)
    for _ in 0..<rounds {
      let subject = PassthroughSubject<Int, Never>()
      let shared = Shared(subject)
      let attachers = SharedBox<[Attacher]>([])
      await concurrently(3) { index in
        if index == 0 {
          for _ in 0..<20 {
            let attacher = Attacher { subscription in
              subscription.request(.unlimited)
              for _ in 0..<100 { yieldProcessorForTests() }
            }
            attachers.withLock { $0.append(attacher) }
            shared.value.subscribe(attacher)
          }
        } else {
          for value in 0..<2_000 { shared.value.send(index * 10_000 + value) }
        }
      }
      subject.send(completion: .finished)
      for attacher in attachers.withLock({ $0 }) {
        overlaps.add(attacher.overlapping.count, ordering: .relaxed)
        let values = attacher.values.dropLast().compactMap(Int.init)
        for sender in 1...2 {
          let own = values.filter { $0 / 10_000 == sender }
          if own != own.sorted() { outOfOrder.add(1, ordering: .relaxed) }
        }
        if attacher.values.last != "finished" { outOfOrder.add(1, ordering: .relaxed) }
      }
    }
    #expect(overlaps.load(ordering: .relaxed) == 0, "signals from another thread while attaching")
    #expect(outOfOrder.load(ordering: .relaxed) == 0)
  }
}

/// A short pause that lets other threads run (the attach stays open a little longer).
private func yieldProcessorForTests() {
  sched_yield()
}
