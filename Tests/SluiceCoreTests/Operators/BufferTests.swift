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

  @Test func aFullBufferFailsWithTheCustomErrorAndAFailureDropsWhatIsBuffered() {
    let upstream = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    upstream.buffer(size: 1, prefetch: .byRequest, whenFull: .customError { TestError(code: 9) })
      .subscribe(recorder)
    upstream.send(1)
    upstream.send(2)
    #expect(recorder.completion == .failure(TestError(code: 9)))
    #expect(recorder.values == [])
    #expect(upstream.subscriptions[0].isCancelled)
    let failing = TestPublisher<Int, TestError>()
    let other = RecordingSubscriber<Int, TestError>(initialDemand: .none)
    failing.buffer(size: 5, prefetch: .keepFull, whenFull: .dropNewest).subscribe(other)
    failing.send(1)
    failing.send(completion: .failure(TestError(code: 1)))
    #expect(other.completion == .failure(TestError(code: 1)))
    #expect(other.values == [])
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
