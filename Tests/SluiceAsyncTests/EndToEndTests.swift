import SluiceAsync
import SluiceTestSupport
import SluiceTesting
import Testing

@Suite("End to end: publisher → async sequence → publisher")
struct EndToEndTests {
  /// 10^6 at full stress scale (CI); 50,000 in the default run.
  static let count = max(10_000, stressScaled(1_000_000))

  @Test(
    "10^6 values (scaled), in order, none lost or duplicated",
    arguments: [AsyncBufferingPolicy.demandOne, .prefetch(64), .unbounded])
  func roundTrip(_ policy: AsyncBufferingPolicy) async {
    let checker = RuleChecker()
    let (completions, finished) = AsyncStream<Subscribers.Completion<Never>>.makeStream()
    let subscriber = OrderChecker(finished: finished)
    (0..<Self.count).publisher
      .values(bufferingPolicy: policy)
      .publisher
      .checkingRules(checker)
      .subscribe(subscriber)
    var completion: Subscribers.Completion<Never>?
    for await received in completions { completion = received }
    #expect(completion == .finished)
    #expect(subscriber.received == Self.count, "\(policy)")
    #expect(subscriber.outOfOrder == 0)
    #expect(checker.violations.isEmpty, "\(checker.violations.prefix(3))")
  }
}

/// Requests everything, counts values and checks each is the one after the last.
private final class OrderChecker: Subscriber, @unchecked Sendable {
  // Safety: `received` and `outOfOrder` are written only by the (serial) publisher and read
  // after its completion, which the stream continuation orders.
  typealias Input = Int
  typealias Failure = Never
  private let finished: AsyncStream<Subscribers.Completion<Never>>.Continuation
  private(set) var received = 0
  private(set) var outOfOrder = 0

  init(finished: AsyncStream<Subscribers.Completion<Never>>.Continuation) {
    self.finished = finished
  }

  func receive(subscription: any Subscription) { subscription.request(.unlimited) }

  func receive(_ input: Int) -> Subscribers.Demand {
    if input != received { outOfOrder += 1 }
    received += 1
    return .none
  }

  func receive(completion: Subscribers.Completion<Never>) {
    finished.yield(completion)
    finished.finish()
  }
}
