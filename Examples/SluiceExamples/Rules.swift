import Sluice
import SluiceTesting

/// `Record` plays back a recording; `RuleChecker` watches any publisher for broken rules, and
/// `RuleFuzzer` hunts for broken rules with generated scripts.
@Sendable func rulesTour() async -> [String] {
  var lines: [String] = []
  let checker = RuleChecker()

  let record = Record<String, Never> { recording in
    recording.receive("a")
    recording.receive("b")
    recording.receive(completion: .finished)
  }
  let recorder = RecordingSubscriber<String, Never>(initialDemand: .max(1), demandPerValue: .max(1))
  record.checkingRules(checker).subscribe(recorder)
  lines.append("Record played back \(recorder.events.map(\.description))")
  lines.append("violations from Record: \(checker.violations.count)")

  // A hand-driven publisher that ignores demand is caught at once.
  let careless = TestPublisher<Int, Never>()
  let carelessRecorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
  careless.checkingRules(checker).subscribe(carelessRecorder)
  careless.send(1)
  careless.send(2)
  carelessRecorder.cancel()
  lines += checker.violations.map(\.description)

  // The rule fuzzer drives an operator with scripts generated from seeds (requests, cancels,
  // re-entrant requests, the upstream's values and completions, from 1…8 threads) and shrinks a
  // failing script to a minimal reproduction.
  let map = RuleFuzzer(seeds: 0..<100).check { upstream in upstream.map { $0 * 2 } }
  lines.append("fuzzing map: \(map)")
  let broken = RuleFuzzer(seeds: 0..<100, maxThreads: 1).check { upstream in
    ForwardsEverything(upstream: upstream)
  }
  lines += "fuzzing a broken operator: \(broken)".split(separator: "\n").map(String.init)
  return lines
}

/// A deliberately broken operator, for the tour and for the test that the fuzzer catches it: it
/// asks its upstream for everything and forwards every value, whatever its subscriber demanded.
struct ForwardsEverything<Upstream: Publisher>: Publisher {
  typealias Output = Upstream.Output
  typealias Failure = Upstream.Failure
  let upstream: Upstream

  func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
    upstream.subscribe(Inner(downstream: subscriber))
  }

  final class Inner<Downstream: Subscriber>: Subscriber, Subscription, @unchecked Sendable
  where Downstream.Input == Output, Downstream.Failure == Failure {
    // Safety: broken on purpose, and only driven from one thread in the tour.
    var downstream: Downstream?
    var upstream: (any Subscription)?

    init(downstream: Downstream) { self.downstream = downstream }

    func receive(subscription: any Subscription) {
      upstream = subscription
      subscription.request(.unlimited)  // the bug: not what the downstream asked for
      downstream?.receive(subscription: self)
    }

    func receive(_ input: Output) -> Subscribers.Demand {
      _ = downstream?.receive(input)
      return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
      downstream?.receive(completion: completion)
      downstream = nil
    }

    func request(_ demand: Subscribers.Demand) {}

    func cancel() {
      upstream?.cancel()
      upstream = nil
      downstream = nil
    }
  }
}
