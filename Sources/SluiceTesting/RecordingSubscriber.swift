public import SluiceCore

/// A subscriber that records everything it receives, and asks for exactly the demand a test
/// scripts.
///
/// It requests `initialDemand` when it receives its subscription (nothing if `.none`) and, after
/// each value, returns whatever `demandAfterValue` says. A test can also `request(_:)` more or
/// `cancel()` at any time, from any thread. A second subscription is recorded (so rule tests can
/// see it) and cancelled, as Combine's subscribers do.
///
/// ```swift
/// let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2))
/// [1, 2, 3].publisher.subscribe(recorder)
/// recorder.values        // [1, 2]
/// recorder.request(.max(1))
/// recorder.events        // [.subscription("[1, 2, 3]"), .value(1), .value(2), .value(3), .completion(.finished)]
/// ```
public final class RecordingSubscriber<Input, Failure: Error>: Subscriber, Cancellable,
  CustomStringConvertible, @unchecked Sendable
{
  // Safety: all mutable state is in `state`'s lock; the demand script and the subscription are
  // called after unlocking, and waiters are resumed after unlocking.

  /// One signal the subscriber received.
  public enum Event {
    /// A subscription, by its `description`.
    case subscription(String)
    /// A value.
    case value(Input)
    /// The completion.
    case completion(Subscribers.Completion<Failure>)

    /// Whether this is a completion.
    public var isCompletion: Bool {
      if case .completion = self { return true }
      return false
    }
  }

  private struct Waiter {
    let id: Int
    let isSatisfied: (State) -> Bool
    let continuation: CheckedContinuation<Void, Never>
    /// The safety-net timer, cancelled once the waiter is resumed.
    var timeout: Task<Void, Never>?

    func resume() {
      timeout?.cancel()
      continuation.resume()
    }
  }

  private struct State {
    private(set) var events: [Event] = []
    var subscription: (any Subscription)?
    var nextWaiterID = 0
    var waiters: [Waiter] = []

    /// Removes and returns the waiters whose condition now holds.
    mutating func satisfiedWaiters() -> [Waiter] {
      guard !waiters.isEmpty else { return [] }
      let snapshot = self
      var satisfied: [Waiter] = []
      var remaining: [Waiter] = []
      for waiter in waiters {
        if waiter.isSatisfied(snapshot) {
          satisfied.append(waiter)
        } else {
          remaining.append(waiter)
        }
      }
      waiters = remaining
      return satisfied
    }

    /// Kept as events arrive, so waiters can check them in O(1).
    private(set) var valueCount = 0
    private(set) var completion: Subscribers.Completion<Failure>?

    mutating func append(_ event: Event) {
      events.append(event)
      switch event {
      case .value: valueCount += 1
      case .completion(let completion): self.completion = completion
      case .subscription: break
      }
    }
  }

  private let state = Lock(State())
  private let initialDemand: Subscribers.Demand
  private let demandAfterValue: (Input) -> Subscribers.Demand

  /// Creates a recorder that requests `initialDemand` on subscription and returns
  /// `demandAfterValue(value)` after each value.
  public init(
    initialDemand: Subscribers.Demand = .unlimited,
    demandAfterValue: @escaping (Input) -> Subscribers.Demand = { _ in .none }
  ) {
    self.initialDemand = initialDemand
    self.demandAfterValue = demandAfterValue
  }

  /// Creates a recorder that requests `initialDemand`, then `demandPerValue` after each value.
  public convenience init(initialDemand: Subscribers.Demand, demandPerValue: Subscribers.Demand) {
    self.init(initialDemand: initialDemand, demandAfterValue: { _ in demandPerValue })
  }

  // MARK: Subscriber

  public func receive(subscription: any Subscription) {
    let isFirst = record(.subscription(String(describing: subscription))) { state in
      guard state.subscription == nil else { return false }
      state.subscription = subscription
      return true
    }
    if !isFirst {
      subscription.cancel()
    } else if initialDemand > 0 {
      subscription.request(initialDemand)
    }
  }

  public func receive(_ input: Input) -> Subscribers.Demand {
    record(.value(input)) { _ in }
    return demandAfterValue(input)
  }

  public func receive(completion: Subscribers.Completion<Failure>) {
    record(.completion(completion)) { $0.subscription = nil }
  }

  private func record<R>(_ event: Event, _ update: (inout State) -> R) -> R {
    let (result, satisfied) = state.withLock { state in
      state.append(event)
      let result = update(&state)
      return (result, state.satisfiedWaiters())
    }
    for waiter in satisfied { waiter.resume() }
    return result
  }

  // MARK: Controls

  /// Requests `demand` more values from the subscription, if subscribed.
  public func request(_ demand: Subscribers.Demand) {
    state.withLock { $0.subscription }?.request(demand)
  }

  /// Cancels the subscription, if subscribed, and forgets it.
  public func cancel() {
    let subscription = state.withLock { state in
      defer { state.subscription = nil }
      return state.subscription
    }
    subscription?.cancel()
  }

  // MARK: What was recorded

  /// Every signal received, in order.
  public var events: [Event] { state.withLock { $0.events } }

  /// The values received, in order.
  public var values: [Input] {
    events.compactMap { event in
      if case .value(let value) = event { return value }
      return nil
    }
  }

  /// The completion, if one was received (the last one, if several were).
  public var completion: Subscribers.Completion<Failure>? { state.withLock { $0.completion } }

  /// The subscription being held (until completion or `cancel()`).
  public var subscription: (any Subscription)? { state.withLock { $0.subscription } }

  /// How many subscriptions were received (more than one is a publisher bug).
  public var subscriptionCount: Int {
    events.reduce(0) { count, event in
      if case .subscription = event { return count + 1 }
      return count
    }
  }

  public var description: String { "RecordingSubscriber" }

  // MARK: Waiting for asynchronous publishers

  /// Waits until a completion has been received, or `timeout` passes (a safety net against
  /// hangs, not a timing assumption: the default, ten minutes, holds on a loaded machine under
  /// the thread sanitizer), and returns the completion, if any.
  @discardableResult
  public func waitForCompletion(timeout: Duration = .seconds(600)) async
    -> Subscribers.Completion<Failure>?
  {
    await wait(timeout: timeout) { $0.completion != nil }
    return completion
  }

  /// Waits until at least `count` values have been received, or `timeout` passes (a safety net
  /// against hangs: ten minutes by default), and returns the values received so far.
  @discardableResult
  public func waitForValues(count: Int, timeout: Duration = .seconds(600)) async -> [Input] {
    await wait(timeout: timeout) { $0.valueCount >= count }
    return values
  }

  private func wait(timeout: Duration, until isSatisfied: @escaping (State) -> Bool) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let id = state.withLock { state -> Int? in
        if isSatisfied(state) { return nil }
        let id = state.nextWaiterID
        state.nextWaiterID += 1
        state.waiters.append(
          Waiter(id: id, isSatisfied: isSatisfied, continuation: continuation))
        return id
      }
      guard let id else {
        continuation.resume()
        return
      }
      let timer = Task { [weak self] in
        try? await Task.sleep(for: timeout)
        if !Task.isCancelled { self?.timeOut(waiter: id) }
      }
      let resolved = state.withLock { state -> Bool in
        guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return true }
        state.waiters[index].timeout = timer
        return false
      }
      if resolved { timer.cancel() }  // satisfied before the timer was attached
    }
  }

  private func timeOut(waiter id: Int) {
    let waiter = state.withLock { state -> Waiter? in
      guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
      return state.waiters.remove(at: index)
    }
    waiter?.resume()
  }
}

extension RecordingSubscriber.Event: Equatable where Input: Equatable, Failure: Equatable {}

extension RecordingSubscriber.Event: CustomStringConvertible {
  public var description: String {
    switch self {
    case .subscription(let description): "subscription(\(description))"
    case .value(let value): "value(\(value))"
    case .completion(.finished): "finished"
    case .completion(.failure(let error)): "failure(\(error))"
    }
  }
}
