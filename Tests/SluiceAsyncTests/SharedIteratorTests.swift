import SluiceAsync
import SluiceTesting
import Testing

/// One `values` iterator awaited from several tasks at once, as Combine allows.
@Suite("publisher.values shared between tasks")
struct SharedIteratorTests {
  /// One iterator handed to several tasks: copies of a `values` iterator share one bridge, so
  /// each `next()` runs on its own copy.
  struct Shared<Base: AsyncIteratorProtocol>: @unchecked Sendable {
    // Safety: the tested iterator's copies share one state that is safe to await from several
    // tasks at once.
    let base: Base
    init(_ base: Base) { self.base = base }
    func next() async throws -> Base.Element? {
      var copy = base
      return try await copy.next()
    }
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
    // Wait for the effect itself: both tasks parked in the bridge, their demand pending.
    while source.bridgeChild("waiting") as? Int != 2 { await Task.yield() }
    #expect(source.bridgeChild("pendingDemand") as? Subscribers.Demand == .max(2))
    let subscription = source.subscribe()
    #expect(subscription.requests == [.max(2)])
    source.cancelAll()
    for waiter in waiters { _ = try await waiter.value }
  }

  @Test func aValueBeforeTheSubscriptionGoesToTheWaitingTask() async throws {
    let source = DelayedSubscriptionPublisher()
    let iterator = Shared(source.values.makeAsyncIterator())
    let waiter = Task { try await iterator.next() }
    while source.bridgeChild("waiting") as? Int != 1 { await Task.yield() }
    source.send(5)  // unrequested, before any subscription: kept, not lost (Combine drops it)
    #expect(try await waiter.value == 5)
    source.cancelAll()
  }

  @MainActor
  @Test func mainActorTasksShareOneIteratorOverAPublishedProperty() async throws {
    final class Model {
      @Published var query = ""
    }
    let model = Model()  // a main-actor-owned class, as in an app
    // Lossless, so the assignments are kept whether or not a reader is waiting yet.
    let values = model.$query.dropFirst().values(bufferingPolicy: .unbounded)
    let iterator = Shared(values.makeAsyncIterator())
    let readers = (0..<2).map { _ in Task { @MainActor in try await iterator.next() } }
    for query in ["a", "b"] { model.query = query }
    var seen: [String] = []
    for reader in readers { seen.append(try await reader.value ?? "nil") }
    #expect(seen.sorted() == ["a", "b"])
  }

  @Test func theSubscriberIsCancellable() throws {
    let source = DelayedSubscriptionPublisher()
    _ = source.values.makeAsyncIterator()
    #expect(try #require(source.subscriber) is any Cancellable)
  }
}

struct TestFailure: Error, Equatable {}

/// Keeps its subscriber and subscribes it only when told.
final class DelayedSubscriptionPublisher: Publisher, @unchecked Sendable {
  // Safety: `subscriber` is written once, when `values` makes its iterator, before the test
  // reads it.
  typealias Output = Int
  typealias Failure = Never
  private(set) var subscriber: (any Subscriber<Int, Never>)?

  func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
    self.subscriber = subscriber
  }

  /// A child of the subscriber's (the `values` bridge's) mirror.
  func bridgeChild(_ label: String) -> Any? {
    guard let subscriber, let bridge = subscriber as? any CustomReflectable else { return nil }
    return bridge.customMirror.children.first { $0.label == label }?.value
  }

  func subscribe() -> TestSubscription {
    let subscription = TestSubscription()
    subscriber?.receive(subscription: subscription)
    return subscription
  }

  func send(_ value: Int) { _ = subscriber?.receive(value) }

  func cancelAll() { (subscriber as? any Cancellable)?.cancel() }
}
