import Foundation
import Sluice
import SluiceNIO

/// A subscriber that asks for one value at a time, each `pace` after the last arrived, from a
/// thread of its own (a client subscriber far slower than the server's source; `.zero`: as
/// fast as values come, still one at a time).
final class SlowSubscriber<Input: Sendable>: Subscriber, Cancellable, @unchecked Sendable {
  typealias Failure = RemotePipelineError
  // Safety: every mutable property is read and written only under `lock`; `owed` is a
  // semaphore.
  private let lock = NSLock()
  private var subscription: (any Subscription)?
  private var values: [Input] = []
  private var _completion: Subscribers.Completion<RemotePipelineError>?
  private var firstValueAt: ContinuousClock.Instant?
  private var stopped = false
  /// Signalled once per value received: the pacing thread owes one request.
  private let owed = DispatchSemaphore(value: 0)
  let pace: Duration
  let subscribedAt = ContinuousClock.now

  init(pace: Duration) { self.pace = pace }

  var received: [Input] { lock.withLock { values } }
  var completion: Subscribers.Completion<RemotePipelineError>? { lock.withLock { _completion } }
  /// How long after this subscriber was made its first value arrived.
  var timeToFirstValue: Duration? { lock.withLock { firstValueAt.map { $0 - subscribedAt } } }

  func receive(subscription: any Subscription) {
    lock.withLock { self.subscription = subscription }
    let (seconds, attoseconds) = pace.components
    let interval = Double(seconds) + Double(attoseconds) / 1e18
    Thread.detachNewThread { [self] in
      while true {
        owed.wait()
        if interval > 0 { Thread.sleep(forTimeInterval: interval) }
        guard let subscription = lock.withLock({ stopped ? nil : self.subscription }) else {
          return
        }
        subscription.request(.max(1))
      }
    }
    subscription.request(.max(1))
  }

  func receive(_ input: Input) -> Subscribers.Demand {
    lock.withLock {
      if values.isEmpty { firstValueAt = .now }
      values.append(input)
    }
    owed.signal()  // the next request comes later, from the pacing thread
    return .none
  }

  func receive(completion: Subscribers.Completion<RemotePipelineError>) {
    lock.withLock {
      _completion = completion
      stopped = true
    }
    owed.signal()  // lets the pacing thread end
  }

  func cancel() {
    let subscription = lock.withLock {
      stopped = true
      return self.subscription
    }
    owed.signal()
    subscription?.cancel()
  }
}

extension Publisher where Failure == RemotePipelineError, Output: Sendable {
  /// Subscribes a ``SlowSubscriber`` with `pace`.
  func slowSubscriber(pace: Duration = .zero) -> SlowSubscriber<Output> {
    let subscriber = SlowSubscriber<Output>(pace: pace)
    subscribe(subscriber)
    return subscriber
  }

  /// Every value, then the completion (waits up to `seconds`; `nil` completion if it did not
  /// come).
  func collect(within seconds: Int = 60) async -> (
    values: [Output], completion: Subscribers.Completion<RemotePipelineError>?
  ) {
    let subscriber = slowSubscriber()
    _ = await eventually(within: seconds) { subscriber.completion != nil }
    defer { subscriber.cancel() }
    return (subscriber.received, subscriber.completion)
  }
}
