import SluiceCore
import SluiceTesting
import Testing

/// `append` and `prepend` (`Publishers.Concatenate`).
@Suite("Concatenate")
struct ConcatenateTests {
  @Test func appendAndPrependValuesSequencesAndPublishers() {
    let recorder = RecordingSubscriber<Int, Never>()
    Just(3).eraseToAnyPublisher().prepend(1, 2).append([4, 5]).append(Just(6))
      .prepend(Empty()).subscribe(recorder)
    #expect(recorder.values == [1, 2, 3, 4, 5, 6])
    #expect(recorder.completion == .finished)
  }

  @Test func theSuffixIsSubscribedWhenThePrefixFinishesAndAskedForWhatIsOutstanding() {
    let prefix = TestPublisher<Int, Never>()
    let suffix = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(3))
    prefix.append(suffix).subscribe(recorder)
    #expect(recorder.events.first == .subscription("Concatenate"))
    #expect(prefix.subscriptions[0].requests == [.max(3)])
    #expect(suffix.subscriptions.isEmpty)
    prefix.send(1)
    recorder.request(.max(2))
    #expect(prefix.subscriptions[0].requests == [.max(3), .max(2)])
    prefix.send(completion: .finished)
    #expect(suffix.subscriptions[0].requests == [.max(4)])
    suffix.send(2)
    suffix.send(completion: .finished)
    #expect(recorder.values == [1, 2])
    #expect(recorder.completion == .finished)
  }

  @Test func aFailingPrefixFailsAtOnceAndTheSuffixIsNeverSubscribed() {
    let suffix = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>()
    Fail<Int, TestError>(error: TestError(code: 7)).append(suffix).subscribe(recorder)
    #expect(recorder.completion == .failure(TestError(code: 7)))
    #expect(suffix.subscriptions.isEmpty)
  }

  @Test func cancellingCancelsWhicheverIsDeliveredAndANewSuffixIsNotSubscribed() {
    let prefix = TestPublisher<Int, Never>()
    let suffix = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    prefix.append(suffix).subscribe(recorder)
    recorder.cancel()
    #expect(prefix.subscriptions[0].isCancelled)
    prefix.send(completion: .finished)
    #expect(suffix.subscriptions.isEmpty)
    let second = RecordingSubscriber<Int, Never>()
    prefix.append(suffix).subscribe(second)
    prefix.send(completion: .finished)
    second.cancel()
    #expect(suffix.subscriptions[0].isCancelled)
  }

  @Test func describedAsConcatenateWithNoChildren() throws {
    let recorder = RecordingSubscriber<Int, Never>()
    let suffix = HeldPublisher<Int, Never>()
    Empty<Int, Never>().append(suffix).subscribe(recorder)
    let subscription = try #require(recorder.subscription)
    #expect(String(describing: subscription) == "Concatenate")
    #expect(mirrorLabels(subscription) == [])
    #expect(String(describing: suffix.subscriberObject!) == "Concatenate")
    #expect(Just(1).append(Just(2)) == Just(1).append(Just(2)))
    recorder.cancel()
  }

  @Test func aValueBeyondTheDemandAndASecondCompletionAreIgnoredAsCombine() {
    let prefix = HeldPublisher<Int, Never>()
    let suffix = HeldPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    prefix.append(suffix).subscribe(recorder)
    prefix.send(subscription: Subscriptions.empty)
    _ = prefix.send(1)
    _ = prefix.send(2)  // beyond the demand: ignored
    prefix.send(completion: .finished)
    prefix.send(completion: .finished)  // a second completion: ignored
    suffix.send(subscription: Subscriptions.empty)
    #expect(recorder.values == [1])
    recorder.request(.max(2))
    _ = prefix.send(3)  // the finished prefix still sending: not delivered
    _ = suffix.send(4)
    suffix.send(completion: .finished)
    #expect(recorder.values == [1, 4])
    #expect(recorder.completion == .finished)
  }

  @Test func cancelReleasesTheSuffixWhileTheSubscriptionLives() throws {
    final class Token: Sendable {}
    weak var released: Token?
    let prefix = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>()
    do {
      let token = Token()
      released = token
      prefix.append(Deferred { withExtendedLifetime(token) { Empty<Int, Never>() } })
        .subscribe(recorder)
    }
    #expect(released != nil)
    let subscription = try #require(recorder.subscription)
    subscription.cancel()
    #expect(released == nil, "the suffix (and what it holds) is let go on cancel")
    withExtendedLifetime(subscription) {}
  }
}
