import Dispatch
import SluiceCore
import SluiceTesting
import Testing

/// `share()`.
@Suite("share")
struct ShareTests {
  @Test func subscribersShareOneUpstreamSubscriptionUntilTheLastCancels() {
    let upstream = TestPublisher<Int, Never>()
    let shared = upstream.map { $0 * 10 }.share()
    let first = RecordingSubscriber<Int, Never>()
    let second = RecordingSubscriber<Int, Never>()
    shared.subscribe(first)
    shared.subscribe(second)
    #expect(upstream.subscriptions.count == 1)
    #expect(upstream.subscriptions[0].requests == [.unlimited])
    upstream.send(1)
    upstream.send(2)
    #expect(first.values == [10, 20])
    #expect(second.values == [10, 20])
    first.cancel()
    #expect(!upstream.subscriptions[0].isCancelled)
    upstream.send(3)
    #expect(second.values == [10, 20, 30])
    second.cancel()
    #expect(upstream.subscriptions[0].isCancelled)
    let third = RecordingSubscriber<Int, Never>()
    shared.subscribe(third)
    #expect(upstream.subscriptions.count == 2, "a later subscriber connects again")
    third.cancel()
  }

  @Test func aSharedFutureRunsItsWorkOnce() {
    var runs = 0
    let scheduler = DispatchQueue.test
    let shared = Deferred {
      runs += 1
      return Just(42)
    }.delay(for: .seconds(1), scheduler: scheduler).share()
    let a = RecordingSubscriber<Int, Never>()
    let b = RecordingSubscriber<Int, Never>()
    shared.subscribe(a)
    shared.subscribe(b)
    #expect(runs == 1)
    #expect(shared == shared)
    let other = Deferred { Just(1) }.delay(for: .seconds(1), scheduler: DispatchQueue.test).share()
    #expect(shared != other)
    a.cancel()
    b.cancel()
    // The delayed value is still scheduled, holding the delay's subscription, which holds the
    // scheduler: let the scheduler run it out.
    scheduler.run()
  }

  @Test func aSubscriberWithoutDemandMissesWhatOthersReceive() {
    let upstream = PassthroughSubject<Int, Never>()
    let shared = upstream.share()
    let eager = RecordingSubscriber<Int, Never>()
    let idle = RecordingSubscriber<Int, Never>(initialDemand: .none)
    shared.subscribe(eager)
    shared.subscribe(idle)
    upstream.send(1)
    idle.request(.max(1))
    upstream.send(2)
    #expect(eager.values == [1, 2])
    #expect(idle.values == [2])
    upstream.send(completion: .finished)
    let late = RecordingSubscriber<Int, Never>()
    shared.subscribe(late)
    #expect(eager.completion == .finished)
  }

  @Test func aCompletionTheUpstreamSendsBeforeItsSubscriptionIsIgnored() {
    let upstream = HeldPublisher<Int, Never>()
    let shared = upstream.share()
    let first = RecordingSubscriber<Int, Never>()
    shared.subscribe(first)
    upstream.send(completion: .finished)  // before its subscription: a contract break
    #expect(first.completion == nil)
    let subject = PassthroughSubject<Int, Never>()
    let multicast = upstream.multicast(subject: subject)
    let second = RecordingSubscriber<Int, Never>()
    multicast.subscribe(second)
    let connection = multicast.connect()
    upstream.send(completion: .finished)
    #expect(second.completion == nil)
    upstream.send(subscription: Subscriptions.empty)
    upstream.send(completion: .finished)
    #expect(second.completion == .finished)
    connection.cancel()
    first.cancel()
    upstream.release()
  }
}
