public import SluiceCore

/// What a publisher sent, tick by tick, recorded by
/// ``TestScheduler/recordMarbles(_:tick:ticks:demand:cancelAtTick:)``.
///
/// Tick 0 is the subscription. Draw it with ``marbles(values:)`` (values named by a dictionary,
/// the one a test wrote its inputs with) or ``marbles(naming:)``.
public struct MarbleRecording<Output, Failure: Error> {
  /// One signal the recorder received.
  public enum Signal {
    /// A value.
    case value(Output)
    /// The publisher finished.
    case finished
    /// The publisher failed.
    case failure(Failure)
  }

  /// Every signal, with the tick it arrived at (an instant between two ticks counts as the
  /// earlier one), in order.
  public let signals: [(tick: Int, signal: Signal)]
  /// The tick after the last one recorded: the recording covers `0..<endTick`.
  public let endTick: Int
  /// What the recorder requested when it subscribed, at tick 0.
  public let demand: Subscribers.Demand
  /// The tick the recorder cancelled at, if it did (before the publisher completed).
  public let cancelledAt: Int?

  /// The recording as a diagram, each value drawn by `name`.
  public func marbles(naming name: (Output) -> Character) -> Marbles {
    var frames: [Int: [Marbles.Event]] = [:]
    for (tick, signal) in signals {
      let event: Marbles.Event =
        switch signal {
        case .value(let value): .value(name(value))
        case .finished: .finished
        case .failure: .failed
        }
      frames[tick, default: []].append(event)
    }
    return Marbles(
      frames: frames.map { Marbles.Frame(tick: $0.key, events: $0.value) }, firstTick: 0,
      endTick: endTick)
  }

  /// The values recorded, in order.
  public var values: [Output] {
    signals.compactMap { if case .value(let value) = $0.signal { value } else { nil } }
  }
}

extension MarbleRecording where Output: Equatable {
  /// The recording as a diagram, each value drawn by its character in `values` (the first in
  /// alphabetical order if several match), or `?` if none does.
  public func marbles(values: [Character: Output]) -> Marbles {
    let names = values.sorted { $0.key < $1.key }
    return marbles { value in names.first { $0.value == value }?.key ?? "?" }
  }
}

/// The subscriber behind ``TestScheduler/recordMarbles(_:tick:ticks:demand:cancelAtTick:)``.
final class MarbleRecorder<Input, Failure: Error>: Subscriber, @unchecked Sendable {
  // Safety: all mutable state is in `state`'s lock; the subscription is called after unlocking.
  struct State {
    var subscription: (any Subscription)?
    var signals: [(tick: Int, signal: MarbleRecording<Input, Failure>.Signal)] = []
    var completed = false
  }

  let clock: MarbleClock
  let demand: Subscribers.Demand
  let state = Lock(State())

  init(clock: MarbleClock, demand: Subscribers.Demand) {
    self.clock = clock
    self.demand = demand
  }

  func receive(subscription: any Subscription) {
    let first = state.withLock { state in
      guard state.subscription == nil, !state.completed else { return false }
      state.subscription = subscription
      return true
    }
    guard first else { return subscription.cancel() }
    if demand > 0 { subscription.request(demand) }
  }

  func receive(_ input: Input) -> Subscribers.Demand {
    let tick = clock.currentTick()
    state.withLock { $0.signals.append((tick, .value(input))) }
    return .none
  }

  func receive(completion: Subscribers.Completion<Failure>) {
    let tick = clock.currentTick()
    let signal: MarbleRecording<Input, Failure>.Signal =
      switch completion {
      case .finished: .finished
      case .failure(let error): .failure(error)
      }
    let subscription = state.withLock { state in
      state.signals.append((tick, signal))
      state.completed = true
      defer { state.subscription = nil }
      return state.subscription
    }
    withExtendedLifetime(subscription) {}
  }

  /// Cancels the subscription; `true` if there was one to cancel.
  @discardableResult
  func cancel() -> Bool {
    guard
      let subscription = state.withLock({ state in
        defer { state.subscription = nil }
        return state.subscription
      })
    else { return false }
    subscription.cancel()
    return true
  }

  var completed: Bool { state.withLock { $0.completed } }
}
