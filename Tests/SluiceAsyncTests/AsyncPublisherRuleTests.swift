import Dispatch
import SluiceAsync
import SluiceTestSupport
import SluiceTesting
import Testing

/// An async publisher under test, made fresh for each subscription, with what it must deliver.
struct AsyncCase: Sendable, CustomStringConvertible {
  let description: String
  let expected: [Int]
  let make: @Sendable () -> AnyPublisher<Int, TestError>

  static let all: [AsyncCase] = [
    AsyncCase(description: "AsyncSequencePublisher", expected: Array(0..<20)) {
      CountingSequence(count: 20).publisher.eraseToAnyPublisher()
    },
    AsyncCase(description: "AsyncFuture", expected: [42]) {
      AsyncFuture { () async throws(TestError) -> Int in 42 }.eraseToAnyPublisher()
    },
    AsyncCase(description: "AsyncProducer", expected: Array(0..<20)) {
      AsyncProducer<Int, TestError> { sender in
        for value in 0..<20 { await sender.send(value) }
      }.eraseToAnyPublisher()
    },
    AsyncCase(description: "asyncMap(maxConcurrent: 3)", expected: Array(0..<20)) {
      Record<Int, TestError>(output: Array(0..<20), completion: .finished)
        .asyncMap(maxConcurrent: 3) { value in
          await Task.yield()
          return value
        }.eraseToAnyPublisher()
    },
    AsyncCase(description: "tryAsyncMap", expected: Array(0..<20)) {
      Record<Int, TestError>(output: Array(0..<20), completion: .finished)
        .tryAsyncMap(maxConcurrent: 2) { (value) async throws(TestError) -> Int in value }
        .eraseToAnyPublisher()
    },
    AsyncCase(description: "asyncFilter", expected: Array(stride(from: 0, to: 40, by: 2))) {
      Record<Int, TestError>(output: Array(0..<40), completion: .finished)
        .asyncFilter(maxConcurrent: 4) { $0 % 2 == 0 }.eraseToAnyPublisher()
    },
    AsyncCase(description: "values round trip", expected: Array(0..<20)) {
      Record<Int, TestError>(output: Array(0..<20), completion: .finished)
        .values(bufferingPolicy: .prefetch(3)).publisher.eraseToAnyPublisher()
    },
  ]
}

@Suite("Async publisher rules")
struct AsyncPublisherRuleTests {
  @Test("never more than demanded, for each demand script", arguments: AsyncCase.all)
  func demandGrid(_ publisher: AsyncCase) async {
    let scripts: [(Subscribers.Demand, Subscribers.Demand)] = [
      (.max(1), .none), (.max(1), .max(1)), (.max(3), .none), (.unlimited, .none),
    ]
    for (initial, perValue) in scripts {
      let checker = RuleChecker()
      let recorder = RecordingSubscriber<Int, TestError>(
        initialDemand: initial, demandPerValue: perValue)
      publisher.make().checkingRules(checker).subscribe(recorder)
      let count = deliverableCount(
        initialDemand: initial, demandPerValue: perValue, available: publisher.expected.count)
      if count == publisher.expected.count {
        #expect(await recorder.waitForCompletion() == .finished)
      } else {
        await recorder.waitForValues(count: count)
        for _ in 0..<200 { await Task.yield() }  // room for a wrong extra value to show up
      }
      #expect(recorder.values == Array(publisher.expected.prefix(count)), "\(initial)/\(perValue)")
      #expect(checker.violations.isEmpty, "\(checker.violations)")
      recorder.cancel()
    }
  }

  @Test("cancel from inside receive(_:) stops everything", arguments: AsyncCase.all)
  func cancelInsideReceive(_ publisher: AsyncCase) async throws {
    let checker = RuleChecker()
    let subscription = Box<any Subscription>()
    let received = Box<[Int]>([])
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited) { value in
      received.update { $0?.append(value) }
      subscription.value?.cancel()
      return .max(5)
    }
    publisher.make().checkingRules(checker).subscribe(recorder)
    #expect(await eventually { recorder.subscription != nil })
    subscription.set(try #require(recorder.subscription))
    #expect(await eventually { received.value?.isEmpty == false })
    for _ in 0..<500 { await Task.yield() }
    #expect(received.value == [publisher.expected[0]])
    #expect(recorder.completion == nil)
    #expect(checker.violations.isEmpty, "\(checker.violations)")
    subscription.update { $0 = nil }  // the box, captured by the recorder, holds the subscription
    recorder.cancel()
  }

  @Test("concurrent request() and cancel() from many threads", arguments: AsyncCase.all)
  func hammer(_ publisher: AsyncCase) async throws {
    for round in 0..<10 {
      let checker = RuleChecker()
      let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .none)
      publisher.make().checkingRules(checker).subscribe(recorder)
      #expect(await eventually { recorder.subscription != nil })
      let subscription = Shared(try #require(recorder.subscription))
      await concurrently(16) { index in
        if index == 8 + round % 8 {
          subscription.value.cancel()
        } else {
          subscription.value.request(.max(1))
        }
      }
      for _ in 0..<200 { await Task.yield() }
      let values = recorder.values
      #expect(values == Array(publisher.expected.prefix(values.count)))
      #expect(checker.violations.isEmpty, "\(checker.violations)")
      recorder.cancel()  // the recorder still holds the subscription cancelled behind its back
    }
  }

  @Test("the subscriber is released after completion and after cancel()", arguments: AsyncCase.all)
  func released(_ publisher: AsyncCase) async {
    weak var afterCompletion: RecordingSubscriber<Int, TestError>?
    do {
      let recorder = RecordingSubscriber<Int, TestError>()
      afterCompletion = recorder
      publisher.make().subscribe(recorder)
      await recorder.waitForCompletion()
    }
    #expect(await eventually { afterCompletion == nil })

    weak var afterCancel: RecordingSubscriber<Int, TestError>?
    do {
      let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
      afterCancel = recorder
      publisher.make().subscribe(recorder)
      await recorder.waitForValues(count: 1)
      recorder.subscription?.cancel()
    }
    #expect(await eventually { afterCancel == nil })
  }
}
