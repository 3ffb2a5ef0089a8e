import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

@Suite("Multicast, MakeConnectable, Autoconnect", .onThreadsOfTheirOwn)
struct ConnectableTests {
  /// A connection to one of Sluice's subjects holds its core (no weak load per value), yet, as
  /// in Combine, not the subject: once the subject and its multicast are gone, the subject's
  /// `deinit` cancels the upstream subscription, and what the upstream sends later goes
  /// nowhere; while subscribers remain they keep the subject, and values reach them.
  @Test(arguments: [false, true])
  func aConnectionToASluiceSubjectEndsWithTheSubject(current: Bool) {
    let upstream = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    weak var weakSubject: AnyObject?
    var connection: (any Cancellable)?
    do {
      if current {
        let subject = CurrentValueSubject<Int, Never>(0)
        weakSubject = subject
        let multicast = upstream.multicast(subject: subject)
        multicast.subscribe(recorder)
        connection = multicast.connect()
      } else {
        let subject = PassthroughSubject<Int, Never>()
        weakSubject = subject
        let multicast = upstream.multicast(subject: subject)
        multicast.subscribe(recorder)
        connection = multicast.connect()
      }
    }
    upstream.send(1)
    #expect(recorder.values == (current ? [0, 1] : [1]))
    #expect(weakSubject != nil, "its subscriber keeps the subject")
    #expect(upstream.subscriptions.first?.cancelCount == 0)
    recorder.cancel()
    #expect(weakSubject == nil, "the connection does not keep the subject")
    #expect(upstream.subscriptions.first?.cancelCount == 1, "the subject's deinit cancelled it")
    upstream.send(2)  // goes nowhere
    #expect(recorder.values == (current ? [0, 1] : [1]))
    connection?.cancel()
    #expect(upstream.subscriptions.first?.cancelCount == 1)
  }

  @Test func multicastWaitsForConnectAndSharesOneUpstreamSubscription() {
    let upstream = TestPublisher<Int, Never>()
    let made = Box<Int>(0)
    let multicast = upstream.multicast { () -> PassthroughSubject<Int, Never> in
      made.update { $0! += 1 }
      return PassthroughSubject()
    }
    let a = RecordingSubscriber<Int, Never>()
    let b = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    multicast.subscribe(a)
    multicast.subscribe(b)
    #expect(upstream.subscriptions.isEmpty, "nothing flows before connect()")
    let connection = multicast.connect()
    #expect(upstream.subscriptions.count == 1)
    #expect(upstream.subscriptions[0].requests == [.unlimited])
    upstream.send(1)
    upstream.send(2)
    #expect(a.values == [1, 2])
    #expect(b.values == [1], "each subscriber at its own demand")
    #expect(made.value == 1, "the subject is made once")
    connection.cancel()
    #expect(upstream.subscriptions[0].cancelCount == 1)
    a.cancel()
    b.cancel()
  }

  @Test func multicastWithAGivenSubject() {
    let subject = CurrentValueSubject<Int, Never>(0)
    let multicast = [1, 2].publisher.multicast(subject: subject)
    let recorder = RecordingSubscriber<Int, Never>()
    multicast.subscribe(recorder)
    _ = multicast.connect()
    #expect(recorder.values == [0, 1, 2])
    #expect(recorder.completion == .finished)
  }

  @Test func makeConnectable() {
    let connectable = [1, 2, 3].publisher.makeConnectable()
    let recorder = RecordingSubscriber<Int, Never>()
    connectable.subscribe(recorder)
    #expect(recorder.values.isEmpty)
    _ = connectable.connect()
    #expect(recorder.values == [1, 2, 3])
    #expect(recorder.completion == .finished)
  }

  @Test func autoconnectConnectsOnFirstSubscriberAndDisconnectsAfterTheLast() {
    let upstream = TestPublisher<Int, Never>()
    let shared = upstream.makeConnectable().autoconnect()
    let first = RecordingSubscriber<Int, Never>()
    shared.subscribe(first)
    #expect(upstream.subscriptions.count == 1)
    let second = RecordingSubscriber<Int, Never>()
    shared.subscribe(second)
    #expect(upstream.subscriptions.count == 1, "one connection for all subscribers")
    upstream.send(1)
    #expect(first.values == [1] && second.values == [1])
    first.cancel()
    #expect(upstream.subscriptions[0].cancelCount == 0)
    second.cancel()
    second.cancel()
    #expect(upstream.subscriptions[0].cancelCount == 1, "the last cancel disconnects, once")
    let third = RecordingSubscriber<Int, Never>()
    shared.subscribe(third)
    #expect(upstream.subscriptions.count == 2, "a later subscriber connects again")
    upstream.send(2)
    #expect(third.values == [2])
    third.cancel()
  }

  /// A subscriber may keep its subscription after cancelling it (the rule is on the
  /// subscription: let go of the subscriber). Autoconnect's kept it, so a subscriber of
  /// `share()` that did so was never freed, with the subject and the upstream it reached
  /// (found by the address sanitizer's leak check, issue 41).
  @Test("autoconnect lets go of a subscriber that keeps its cancelled or finished subscription")
  func autoconnectReleasesASubscriberThatKeepsItsSubscription() {
    final class Token: Sendable {}
    weak var cancelledOne: Token?
    weak var finishedOne: Token?
    let subject = PassthroughSubject<Int, Never>()
    let shared = subject.share()
    var kept: [any Subscription] = []
    do {
      let token = Token()
      cancelledOne = token
      shared.subscribe(
        Probe<Int, Never>(onSubscription: {
          kept.append($0)
          withExtendedLifetime(token) {}
        }))
      kept.last?.cancel()
    }
    #expect(cancelledOne == nil, "the cancelled subscription still holds its subscriber")
    do {
      let token = Token()
      finishedOne = token
      shared.subscribe(
        Probe<Int, Never>(onSubscription: {
          kept.append($0)
          withExtendedLifetime(token) {}
        }))
    }
    subject.send(completion: .finished)
    #expect(finishedOne == nil, "the finished subscription still holds its subscriber")
    #expect(kept.count == 2)
  }

  @Test func autoconnectFirstSubscriberSeesSynchronousValues() {
    let recorder = RecordingSubscriber<Int, Never>()
    [1, 2, 3].publisher.makeConnectable().autoconnect().subscribe(recorder)
    #expect(recorder.values == [1, 2, 3])
    #expect(recorder.completion == .finished)
  }

  @Test func autoconnectUnderConcurrentSubscribeAndCancel() async {
    let upstream = TestPublisher<Int, Never>()
    let shared = Shared(upstream.makeConnectable().autoconnect())
    await concurrently(32) { _ in
      let recorder = RecordingSubscriber<Int, Never>()
      shared.value.subscribe(recorder)
      recorder.cancel()
    }
    // Every connection made was cancelled: no subscriber is left.
    let subscriptions = upstream.subscriptions
    #expect(!subscriptions.isEmpty)
    #expect(subscriptions.allSatisfy { $0.cancelCount == 1 })
  }
}
