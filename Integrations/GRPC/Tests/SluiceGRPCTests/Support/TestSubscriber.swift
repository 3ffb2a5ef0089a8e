import Foundation
import GRPCCore
import Sluice

/// A subscriber that records what it receives and asks for values by a script: `initial`
/// demand at subscription, then (if `pace` is set) one more value `pace` after each arrives,
/// asked for from a thread of its own; `request(_:)` asks for more by hand.
final class TestSubscriber<Input: Sendable>: Subscriber, Cancellable, @unchecked Sendable {
  typealias Failure = RPCError
  // Safety: `subscription` and `stopped` are read and written only under `lock`; `owed` is a
  // semaphore; the record is `Observed` (locked).
  struct Record: Sendable {
    var values: [Input] = []
    var completion: Subscribers.Completion<RPCError>?
    /// Signals that arrived after a completion or `cancel()` (must stay 0).
    var late = 0
    var count: Int { values.count }
  }

  let record = Observed(Record())
  private let lock = NSLock()
  private var subscription: (any Subscription)?
  private var stopped = false
  private let initial: Subscribers.Demand
  private let pace: Duration?
  /// Signalled once per value received when paced: the pacing thread owes one request.
  private let owed = DispatchSemaphore(value: 0)

  init(initial: Subscribers.Demand = .unlimited, pace: Duration? = nil) {
    self.initial = initial
    self.pace = pace
  }

  var values: [Input] { record.value.values }
  var completion: Subscribers.Completion<RPCError>? { record.value.completion }

  func receive(subscription: any Subscription) {
    lock.withLock { self.subscription = subscription }
    if let pace {
      let interval = Double(pace.components.seconds) + Double(pace.components.attoseconds) / 1e18
      Thread.detachNewThread { [self] in
        while true {
          owed.wait()
          Thread.sleep(forTimeInterval: interval)
          guard let subscription = lock.withLock({ stopped ? nil : self.subscription }) else {
            return
          }
          subscription.request(.max(1))
        }
      }
    }
    if initial > 0 { subscription.request(initial) }
  }

  func receive(_ input: Input) -> Subscribers.Demand {
    let late = lock.withLock { stopped }
    record.update {
      if late { $0.late += 1 } else { $0.values.append(input) }
    }
    if pace != nil { owed.signal() }
    return .none
  }

  func receive(completion: Subscribers.Completion<RPCError>) {
    let late = lock.withLock {
      defer { stopped = true }
      return stopped
    }
    record.update {
      if late { $0.late += 1 } else { $0.completion = completion }
    }
    owed.signal()  // lets the pacing thread end
  }

  /// Asks for `demand` more values.
  func request(_ demand: Subscribers.Demand) {
    lock.withLock { subscription }?.request(demand)
  }

  func cancel() {
    let subscription = lock.withLock {
      stopped = true
      return self.subscription
    }
    owed.signal()
    subscription?.cancel()
  }

  /// Waits until `count` values arrived, or the completion did.
  func wait(forCount count: Int, timeout: Duration = .seconds(60)) async -> Bool {
    await record.wait(timeout: timeout) { $0.count >= count || $0.completion != nil }
  }

  /// Waits for the completion.
  func waitForCompletion(timeout: Duration = .seconds(60)) async -> Bool {
    await record.wait(timeout: timeout) { $0.completion != nil }
  }

  /// The completion's error code, if it failed.
  var failureCode: RPCError.Code? {
    if case .failure(let error) = completion { return error.code }
    return nil
  }
}
