import Foundation
import Sluice
import SluiceNIO
import Synchronization
import Testing

/// A subscriber that requests what it is told to, from the test, and records everything.
final class ScriptedSubscriber: Subscriber, @unchecked Sendable {
  typealias Input = Int
  typealias Failure = RemotePipelineError
  // Safety: every mutable property is read and written only under `lock`.
  private let lock = NSLock()
  private var subscription: (any Subscription)?
  private var values: [Int] = []
  private var _completion: Subscribers.Completion<RemotePipelineError>?
  private var signalsAfterCompletion = 0

  var received: [Int] { lock.withLock { values } }
  var completion: Subscribers.Completion<RemotePipelineError>? { lock.withLock { _completion } }
  var violations: Int { lock.withLock { signalsAfterCompletion } }

  func request(_ demand: Subscribers.Demand) {
    lock.withLock { subscription }?.request(demand)
  }

  func cancel() {
    lock.withLock { subscription }?.cancel()
  }

  func receive(subscription: any Subscription) {
    lock.withLock { self.subscription = subscription }
  }

  func receive(_ input: Int) -> Subscribers.Demand {
    lock.withLock {
      if _completion != nil { signalsAfterCompletion += 1 }
      values.append(input)
    }
    return .none
  }

  func receive(completion: Subscribers.Completion<RemotePipelineError>) {
    lock.withLock {
      if _completion != nil { signalsAfterCompletion += 1 }
      _completion = completion
    }
  }
}

/// The publisher rules, checked on `RemotePipeline` against a real server.
@Suite("RemotePipeline and the subscriber rules", .serialized)
struct SubscriptionRulesTests {
  @Test func neverMoreValuesThanDemanded() async throws {
    let server = try await ServerProcess([])
    let subscriber = ScriptedSubscriber()
    RemotePipeline<Int>(port: try #require(server.port)).subscribe(subscriber)
    try await Task.sleep(for: .milliseconds(300))
    #expect(subscriber.received.isEmpty, "no value before a request")
    subscriber.request(.max(5))
    #expect(await eventually { subscriber.received.count == 5 })
    try await Task.sleep(for: .milliseconds(300))
    #expect(subscriber.received == [0, 1, 2, 3, 4], "and no more while the server could send")
    subscriber.request(.max(3))
    #expect(await eventually { subscriber.received.count == 8 })
    try await Task.sleep(for: .milliseconds(300))
    #expect(subscriber.received == Array(0..<8))
    subscriber.cancel()
  }

  @Test func cancelFromManyThreadsAtOnceIsIdempotentAndNothingFollowsIt() async throws {
    let server = try await ServerProcess([])
    for _ in 0..<20 {
      let subscriber = ScriptedSubscriber()
      RemotePipeline<Int>(port: try #require(server.port)).subscribe(subscriber)
      subscriber.request(.unlimited)
      #expect(await eventually { subscriber.received.count > 100 })
      DispatchQueue.concurrentPerform(iterations: 8) { _ in subscriber.cancel() }
      let count = subscriber.received.count
      // A delivery the event loop had begun when cancel() returned may still land (as in the
      // main package's rule suite), however late its thread runs; none begins after it.
      try await Task.sleep(for: .milliseconds(300))
      #expect(subscriber.received.count <= count + 1, "nothing after cancel() but one in flight")
      #expect(subscriber.completion == nil)
    }
    #expect(await eventually { server.cancelCount == 20 }, "every server pipeline was cancelled")
  }

  @Test func theSubscriberIsReleasedAfterTheCompletion() async throws {
    let server = try await ServerProcess(["--count", "3"])
    weak var released: ScriptedSubscriber?
    var subscription: (any Subscription)?
    do {
      let subscriber = ScriptedSubscriber()
      released = subscriber
      RemotePipeline<Int>(port: try #require(server.port)).subscribe(
        AnySubscriber(
          receiveSubscription: {
            subscription = $0; subscriber.receive(subscription: $0)
          },
          receiveValue: { subscriber.receive($0) },
          receiveCompletion: { subscriber.receive(completion: $0) }))
      subscriber.request(.unlimited)
      #expect(await eventually { subscriber.completion == .finished })
      #expect(subscriber.received == [0, 1, 2])
      #expect(subscriber.violations == 0)
    }
    #expect(subscription != nil, "the subscription is still held here")
    #expect(await eventually { released == nil }, "but it let the subscriber go")
  }
}
