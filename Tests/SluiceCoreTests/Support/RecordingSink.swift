import SluiceCore
import SluiceTesting

// Helpers of the sink attack suites (`SinkFastPathAttackTests`, `FuturePublishedAttackTests`).

/// A sink that appends "<label><event>" to `events`; its closures capture a `Tracker`.
func recordingSink(
  _ label: String = "", into events: Box<[String]>,
  onValue: @escaping (Int) -> Void = { _ in },
  onCompletion: @escaping (Subscribers.Completion<Never>) -> Void = { _ in }
) -> (Subscribers.Sink<Int, Never>, WeakReference<Tracker>) {
  recordingSink(
    label, into: events, failure: Never.self, onValue: onValue, onCompletion: onCompletion)
}

func recordingSink<Failure: Error>(
  _ label: String = "", into events: Box<[String]>, failure: Failure.Type,
  onValue: @escaping (Int) -> Void = { _ in },
  onCompletion: @escaping (Subscribers.Completion<Failure>) -> Void = { _ in }
) -> (Subscribers.Sink<Int, Failure>, WeakReference<Tracker>) {
  let tracker = Tracker()
  let sink = Subscribers.Sink<Int, Failure>(
    receiveCompletion: { completion in
      tracker.touch()
      events.update { $0?.append("\(label)\(completion)") }
      onCompletion(completion)
    },
    receiveValue: { value in
      tracker.touch()
      events.update { $0?.append("\(label)\(value)") }
      onValue(value)
    })
  return (sink, WeakReference(tracker))
}

/// How a sink is attached to a publisher.
enum SinkAttachment: CaseIterable, CustomStringConvertible {
  case direct, erased, anySubscriber, erasedAnySubscriber, erasedTwice
  var description: String {
    switch self {
    case .direct: "direct"
    case .erased: "erased"
    case .anySubscriber: "AnySubscriber(sink)"
    case .erasedAnySubscriber: "erased, AnySubscriber(sink)"
    case .erasedTwice: "AnyPublisher(AnyPublisher) via map"
    }
  }

  func attach<P: Publisher>(_ sink: Subscribers.Sink<P.Output, P.Failure>, to publisher: P) {
    switch self {
    case .direct: publisher.subscribe(sink)
    case .erased: publisher.eraseToAnyPublisher().subscribe(sink)
    case .anySubscriber: publisher.subscribe(AnySubscriber(sink))
    case .erasedAnySubscriber: publisher.eraseToAnyPublisher().subscribe(AnySubscriber(sink))
    case .erasedTwice:
      AnyPublisher(AnyPublisher(publisher.eraseToAnyPublisher())).eraseToAnyPublisher()
        .subscribe(AnySubscriber(AnySubscriber(sink)))
    }
  }
}
