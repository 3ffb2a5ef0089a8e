import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

@Suite("RuleChecker", .onThreadsOfTheirOwn)
struct RuleCheckerTests {
  @Test func aWellBehavedPublisherPasses() {
    let checker = RuleChecker()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2), demandPerValue: .max(1))
    (1...10).publisher.checkingRules(checker).subscribe(recorder)
    #expect(recorder.values == Array(1...10))
    #expect(checker.violations.isEmpty)
  }

  @Test func moreValuesThanDemanded() {
    let checker = RuleChecker()
    let upstream = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    upstream.checkingRules(checker).subscribe(recorder)
    upstream.send(1)
    upstream.send(2)
    #expect(checker.violations.map(\.rule) == [.moreValuesThanDemanded])
    #expect(checker.violations.first?.description.contains("more values than demanded") == true)
    recorder.cancel()
  }

  @Test func signalsAfterCompletionAndCompletingTwice() {
    let checker = RuleChecker()
    let upstream = IgnoresCancel()
    upstream.checkingRules(checker).subscribe(RecordingSubscriber<Int, Never>())
    upstream.complete()
    upstream.emit(1)
    upstream.complete()
    #expect(checker.violations.map(\.rule) == [.signalAfterCompletion, .signalAfterCompletion])
  }

  @Test func signalsAfterCancel() {
    let checker = RuleChecker()
    let misbehaving = IgnoresCancel()
    let recorder = RecordingSubscriber<Int, Never>()
    misbehaving.checkingRules(checker).subscribe(recorder)
    recorder.cancel()
    misbehaving.emit(1)
    #expect(checker.violations.map(\.rule) == [.signalAfterCancel])
  }

  @Test func oneInFlightSignalFromAnotherThreadIsAllowedButNotTwo() async {
    let checker = RuleChecker()
    let misbehaving = IgnoresCancel()
    let recorder = RecordingSubscriber<Int, Never>()
    misbehaving.checkingRules(checker).subscribe(recorder)
    recorder.cancel()
    let shared = UnsafeShared(misbehaving)
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      // A dedicated thread: never the pthread that called cancel().
      Thread {
        shared.value.emit(1)  // could have been under way when cancel() was called
        #expect(checker.violations.isEmpty)
        shared.value.emit(2)  // could not
        done.resume()
      }.start()
    }
    #expect(checker.violations.map(\.rule) == [.signalAfterCancel])
  }

  @Test func signalsBeforeSubscriptionAndDoubleSubscription() {
    let checker = RuleChecker()
    let recorder = RecordingSubscriber<Int, Never>()
    BrokenStart().checkingRules(checker).subscribe(recorder)
    #expect(
      checker.violations.map(\.rule) == [.signalBeforeSubscription, .subscribedTwice])
    recorder.cancel()
  }

  @Test func concurrentSignalsAreDetected() {
    let checker = RuleChecker()
    let gate = Gate()
    OverlappingPublisher(gate: gate).checkingRules(checker).subscribe(GatedSubscriber(gate: gate))
    #expect(checker.violations.contains { $0.rule == .concurrentSignals })
  }

  @Test func reentrantSignalsOnOneThreadAreAllowed() {
    let checker = RuleChecker()
    let subject = PassthroughSubject<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited) { value in
      if value < 3 { subject.send(value + 1) }
      return .none
    }
    subject.checkingRules(checker).subscribe(recorder)
    subject.send(1)
    #expect(recorder.values == [1, 2, 3])
    #expect(checker.violations.isEmpty)
    recorder.cancel()
  }

  @Test func onViolationIsCalledAsItHappens() {
    let seen = SeenRules()
    let checker = RuleChecker { seen.append($0.rule) }
    let upstream = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    upstream.checkingRules(checker).subscribe(recorder)
    upstream.send(1)
    #expect(seen.rules == [.moreValuesThanDemanded])
    recorder.cancel()
  }
}

private final class SeenRules: @unchecked Sendable {
  // Safety: guarded by the dispatch queue.
  private var storage: [RuleViolation.Rule] = []
  private let queue = DispatchQueue(label: "seen")
  func append(_ rule: RuleViolation.Rule) { queue.sync { storage.append(rule) } }
  var rules: [RuleViolation.Rule] { queue.sync { storage } }
}

/// Keeps delivering after cancel() and after completion.
private final class IgnoresCancel: Publisher, @unchecked Sendable {
  // Safety: used from one thread in the test.
  typealias Output = Int
  typealias Failure = Never
  private var subscriber: AnySubscriber<Int, Never>?
  func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
    self.subscriber = AnySubscriber(subscriber)
    subscriber.receive(subscription: TestSubscription())
  }
  func emit(_ value: Int) { _ = subscriber?.receive(value) }
  func complete() { subscriber?.receive(completion: .finished) }
}

/// Sends a value before its subscription, then a second subscription.
private struct BrokenStart: Publisher {
  typealias Output = Int
  typealias Failure = Never
  func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
    _ = subscriber.receive(0)
    subscriber.receive(subscription: TestSubscription())
    subscriber.receive(subscription: TestSubscription())
  }
}

/// Two semaphores that make two deliveries overlap deterministically.
private struct Gate: Sendable {
  let entered = DispatchSemaphore(value: 0)
  let release = DispatchSemaphore(value: 0)
}

/// Delivers 0 on another thread and, while that delivery is still running, 1 on this one.
private struct OverlappingPublisher: Publisher {
  typealias Output = Int
  typealias Failure = Never
  let gate: Gate

  func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
    subscriber.receive(subscription: TestSubscription())
    let shared = UnsafeShared(AnySubscriber(subscriber))
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
      _ = shared.value.receive(0)
      done.signal()
    }
    gate.entered.wait()  // the other thread is inside receive(0)
    _ = shared.value.receive(1)
    done.wait()
  }
}

private struct UnsafeShared<Value>: @unchecked Sendable {
  // Safety: deliberately unsafe: this publisher exists to break the rules.
  let value: Value
  init(_ value: Value) { self.value = value }
}

/// Blocks in receive(0) until receive(1) arrives on another thread.
private final class GatedSubscriber: Subscriber, @unchecked Sendable {
  // Safety: only immutable state.
  typealias Input = Int
  typealias Failure = Never
  let gate: Gate
  init(gate: Gate) { self.gate = gate }
  func receive(subscription: any Subscription) { subscription.request(.unlimited) }
  func receive(_ input: Int) -> Subscribers.Demand {
    if input == 0 {
      gate.entered.signal()
      gate.release.wait()
    } else {
      gate.release.signal()
    }
    return .none
  }
  func receive(completion: Subscribers.Completion<Never>) {}
}
