import SluiceAsync
import SluiceTesting
import Synchronization
import Testing

/// One `values` iterator awaited from several tasks at once, as Combine allows.
@Suite("publisher.values shared between tasks")
struct SharedIteratorTests {
  /// A reference to one iterator, so several tasks can call `next()` on it.
  final class Shared<Base: AsyncIteratorProtocol>: @unchecked Sendable {
    // Safety: the tested iterator is itself safe to call from several tasks at once.
    var base: Base
    init(_ base: Base) { self.base = base }
    func next() async throws -> Base.Element? { try await base.next() }
  }

  @Test func waitersAreServedOldestFirstAndEachRequestsOne() async throws {
    let source = TestPublisher<Int, Never>()
    let iterator = Shared(source.values.makeAsyncIterator())
    let first = Task { try await iterator.next() }
    while source.subscriptions.first?.requests.count != 1 { await Task.yield() }
    let second = Task { try await iterator.next() }
    while source.subscriptions.first?.requests.count != 2 { await Task.yield() }
    #expect(source.subscriptions.first?.requests == [.max(1), .max(1)])
    _ = source.send(1)
    _ = source.send(2)
    #expect(try await first.value == 1)
    #expect(try await second.value == 2)
  }

  @Test func finishingEndsEveryWaiter() async throws {
    let source = TestPublisher<Int, Never>()
    let iterator = Shared(source.values.makeAsyncIterator())
    let waiters = (0..<3).map { _ in Task { try await iterator.next() } }
    while source.subscriptions.first?.requests.count != 3 { await Task.yield() }
    source.send(completion: .finished)
    for waiter in waiters { #expect(try await waiter.value == nil) }
  }

  @Test func aFailureGoesToTheFirstWaiterAndTheOthersEnd() async throws {
    let source = TestPublisher<Int, TestFailure>()
    let iterator = Shared(source.values.makeAsyncIterator())
    let first = Task { try await iterator.next() }
    while source.subscriptions.first?.requests.count != 1 { await Task.yield() }
    let second = Task { try await iterator.next() }
    while source.subscriptions.first?.requests.count != 2 { await Task.yield() }
    source.send(completion: .failure(TestFailure()))
    await #expect(throws: TestFailure.self) { try await first.value }
    #expect(try await second.value == nil)
  }

  @Test func cancellingOneWaitingTaskCancelsUpstreamOnceAndEndsEveryWaiter() async throws {
    let source = TestPublisher<Int, Never>()
    let iterator = Shared(source.values.makeAsyncIterator())
    let first = Task { try await iterator.next() }
    let second = Task { try await iterator.next() }
    while source.subscriptions.first?.requests.count != 2 { await Task.yield() }
    first.cancel()
    #expect(try await first.value == nil)
    #expect(try await second.value == nil)
    #expect(source.subscriptions.first?.cancelCount == 1)
  }

  @Test func requestsBeforeTheSubscriptionAreSummed() async throws {
    let source = DelayedSubscriptionPublisher()
    let iterator = Shared(source.values.makeAsyncIterator())
    let waiters = (0..<2).map { _ in Task { try await iterator.next() } }
    while source.pendingWaiters.load(ordering: .acquiring) == 0 { await Task.yield() }
    // Parking is not observable from outside the bridge; give both tasks ample time to park.
    try await Task.sleep(for: .milliseconds(200))
    let subscription = source.subscribe()
    #expect(subscription.requests == [.max(2)])
    source.cancelAll()
    for waiter in waiters { _ = try await waiter.value }
  }

  @Test func theSubscriberIsCancellable() {
    let source = DelayedSubscriptionPublisher()
    _ = source.values.makeAsyncIterator()
    #expect(source.subscriber is any Cancellable)
  }
}

struct TestFailure: Error, Equatable {}

/// Keeps its subscriber and subscribes it only when told.
final class DelayedSubscriptionPublisher: Publisher, @unchecked Sendable {
  // Safety: `subscriber` is written once, before `subscribe()`/`cancelAll()` read it.
  typealias Output = Int
  typealias Failure = Never
  private(set) var subscriber: (any Subscriber<Int, Never>)?
  let pendingWaiters = Atomic<Int>(0)

  func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
    self.subscriber = subscriber
    pendingWaiters.store(1, ordering: .releasing)
  }

  func subscribe() -> TestSubscription {
    let subscription = TestSubscription()
    subscriber?.receive(subscription: subscription)
    return subscription
  }

  func cancelAll() { (subscriber as? any Cancellable)?.cancel() }
}
