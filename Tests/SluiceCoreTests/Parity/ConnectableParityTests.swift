import SluiceCore
import SluiceTesting
import Testing

/// multicast, makeConnectable and autoconnect as Combine shapes them (issue: Combine parity).
@Suite("Combine parity: connectable publishers")
struct ConnectableParityTests {
  /// A subject that hands each subscriber one recorded subscription and keeps the subscriber.
  final class RecordingSubject: Subject, @unchecked Sendable {
    typealias Output = Int
    typealias Failure = Never
    let subscription = TestSubscription()
    var subscriber: AnySubscriber<Int, Never>?
    let onDeinit: () -> Void

    init(onDeinit: @escaping () -> Void = {}) { self.onDeinit = onDeinit }
    deinit { onDeinit() }

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
      self.subscriber = AnySubscriber(subscriber)
      subscriber.receive(subscription: subscription)
    }
    func send(_ value: Int) { _ = subscriber?.receive(value) }
    func send(completion: Subscribers.Completion<Never>) {
      subscriber?.receive(completion: completion)
    }
    func send(subscription: any Subscription) {}
  }

  @Test func eachMulticastSubscriberGetsAMulticastSubscriptionWithNoChildren() throws {
    let source = PassthroughSubject<Int, Never>()
    let multicast = source.multicast { PassthroughSubject<Int, Never>() }
    let recorder = RecordingSubscriber<Int, Never>()
    multicast.subscribe(recorder)
    let subscription = try #require(recorder.subscription)
    #expect(String(describing: subscription) == "Multicast")
    #expect(mirrorLabels(subscription).isEmpty)
    let connection = multicast.connect()
    source.send(1)
    source.send(completion: .finished)
    #expect(recorder.values == [1])
    // A subscriber arriving after completion still sees a "Multicast" subscription.
    let late = RecordingSubscriber<Int, Never>()
    multicast.subscribe(late)
    #expect(late.events == [.subscription("Multicast"), .completion(.finished)])
    connection.cancel()
  }

  @Test func demandReturnedFromReceiveIsRequestedFromTheSubjectAndNoneIsReturned() throws {
    let subject = RecordingSubject()
    let multicast = Empty<Int, Never>(completeImmediately: false).multicast(subject: subject)
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2)) { .max($0) }
    multicast.subscribe(recorder)
    let inner = try #require(subject.subscriber)
    #expect(inner.receive(3) == .none)
    #expect(inner.receive(0) == .none)
    #expect(subject.subscription.requests == [.max(2), .max(3)])
    // Only the first subscription is kept; only the first completion passes.
    let extra = TestSubscription()
    inner.receive(subscription: extra)
    #expect(extra.cancelCount == 1)
    inner.receive(completion: .finished)
    inner.receive(completion: .finished)
    #expect(inner.receive(9) == .none)
    #expect(recorder.values == [3, 0])
    #expect(recorder.events.filter(\.isCompletion).count == 1)
  }

  @Test func aConnectionDoesNotKeepTheSubjectAliveButSubscribersDo() {
    var destroyed = false
    let upstream = TestPublisher<Int, Never>()
    var subject: RecordingSubject? = RecordingSubject(onDeinit: { destroyed = true })
    let connection = upstream.multicast(subject: subject!).connect()
    subject = nil
    #expect(destroyed, "the connection holds the subject weakly")
    connection.cancel()  // no deadlock, no crash
    #expect(upstream.subscriptions.first?.isCancelled == true)

    // With a subscriber, the subject lives on after the multicast itself is gone.
    let source = PassthroughSubject<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    var kept: AnyCancellable?
    do {
      let multicast = source.multicast { PassthroughSubject<Int, Never>() }
      multicast.subscribe(recorder)
      kept = AnyCancellable(multicast.connect())
    }
    source.send(7)
    #expect(recorder.values == [7])
    kept?.cancel()
    recorder.cancel()
  }

  @Test func autoconnectHandsDownTheUpstreamsSubscriptionAndCountsCancels() throws {
    let source = TestPublisher<Int, Never>(subscriptionDescription: "Upstream")
    var connections = 0
    let connectable = Deferred { () -> TestPublisher<Int, Never> in
      connections += 1
      return source
    }.makeConnectable()
    let shared = connectable.autoconnect()
    let first = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    let second = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    shared.subscribe(first)
    shared.subscribe(second)
    #expect(first.events.first == .subscription("Multicast"), "MakeConnectable's own")
    #expect(connections == 1)
    source.send(5)
    #expect(first.values == [5])
    first.cancel()
    #expect(source.subscriptions.first?.isCancelled == false, "one subscriber is left")
    second.cancel()
    #expect(source.subscriptions.first?.isCancelled == true, "the last one disconnects")
  }

  @Test func autoconnectSubscriptionReportsTheUpstreamsIdentity() throws {
    let upstream = TestPublisher<Int, Never>(subscriptionDescription: "Upstream")
    struct Connectable: ConnectablePublisher {
      typealias Output = Int
      typealias Failure = Never
      let upstream: TestPublisher<Int, Never>
      func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
        upstream.receive(subscriber: subscriber)
      }
      func connect() -> any Cancellable { AnyCancellable {} }
    }
    let recorder = RecordingSubscriber<Int, Never>()
    let autoconnect = Connectable(upstream: upstream).autoconnect()
    autoconnect.subscribe(recorder)
    let subscription = try #require(recorder.subscription)
    let original = try #require(upstream.subscriptions.first)
    #expect(String(describing: subscription) == "Upstream")
    #expect(subscription.combineIdentifier == original.combineIdentifier)
    #expect(upstream.subscriberDescriptions == ["Autoconnect"])
    recorder.cancel()
    recorder.cancel()
    #expect(original.cancelCount == 1)
  }

  @Test func autoconnectsSubscriberMirrorsItsParentAndDownstream() {
    struct Held: ConnectablePublisher {
      typealias Output = Int
      typealias Failure = Never
      let held = HeldPublisher<Int, Never>()
      func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
        held.receive(subscriber: subscriber)
      }
      func connect() -> any Cancellable { AnyCancellable {} }
    }
    let connectable = Held()
    connectable.autoconnect().subscribe(RecordingSubscriber<Int, Never>())
    #expect(String(describing: connectable.held.subscriberObject!) == "Autoconnect")
    #expect(mirrorLabels(connectable.held.subscriberObject) == ["parent", "downstream"])
    connectable.held.release()
  }
}
