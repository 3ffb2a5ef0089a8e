import Dispatch
import SluiceAsync
import SluiceTestSupport
import SluiceTesting
import Testing

@Suite("publisher.values")
struct ValuesTests {
  @Test func forAwaitNeedsNoTryForAPublisherThatCannotFail() async {
    var received: [Int] = []
    for await value in [1, 2, 3].publisher.values { received.append(value) }
    #expect(received == [1, 2, 3])
  }

  @Test func throwsThePublishersOwnFailureType() async {
    let record = Record<Int, TestError>(output: [1, 2], completion: .failure(TestError(code: 7)))
    var received: [Int] = []
    do {
      for try await value in record.values { received.append(value) }
      Issue.record("expected a failure")
    } catch {
      let typed: TestError = error  // typed throws: no cast needed
      #expect(typed == TestError(code: 7))
    }
    #expect(received == [1, 2])
  }

  @Test("demandOne: one request(.max(1)) per next(), nothing requested while not waiting")
  func demandOnePerNext() async {
    let upstream = TestPublisher<Int, Never>()
    var iterator = upstream.values.makeAsyncIterator()
    let subscription = upstream.subscriptions[0]
    #expect(subscription.requests.isEmpty, "no demand before the first next()")
    let producer = Task {
      for value in 1...3 {
        #expect(await eventually { subscription.outstandingDemand > 0 })
        upstream.send(value)
      }
    }
    var received: [Int] = []
    for _ in 1...3 { received.append(await iterator.next()!) }
    await producer.value
    #expect(received == [1, 2, 3])
    #expect(subscription.requests == [.max(1), .max(1), .max(1)])
  }

  @Test("prefetch(16) never has more than 16 outstanding, and loses nothing")
  func prefetchBoundsOutstandingDemand() async {
    let upstream = TestPublisher<Int, Never>()
    var iterator = upstream.values(bufferingPolicy: .prefetch(16)).makeAsyncIterator()
    let subscription = upstream.subscriptions[0]
    #expect(subscription.requests == [.max(16)])
    var sent = 0
    var received: [Int] = []
    while received.count < 1_000 {
      // A well-behaved producer: sends exactly what is demanded, all at once.
      while subscription.outstandingDemand > 0, sent < 1_000 {
        sent += 1
        upstream.send(sent)
        // What was sent and not yet taken, plus what may still be sent, never exceeds 16.
        #expect(sent - received.count + (subscription.outstandingDemand.max ?? .max) <= 16)
      }
      received.append(await iterator.next()!)
    }
    #expect(received == Array(1...1_000))
    #expect(subscription.requests.count < 200, "top-ups are batched, not one per value")
  }

  @Test("a subject's values keep everything sent while the consumer is busy")
  func subjectDefaultIsLossless() async {
    let subject = PassthroughSubject<Int, Never>()
    var iterator = subject.values.makeAsyncIterator()
    for value in 0..<1_000 { subject.send(value) }  // the consumer is not even waiting
    subject.send(completion: .finished)
    var received: [Int] = []
    while let value = await iterator.next() { received.append(value) }
    #expect(received == Array(0..<1_000))
  }

  @Test("a subject fed from 8 threads loses nothing with .unbounded")
  func subjectFromManyThreads() async {
    let subject = PassthroughSubject<Int, Never>()
    let values = subject.values
    let shared = Shared(subject)
    let consumer = Task {
      var received: [Int] = []
      for await value in values { received.append(value) }
      return received
    }
    // Iteration subscribes when the consumer task starts: wait for that before sending.
    #expect(await eventually { shared.value.hasSubscribers })
    await concurrently(8) { thread in
      for index in 0..<2_000 { shared.value.send(thread * 2_000 + index) }
    }
    shared.value.send(completion: .finished)
    let received = await consumer.value
    #expect(received.count == 16_000)
    #expect(Set(received) == Set(0..<16_000))
  }

  @Test func bufferingNewestAndOldestDropByTheirRule() async {
    for (policy, expected) in [
      (AsyncBufferingPolicy.bufferingNewest(3), [7, 8, 9]),
      (.bufferingOldest(3), [0, 1, 2]),
      (.bufferingNewest(0), []),
    ] {
      let subject = PassthroughSubject<Int, Never>()
      var iterator = subject.values(bufferingPolicy: policy).makeAsyncIterator()
      for value in 0..<10 { subject.send(value) }
      subject.send(completion: .finished)
      var received: [Int] = []
      while let value = await iterator.next() { received.append(value) }
      #expect(received == expected, "\(policy)")
    }
  }

  @Test("values sent without demand are buffered, never lost, never a crash")
  func misbehavingUpstream() async {
    let upstream = TestPublisher<Int, Never>()
    var iterator = upstream.values.makeAsyncIterator()
    for value in 1...5 { upstream.send(value) }  // nothing was demanded
    upstream.send(completion: .finished)
    var received: [Int] = []
    while let value = await iterator.next() { received.append(value) }
    #expect(received == [1, 2, 3, 4, 5])
    #expect(await iterator.next() == nil, "iterating after the end returns nil")
  }

  @Test("cancelling the consumer while it waits at zero demand cancels the subscription")
  func cancellationWhileParked() async {
    let upstream = TestPublisher<Int, Never>()
    let values = upstream.values(bufferingPolicy: .prefetch(4))
    let started = AsyncStream<Void>.makeStream()
    let consumer = Task {
      var iterator = values.makeAsyncIterator()
      started.continuation.yield()
      return await iterator.next()
    }
    for await _ in started.stream { break }
    #expect(await eventually { upstream.subscriptions.count == 1 })
    consumer.cancel()
    #expect(await consumer.value == nil)
    #expect(upstream.subscriptions[0].cancelCount == 1)
  }

  @Test("an already-cancelled task gets nil at once and cancels the subscription")
  func alreadyCancelledTask() async {
    let upstream = TestPublisher<Int, Never>()
    let values = upstream.values
    let consumer = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      var iterator = values.makeAsyncIterator()
      return await iterator.next()
    }
    #expect(await consumer.value == nil)
    #expect(upstream.subscriptions.first?.cancelCount == 1)
  }

  @Test("dropping the iterator cancels and releases the subscription")
  func droppingTheIterator() async {
    let upstream = TestPublisher<Int, Never>()
    weak var weakBridge: AnyObject?
    do {
      var iterator = upstream.values(bufferingPolicy: .unbounded).makeAsyncIterator()
      upstream.send(1)
      #expect(await iterator.next() == 1)
      weakBridge = iterator.bridgeForTesting
    }
    #expect(upstream.subscriptions[0].cancelCount == 1)
    #expect(weakBridge == nil)
  }

  @Test("breaking out of for-await cancels the upstream")
  func breakingOut() async {
    let upstream = TestPublisher<Int, Never>()
    let producer = Task {
      var value = 0
      while upstream.subscriptions.first?.isCancelled != true {
        if let subscription = upstream.subscriptions.first, subscription.outstandingDemand > 0 {
          value += 1
          upstream.send(value)
        }
        await Task.yield()
      }
    }
    var received: [Int] = []
    for await value in upstream.values {
      received.append(value)
      if value == 3 { break }
    }
    await producer.value
    #expect(received == [1, 2, 3])
    #expect(upstream.subscriptions[0].cancelCount == 1)
  }

  @Test func invalidBufferSizesTrapWithAClearMessage() async {
    let prefetch = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = AsyncBufferingPolicy.prefetch(Int(CommandLine.arguments.count) - 1_000)
    }
    #expect(standardError(of: prefetch).contains("API Violation: AsyncBufferingPolicy.prefetch("))
    #expect(standardError(of: prefetch).contains("the buffer size must be at least 1"))
    let newest = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      _ = AsyncBufferingPolicy.bufferingNewest(-1)
    }
    #expect(
      standardError(of: newest).contains("bufferingNewest(-1): the buffer size must be at least 0"))
  }
}
