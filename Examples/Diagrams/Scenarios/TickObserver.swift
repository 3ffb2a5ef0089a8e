import Foundation
import Sluice
import SluiceTesting
import Synchronization

/// A recording subscriber of a ``Lab``, seen through its row.
class Observer: @unchecked Sendable {
  // Safety: the events are in a lock.
  let label: String
  unowned let lab: Lab
  let events = Mutex<[MarbleDiagram.Event]>([])

  init(label: String, lab: Lab) {
    self.label = label
    self.lab = lab
  }

  func record(_ mark: MarbleDiagram.Mark) {
    let tick = lab.tick
    events.withLock { $0.append(MarbleDiagram.Event(tick: tick, mark: mark)) }
  }

  var row: MarbleDiagram.Row { MarbleDiagram.Row(label, events: events.withLock { $0 }) }
  var isDone: Bool { events.withLock { $0.contains { $0.mark.isTerminal } } }

  /// Ends the subscription, if still open, without recording it (the run is over).
  func end() {}
}

/// Records every signal at its tick; asks for its demand when it subscribes and for more when
/// the run says.
final class TickObserver<Input, Failure: Error>: Observer, Subscriber, @unchecked Sendable {
  // Safety: the upstream subscription is behind `lock`; the events are the observer's.
  let demand: Subscribers.Demand
  let describe: (Input) -> String
  private let lock = NSLock()
  private var upstream: (any Subscription)?

  init(label: String, lab: Lab, demand: Subscribers.Demand, describe: @escaping (Input) -> String) {
    self.demand = demand
    self.describe = describe
    super.init(label: label, lab: lab)
  }

  func receive(subscription: any Subscription) {
    lock.withLock { upstream = subscription }
    record(.subscribed)
    if demand > 0 {
      record(.requested(demand))
      subscription.request(demand)
    }
  }

  func receive(_ input: Input) -> Subscribers.Demand {
    record(.value(describe(input)))
    return .none
  }

  func receive(completion: Subscribers.Completion<Failure>) {
    switch completion {
    case .finished: record(.finished)
    case .failure(let error): record(.failed(String(describing: error)))
    }
    lock.withLock { upstream = nil }
  }

  func request(_ demand: Subscribers.Demand) {
    guard let subscription = lock.withLock({ upstream }) else { return }
    record(.requested(demand))
    subscription.request(demand)
  }

  func cancel() {
    guard let subscription = lock.withLock({ upstream }) else { return }
    record(.cancelled)
    subscription.cancel()
  }

  override func end() {
    let subscription = lock.withLock {
      defer { upstream = nil }
      return upstream
    }
    subscription?.cancel()
  }
}
