import Observation
import Sluice

/// The model the observation rows change, as apps write it: `@Observable`, on the main actor.
@Observable @MainActor
final class Thermostat {
  var target = 0
}

/// Changes per iteration of the observation rows: each change is awaited before the next (changes
/// made in one turn of the main actor are observed as one, so a burst would measure coalescing).
let changes = 100

/// `@Observable` ↔ pipelines (issue 31), two shapes, each against its plain-Swift anchor:
/// a model's changes read by `for await` (ObservationPublisher's `values` against `Observations`),
/// and a pipeline setting a model on the main actor (a subject's `sink(isolatedTo:)` against an
/// `AsyncStream` read on the main actor).
func registerObservationRows() {
  let observed = "@Observable model on the main actor → each change read by for await (per change)"
  register(observed, "Sluice ObservationPublisher { model.target }.values", values: changes) {
    await readChangesThroughSluice()
  }
  register(observed, "Observations { model.target } (Swift's own)", values: changes) {
    await readChangesThroughObservations()
  }
  // What any push source must do (a publisher cannot be the reader of the consumer's loop): a
  // task of its own iterates Observations and hands each value on.
  register(
    observed, "Observations iterated by a task of its own into an AsyncStream", values: changes
  ) {
    await readChangesThroughAPumpingTask()
  }

  let updating = "subject → @Observable model set on the main actor (per value)"
  register(updating, "Sluice sink(isolatedTo: MainActor.shared)") {
    await setModelThroughSink()
  }
  register(updating, "AsyncStream read by a main-actor task") {
    await setModelThroughStream()
  }
}

@MainActor func readChangesThroughSluice() async {
  let model = Thermostat()
  var iterator = ObservationPublisher { model.target }.values.makeAsyncIterator()
  _ = await iterator.next()
  for change in 1...changes {
    model.target = change
    guard await iterator.next() == change else { fatalError("lost change \(change)") }
  }
}

@MainActor func readChangesThroughObservations() async {
  let model = Thermostat()
  var iterator = Observations { model.target }.makeAsyncIterator()
  _ = await iterator.next()
  for change in 1...changes {
    model.target = change
    guard await iterator.next() == change else { fatalError("lost change \(change)") }
  }
}

@MainActor func readChangesThroughAPumpingTask() async {
  let model = Thermostat()
  let (stream, continuation) = AsyncStream<Int>.makeStream()
  let pump = Task { @MainActor in
    for await value in Observations({ model.target }) { continuation.yield(value) }
  }
  var iterator = stream.makeAsyncIterator()
  _ = await iterator.next()
  for change in 1...changes {
    model.target = change
    guard await iterator.next() == change else { fatalError("lost change \(change)") }
  }
  pump.cancel()
}

@MainActor func setModelThroughSink() async {
  let model = Thermostat()
  let subject = PassthroughSubject<Int, Never>()
  let kept = KeptAlive()
  await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
    kept.value = subject.sink(isolatedTo: MainActor.shared) { _, value in
      model.target = value
      if value == elements { continuation.resume() }
    }
    for value in 1...elements { subject.send(value) }
  }
  withExtendedLifetime(kept) {}
  check(model.target, elements, "sink(isolatedTo:)")
}

@MainActor func setModelThroughStream() async {
  let model = Thermostat()
  let (stream, continuation) = AsyncStream<Int>.makeStream()
  let reader = Task { @MainActor in
    for await value in stream { model.target = value }
  }
  for value in 1...elements { continuation.yield(value) }
  continuation.finish()
  await reader.value
  check(model.target, elements, "AsyncStream")
}
