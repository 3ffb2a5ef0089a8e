import Foundation
import Observation
import SluiceAsync
import SluiceTesting
import Synchronization
import Testing

/// A model as apps write them now: `@Observable`, on the main actor.
@Observable @MainActor
final class CounterModel {
  var count = 0
  var label = "idle"
}

/// What the observation's closure computed, in order: tells a test when a change was observed
/// without timing assumptions.
final class Probe: Sendable {
  private let seen = Mutex<[Int]>([])
  var values: [Int] { seen.withLock { $0 } }

  func record(_ value: Int) -> Int {
    seen.withLock { $0.append(value) }
    return value
  }

  /// Waits until the closure has computed `value` (the deadline guards against a hang only: with
  /// the cores busy, under the thread sanitizer, a minute was seen to pass first).
  func waitFor(_ value: Int) async {
    let deadline = ContinuousClock.now + .seconds(900)
    while !values.contains(value), ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(1))
    }
  }
}

@Suite("ObservationPublisher: @Observable models into pipelines")
@MainActor
struct ObservationPublisherTests {
  @Test func theCurrentValueThenEveryChange() async {
    let model = CounterModel()
    model.count = 5
    var values = ObservationPublisher { model.count }.values.makeAsyncIterator()
    #expect(await values.next() == 5)
    model.count = 6
    #expect(await values.next() == 6)
    model.label = "busy"  // a property the closure does not read: no value
    model.count = 7
    #expect(await values.next() == 7)
  }

  @Test func changesInOneTurnOfTheModelsActorAreOneChange() async {
    let model = CounterModel()
    var values = ObservationPublisher { model.count }.values.makeAsyncIterator()
    #expect(await values.next() == 0)
    model.count = 1
    model.count = 2
    model.count = 3
    #expect(await values.next() == 3)
  }

  @Test func valuesIsLosslessForASlowConsumer() async {
    let model = CounterModel()
    let probe = Probe()
    let publisher = ObservationPublisher { probe.record(model.count) }
    var values = publisher.values.makeAsyncIterator()  // hot: .unlimited, buffered
    #expect(await values.next() == 0)
    for next in 1...5 {
      model.count = next
      await probe.waitFor(next)  // observed, not yet consumed
    }
    var consumed: [Int] = []
    for _ in 1...5 { consumed.append(await values.next() ?? -1) }
    #expect(consumed == [1, 2, 3, 4, 5])
  }

  @Test func aSubscriberWithoutDemandGetsTheLatestValueWhenItAsks() async {
    let model = CounterModel()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    let publisher = ObservationPublisher { model.count }
    publisher.subscribe(recorder)
    #expect(await recorder.waitForValues(count: 1) == [0])
    model.count = 1
    try? await Task.sleep(for: .milliseconds(20))
    model.count = 2
    recorder.request(.max(1))
    #expect(await recorder.waitForValues(count: 2) == [0, 2])
    recorder.cancel()
  }

  @Test func cancelEndsTheObservationAndReleasesTheSubscriber() async {
    let model = CounterModel()
    let probe = Probe()
    weak var released: RecordingSubscriber<Int, Never>?
    do {
      let recorder = RecordingSubscriber<Int, Never>()
      released = recorder
      ObservationPublisher { probe.record(model.count) }.subscribe(recorder)
      #expect(await recorder.waitForValues(count: 1) == [0])
      #expect(recorder.subscription.map { String(describing: $0) } == "Observation")
      recorder.cancel()
    }
    #expect(released == nil)
    let computed = probe.values.count
    model.count = 99
    try? await Task.sleep(for: .milliseconds(50))
    #expect(probe.values.count == computed, "the closure ran again after cancel()")
  }

  @Test func aPipelineFedByAModelAndAModelFedByAPipeline() async {
    // Model → pipeline: the query, debounced on virtual time, without repeats.
    let model = CounterModel()
    let scheduler = DispatchQueue.test
    var searched: [Int] = []
    let searching = ObservationPublisher { model.count }
      .debounce(for: .milliseconds(300), scheduler: scheduler)
      .removeDuplicates()
      .sink { searched.append($0) }
    let probe = Probe()
    let observed = ObservationPublisher { probe.record(model.count) }.sink { _ in }
    await probe.waitFor(0)
    for next in [1, 2, 2] {
      model.count = next
      await probe.waitFor(next)
      try? await Task.sleep(for: .milliseconds(5))
    }
    scheduler.advance(by: .seconds(1))
    searching.cancel()
    observed.cancel()
    #expect(searched.last == 2)

    // Pipeline → model: values set on the main actor, in order.
    let labels = PassthroughSubject<String, Never>()
    let updating = labels.sink(isolatedTo: MainActor.shared) { _, label in model.label = label }
    labels.send("loading")
    labels.send("done")
    let deadline = ContinuousClock.now + .seconds(900)
    while model.label != "done", ContinuousClock.now < deadline { await Task.yield() }
    #expect(model.label == "done")
    updating.cancel()
  }
}

/// A consumer on an actor of its own, reading a main-actor model's changes.
actor Tally {
  private(set) var seen: [Int] = []

  func follow(_ changes: ObservationPublisher<Int>, until last: Int, probe: Probe) async {
    for await value in changes.values {
      seen.append(probe.record(value))
      if value == last { break }
    }
  }
}

@Suite("ObservationPublisher from another actor")
struct ObservationPublisherActorTests {
  @Test func anActorFollowsAMainActorModel() async {
    let (model, changes) = await MainActor.run {
      let model = CounterModel()
      return (model, ObservationPublisher { model.count })
    }
    let tally = Tally()
    let probe = Probe()
    async let followed: Void = tally.follow(changes, until: 3, probe: probe)
    await probe.waitFor(0)
    for next in 1...3 {
      await MainActor.run { model.count = next }
      await probe.waitFor(next)
    }
    await followed
    #expect(await tally.seen == [0, 1, 2, 3])
  }
}
