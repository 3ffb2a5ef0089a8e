import SluiceAsync
import SluiceTesting
import Testing

@Suite("Awaiting a publisher's values")
struct AwaitingTests {
  @Test func firstValueCancelsTheSubscriptionOnceItArrives() async throws {
    let upstream = TestPublisher<Int, Never>()
    let waiter = Task { try await upstream.firstValue() }
    #expect(await eventually { upstream.subscriptions.first?.outstandingDemand == .max(1) })
    upstream.send(7)
    #expect(try await waiter.value == 7)
    #expect(upstream.subscriptions[0].requests == [.max(1)])
    #expect(upstream.subscriptions[0].cancelCount == 1)
  }

  @Test func firstValueOfAnEmptyPublisherThrowsNoValue() async {
    await #expect(throws: PublisherValueError.noValue) {
      try await Empty<Int, Never>().firstValue()
    }
  }

  @Test func failuresAreRethrown() async {
    await #expect(throws: TestError(code: 4)) {
      try await Fail<Int, TestError>(error: TestError(code: 4)).firstValue()
    }
    await #expect(throws: TestError(code: 5)) {
      try await Record<Int, TestError>(output: [1], completion: .failure(TestError(code: 5)))
        .allValues()
    }
  }

  @Test func lastValueAndAllValues() async throws {
    #expect(try await (1...10_000).publisher.lastValue() == 10_000)
    #expect(try await (1...5).publisher.allValues() == [1, 2, 3, 4, 5])
    #expect(try await Empty<Int, Never>().allValues() == [])
    await #expect(throws: PublisherValueError.noValue) { try await Empty<Int, Never>().lastValue() }
  }

  @Test func singleValue() async throws {
    #expect(try await Just(3).singleValue() == 3)
    await #expect(throws: PublisherValueError.moreThanOneValue) {
      try await [1, 2, 3].publisher.singleValue()
    }
    await #expect(throws: PublisherValueError.noValue) {
      try await Empty<Int, Never>().singleValue()
    }
  }

  @Test("cancelling the awaiting task cancels the subscription and throws CancellationError")
  func cancellingTheAwaitingTask() async {
    for operation in ["first", "last", "single", "all"] {
      let upstream = TestPublisher<Int, Never>()
      let waiter = Task { () async throws -> Void in
        switch operation {
        case "first": _ = try await upstream.firstValue()
        case "last": _ = try await upstream.lastValue()
        case "single": _ = try await upstream.singleValue()
        default: _ = try await upstream.allValues()
        }
      }
      #expect(await eventually { upstream.subscriptions.count == 1 })
      waiter.cancel()
      await #expect(throws: CancellationError.self, "\(operation)") { try await waiter.value }
      #expect(upstream.subscriptions[0].cancelCount == 1, "\(operation)")
    }
  }

  @Test func futureValue() async throws {
    let cannotFail = Future<Int, Never> { promise in Task { promise(.success(42)) } }
    #expect(await cannotFail.value == 42)
    let failing = Future<Int, TestError> { $0(.failure(TestError(code: 9))) }
    await #expect(throws: TestError(code: 9)) { try await failing.value }
    let succeeding = Future<Int, TestError> { $0(.success(1)) }
    #expect(try await succeeding.value == 1)
  }
}

@Suite("publisher.stream()")
struct StreamTests {
  @Test func asyncStreamOfAPublisherThatCannotFail() async {
    let stream: AsyncStream<Int> = (1...3).publisher.stream()
    var received: [Int] = []
    for await value in stream { received.append(value) }
    #expect(received == [1, 2, 3])
  }

  @Test func throwingStreamEndsWithTheFailure() async {
    let stream = Record<Int, TestError>(output: [1, 2], completion: .failure(TestError(code: 2)))
      .stream()
    var received: [Int] = []
    do {
      for try await value in stream { received.append(value) }
      Issue.record("expected a failure")
    } catch {
      #expect(error as? TestError == TestError(code: 2))
    }
    #expect(received == [1, 2])
  }

  @Test("the stream's consumer sets the pace: demand 1 per element")
  func backpressure() async {
    let upstream = TestPublisher<Int, Never>()
    let stream = upstream.stream()
    let consumer = Task {
      var received: [Int] = []
      for await value in stream {
        received.append(value)
        if received.count == 3 { break }
      }
      return received
    }
    for value in 1...3 {
      #expect(await eventually { upstream.subscriptions.first?.outstandingDemand == .max(1) })
      upstream.send(value)
    }
    #expect(await consumer.value == [1, 2, 3])
    #expect(upstream.subscriptions[0].requests == [.max(1), .max(1), .max(1)])
  }

  @Test("cancelling the consuming task cancels the subscription")
  func cancellation() async {
    let upstream = TestPublisher<Int, Never>()
    let stream = upstream.stream(bufferingPolicy: .prefetch(8))
    let consumer = Task {
      var count = 0
      for await _ in stream { count += 1 }
      return count
    }
    #expect(await eventually { upstream.subscriptions.count == 1 })
    upstream.send(1)
    consumer.cancel()
    _ = await consumer.value
    #expect(await eventually { upstream.subscriptions[0].cancelCount == 1 })
  }

  @Test("a subject's stream loses nothing by default")
  func subjectStream() async {
    let subject = PassthroughSubject<Int, Never>()
    let stream = subject.stream()  // subscribes now
    for value in 1...100 { subject.send(value) }  // nobody is consuming yet
    subject.send(completion: .finished)
    var received: [Int] = []
    for await value in stream { received.append(value) }
    #expect(received == Array(1...100))
  }
}

@Suite("Task and AnyCancellable")
struct TaskCancellableTests {
  @Test func aStoredTaskIsCancelledWithTheOthers() async {
    var cancellables = Set<AnyCancellable>()
    let task = Task { () -> Bool in
      let (stream, continuation) = AsyncStream<Never>.makeStream()
      await withTaskCancellationHandler {
        for await _ in stream {}
      } onCancel: {
        continuation.finish()
      }
      return Task.isCancelled
    }
    task.store(in: &cancellables)
    var array: [AnyCancellable] = []
    Task {}.store(in: &array)
    #expect(cancellables.count == 1 && array.count == 1)
    cancellables.removeAll()
    #expect(await task.value == true)
  }
}
