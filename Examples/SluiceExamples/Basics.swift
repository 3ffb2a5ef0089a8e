import Sluice
import SluiceTesting

/// `Just` and `Sequence.publisher`, with a subscriber that asks for values a few at a time.
@Sendable func demandTour() async -> [String] {
  var lines: [String] = []

  // A sink asks for everything at once.
  _ = Just(42).sink { lines.append("Just delivered \($0)") }

  // A recording subscriber asks for 3, then for 2 more: exactly 5 of a million arrive.
  let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(3))
  (1...1_000_000).publisher.subscribe(recorder)
  lines.append("after .max(3): \(recorder.values)")
  recorder.request(.max(2))
  lines.append("after .max(2) more: \(recorder.values)")
  recorder.cancel()

  // Result and Optional publishers, type-erased together.
  let sources: [AnyPublisher<Int, Never>] = [
    Result<Int, Never>.success(7).publisher.eraseToAnyPublisher(),
    Optional(8).publisher.eraseToAnyPublisher(),
    Optional<Int>.none.publisher.eraseToAnyPublisher(),
  ]
  var collected: [Int] = []
  for source in sources { _ = source.sink { collected.append($0) } }
  lines.append("Result, Optional, nil: \(collected)")
  return lines
}
