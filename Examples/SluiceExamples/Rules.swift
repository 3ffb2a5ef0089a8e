import Sluice
import SluiceTesting

/// `Record` plays back a recording; `RuleChecker` watches any publisher for broken rules.
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
  careless.checkingRules(checker).subscribe(RecordingSubscriber<Int, Never>(initialDemand: .max(1)))
  careless.send(1)
  careless.send(2)
  lines += checker.violations.map(\.description)
  return lines
}
