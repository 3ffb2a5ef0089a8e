import Dispatch
import Foundation
import SluiceCore
import Testing

/// A subscriber that holds nothing but closures, so tests can check that a subscription
/// releases its subscriber (the test keeps the subscription, drops the probe, and checks a weak
/// reference).
final class Probe<Input, Failure: Error>: Subscriber, @unchecked Sendable {
  // Safety: closures are set once at init; the publisher rules keep calls serial.
  let onSubscription: (any Subscription) -> Void
  let onValue: (Input) -> Subscribers.Demand
  let onCompletion: (Subscribers.Completion<Failure>) -> Void

  init(
    onSubscription: @escaping (any Subscription) -> Void,
    onValue: @escaping (Input) -> Subscribers.Demand = { _ in .none },
    onCompletion: @escaping (Subscribers.Completion<Failure>) -> Void = { _ in }
  ) {
    self.onSubscription = onSubscription
    self.onValue = onValue
    self.onCompletion = onCompletion
  }

  func receive(subscription: any Subscription) { onSubscription(subscription) }
  func receive(_ input: Input) -> Subscribers.Demand { onValue(input) }
  func receive(completion: Subscribers.Completion<Failure>) { onCompletion(completion) }
}

/// Sends 1 into `subject` from a thread of its own and returns once `entered` is signalled (the
/// subscriber is inside `receive` for it and stays there until the test lets it go on); the
/// returned semaphore is signalled when that `send` returns.
func sendOneFromAnotherThread<Failure: Error>(
  _ subject: PassthroughSubject<Int, Failure>, until entered: DispatchSemaphore
) -> DispatchSemaphore {
  let delivered = DispatchSemaphore(value: 0)
  let shared = Shared(subject)
  Thread.detachNewThread {
    shared.value.send(1)
    delivered.signal()
  }
  entered.wait()
  return delivered
}

/// An error for failing publishers in tests.
struct TestError: Error, Hashable, Codable, CustomStringConvertible {
  var code = 1
  var description: String { "TestError(\(code))" }
}

/// A subscription (or other value that is thread-safe by contract but not `Sendable` by type)
/// shared with the threads of a concurrency test.
typealias Shared<Value> = UncheckedSendable<Value>

/// What an exit test's child process wrote to standard error, as text.
func standardError(of result: ExitTest.Result?) -> String {
  String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
}
