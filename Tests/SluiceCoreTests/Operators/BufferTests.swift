import SluiceCore
import SluiceTesting
import Testing

/// `buffer(size:prefetch:whenFull:)`.
@Suite("buffer")
struct BufferTests {
  @Test func keepFullAsksForSizeThenOneMorePerDeliveredValue() throws {
    let upstream = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    upstream.buffer(size: 3, prefetch: .keepFull, whenFull: .dropNewest).subscribe(recorder)
    #expect(String(describing: try #require(recorder.subscription)) == "Buffer")
    #expect(upstream.subscriptions[0].requests == [.max(3)])
    for value in 1...4 { upstream.send(value) }  // 4 does not fit: dropped
    recorder.request(.max(2))
    #expect(recorder.values == [1, 2])
    #expect(upstream.subscriptions[0].requests == [.max(3), .max(2)])
    upstream.send(5)
    recorder.request(.max(5))
    #expect(recorder.values == [1, 2, 3, 5])
    recorder.cancel()
  }

  @Test func byRequestAsksForEverythingAndDropOldestKeepsTheNewest() {
    let upstream = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    upstream.buffer(size: 2, prefetch: .byRequest, whenFull: .dropOldest).subscribe(recorder)
    #expect(upstream.subscriptions[0].requests == [.unlimited])
    for value in 1...5 { upstream.send(value) }
    upstream.send(completion: .finished)
    #expect(recorder.completion == nil, "a finish waits for the buffer to drain")
    recorder.request(.max(2))
    #expect(recorder.values == [4, 5])
    #expect(recorder.completion == nil, "and for demand")
    recorder.request(.max(1))
    #expect(recorder.completion == .finished)
  }

  /// Issue 40: as Combine's, the custom error is delivered once the demand of the request that
  /// follows the overflow runs out, and what is left in the buffer is dropped.
  @Test(arguments: [Publishers.PrefetchStrategy.byRequest, .keepFull])
  func aFullBufferFailsWithTheCustomErrorWhenTheDemandRunsOut(
    prefetch: Publishers.PrefetchStrategy
  ) {
    let upstream = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    upstream.buffer(size: 5, prefetch: prefetch, whenFull: .customError { TestError(code: 9) })
      .subscribe(recorder)
    for value in 0..<10 { upstream.send(value) }  // 5 overflows; 6… come after the cancel
    #expect(upstream.subscriptions[0].isCancelled, "the overflow cancels the upstream at once")
    #expect(recorder.completion == nil, "the failure waits for a request")
    recorder.request(.max(3))
    #expect(recorder.values == [0, 1, 2])
    #expect(recorder.completion == .failure(TestError(code: 9)), "3 and 4 are dropped")
    recorder.request(.max(1))
    #expect(recorder.values == [0, 1, 2])
    // Nothing more reaches the upstream it cancelled (Combine's keepFull sends it the refill).
    let first: Subscribers.Demand = prefetch == .keepFull ? .max(5) : .unlimited
    #expect(upstream.subscriptions[0].requests == [first])
  }

  @Test func aFullBufferWithEnoughDemandDeliversItsValuesThenTheCustomError() {
    let upstream = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    upstream.buffer(size: 2, prefetch: .byRequest, whenFull: .customError { TestError(code: 9) })
      .subscribe(recorder)
    for value in 1...3 { upstream.send(value) }  // 3 overflows
    upstream.send(4)  // after the cancel: ignored
    recorder.request(.max(5))
    #expect(recorder.values == [1, 2])
    #expect(recorder.completion == .failure(TestError(code: 9)))
  }

  @Test func theUpstreamsFailureDropsWhatIsBuffered() {
    let failing = TestPublisher<Int, TestError>()
    let other = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    failing.buffer(size: 5, prefetch: .keepFull, whenFull: .dropNewest).subscribe(other)
    failing.send(1)
    failing.send(completion: .failure(TestError(code: 1)))
    #expect(other.completion == .failure(TestError(code: 1)))
    #expect(other.values == [])
  }

  @Test func aFailureAfterAHeldFinishIsIgnored() {
    let upstream = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    upstream.buffer(size: 5, prefetch: .byRequest, whenFull: .dropNewest).subscribe(recorder)
    upstream.send(1)
    upstream.send(completion: .finished)  // held: no demand
    upstream.send(completion: .failure(TestError(code: 2)))  // a second completion
    #expect(recorder.completion == nil)
    recorder.request(.max(2))
    #expect(recorder.values == [1])
    #expect(recorder.completion == .finished)
  }

  @Test func itsMirrorShowsTheState() throws {
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    Empty<Int, Never>(completeImmediately: false)
      .buffer(size: 2, prefetch: .byRequest, whenFull: .dropNewest).subscribe(recorder)
    let subscription = try #require(recorder.subscription)
    #expect(
      Mirror(reflecting: subscription).children.map(\.label)
        == ["values", "state", "downstreamDemand", "terminal"])
    recorder.cancel()
  }

  @Test func aSizeBelowOneTraps() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      Just(1).buffer(size: 0, prefetch: .keepFull, whenFull: .dropNewest)
        .subscribe(RecordingSubscriber<Int, Never>())
    }
    #expect(
      standardError(of: result).contains(
        "API Violation: buffer(size:) with count 0: the count must be at least 1"))
  }
}
