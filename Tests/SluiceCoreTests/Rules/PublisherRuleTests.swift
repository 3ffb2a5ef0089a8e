import Dispatch
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

/// The rules every publisher obeys, run against every publisher of the module.
@Suite("Publisher rules", .onThreadsOfTheirOwn)
struct PublisherRuleTests {
  /// Demand scripts: (initial demand, demand returned after each value).
  static let demandGrid: [(Subscribers.Demand, Subscribers.Demand)] = [
    (.max(1), .none), (.max(1), .max(1)), (.max(2), .none), (.max(3), .max(2)),
    (.unlimited, .none), (.none, .none), (.max(1), .unlimited),
  ]

  /// Whether the demand a script has granted once `count` values arrived exceeds `count`: the
  /// publisher may then go on to its end.
  static func demandOutlasts(
    _ count: Int, initial: Subscribers.Demand, perValue: Subscribers.Demand
  ) -> Bool {
    var granted = initial
    for _ in 0..<count { granted += perValue }
    return granted > count
  }

  @Test("never more than demanded, for each demand script", arguments: PublisherCase.all)
  func neverMoreThanDemanded(_ publisher: PublisherCase) async {
    for (initial, perValue) in Self.demandGrid {
      let checker = RuleChecker()
      let recorder = RecordingSubscriber<Int, Never>(
        initialDemand: initial, demandPerValue: perValue)
      publisher.make().checkingRules(checker).subscribe(recorder)
      // Allowed values: initial + perValue after each delivered one.
      let count = deliverableCount(
        initialDemand: initial, demandPerValue: perValue, available: publisher.expected.count)
      let expected = Array(publisher.expected.prefix(count))
      if count == publisher.expected.count,
        Self.demandOutlasts(count, initial: initial, perValue: perValue)
      {
        // Everything arrived with demand to spare: the publisher must finish. (With no demand
        // to spare it need not: `prefix(while:)` finishes on the first value that fails its
        // predicate, and that value needs demand. Waiting for it there only ran out the ten
        // minutes against hangs.)
        #expect(
          await recorder.waitForCompletion() == .finished,
          "\(initial), then \(perValue) per value: all \(count) values, then no completion")
      } else {
        await recorder.waitForValues(count: count)
      }
      #expect(recorder.values == expected, "\(initial), then \(perValue) per value")
      #expect(checker.violations.isEmpty, "\(checker.violations)")
      recorder.cancel()  // the test ends the subscription (it may be waiting for more demand)
    }
  }

  @Test("delivers exactly what is requested, request by request", arguments: PublisherCase.all)
  func exactDemand(_ publisher: PublisherCase) async {
    let checker = RuleChecker()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    publisher.make().checkingRules(checker).subscribe(recorder)
    for index in publisher.expected.indices {
      recorder.request(.max(1))
      let values = await recorder.waitForValues(count: index + 1)
      #expect(values == Array(publisher.expected.prefix(index + 1)))
    }
    if publisher.expected.isEmpty || recorder.completion == nil {
      recorder.request(.max(1))
    }
    #expect(await recorder.waitForCompletion() == .finished)
    #expect(recorder.values == publisher.expected)
    #expect(checker.violations.isEmpty, "\(checker.violations)")
  }

  @Test("re-entrant demand from inside receive(_:)", arguments: PublisherCase.all)
  func reentrantDemand(_ publisher: PublisherCase) async {
    let checker = RuleChecker()
    let subscription = Box<any Subscription>()
    let values = Box<[Int]>([])
    let done = AsyncStream<Void>.makeStream()
    let probe = Probe<Int, Never>(
      onSubscription: {
        subscription.set($0); $0.request(.max(1))
      },
      onValue: { value in
        values.update { $0?.append(value) }
        subscription.value?.request(.max(1))  // re-enters the publisher
        return .none
      },
      onCompletion: { _ in done.continuation.finish() })
    publisher.make().checkingRules(checker).subscribe(probe)
    for await _ in done.stream {}
    #expect(values.value == publisher.expected)
    #expect(checker.violations.isEmpty, "\(checker.violations)")
    subscription.update { $0 = nil }  // the box, captured by the probe, holds the subscription
  }

  @Test("cancel from inside receive(_:) stops everything", arguments: PublisherCase.all)
  func cancelInsideReceive(_ publisher: PublisherCase) async {
    guard publisher.expected.count > 1 else { return }
    let checker = RuleChecker()
    let subscription = Box<any Subscription>()
    let received = Box<[Int]>([])
    let completed = Box<Bool>(false)
    let first = AsyncStream<Void>.makeStream()
    let probe = Probe<Int, Never>(
      onSubscription: {
        subscription.set($0); $0.request(.unlimited)
      },
      onValue: { value in
        received.update { $0?.append(value) }
        subscription.value?.cancel()
        first.continuation.finish()
        return .max(5)
      },
      onCompletion: { _ in completed.set(true) })
    publisher.make().checkingRules(checker).subscribe(probe)
    if let flush = publisher.flush {
      // Once the first value arrived, let everything already scheduled run: a delivery after
      // the cancel would show.
      for await _ in first.stream {}
      await flush()
    }
    #expect(received.value == [publisher.expected[0]])
    #expect(completed.value == false)
    #expect(checker.violations.isEmpty, "\(checker.violations)")
    subscription.update { $0 = nil }  // the box, captured by the probe, holds the subscription
  }

  @Test("cancel() is idempotent and thread-safe; nothing after it", arguments: PublisherCase.all)
  func concurrentCancel(_ publisher: PublisherCase) async {
    let checker = RuleChecker()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    publisher.make().checkingRules(checker).subscribe(recorder)
    guard let subscription = recorder.subscription.map(Shared.init) else {
      // Publishers with nothing to send complete at once.
      #expect(recorder.completion == .finished)
      return
    }
    await concurrently(64) { _ in subscription.value.cancel() }
    subscription.value.request(.unlimited)
    #expect(recorder.values.isEmpty)
    #expect(checker.violations.isEmpty, "\(checker.violations)")
    recorder.cancel()  // the recorder still holds the subscription cancelled behind its back
  }

  @Test("concurrent request() and cancel() from many threads", arguments: PublisherCase.all)
  func requestCancelHammer(_ publisher: PublisherCase) async {
    for round in 0..<20 {
      let checker = RuleChecker()
      let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
      publisher.make().checkingRules(checker).subscribe(recorder)
      guard let subscription = recorder.subscription.map(Shared.init) else { continue }
      await concurrently(16) { index in
        if index == 8 + round % 8 {
          subscription.value.cancel()
        } else {
          subscription.value.request(.max(1))
        }
      }
      let values = recorder.values
      if publisher.latestOnly {
        // combineLatest may drop a combination that arrives while another thread delivers:
        // what arrives is in order, each value once (seen under the sanitizer: [1, 3, 4, …]).
        #expect(values == values.sorted() && Set(values).count == values.count, "\(values)")
        #expect(Set(values).isSubset(of: publisher.expected))
      } else {
        #expect(values == Array(publisher.expected.prefix(values.count)))
      }
      #expect(checker.violations.isEmpty, "\(checker.violations)")
      recorder.cancel()  // the recorder still holds the subscription cancelled behind its back
    }
  }

  @Test("concurrent requests deliver everything once, in order", arguments: PublisherCase.all)
  func concurrentRequests(_ publisher: PublisherCase) async {
    let checker = RuleChecker()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    publisher.make().checkingRules(checker).subscribe(recorder)
    if let subscription = recorder.subscription.map(Shared.init) {
      await concurrently(max(1, publisher.expected.count)) { _ in
        subscription.value.request(.max(1))
      }
    }
    if publisher.latestOnly {
      // combineLatest drops a combination that arrives while another thread delivers (it
      // delivers the newest instead): values stay in order, and the last one always arrives.
      recorder.request(.unlimited)
      #expect(await recorder.waitForCompletion() == .finished)
      #expect(recorder.values == recorder.values.sorted())
      #expect(recorder.values.last == publisher.expected.last)
      #expect(checker.violations.isEmpty, "\(checker.violations)")
      return
    }
    // A filtering operator needs demand for the values it drops after the last one it keeps.
    if recorder.completion == nil {
      _ = await recorder.waitForValues(count: publisher.expected.count)
      recorder.request(.max(1))
    }
    #expect(await recorder.waitForCompletion() == .finished)
    #expect(recorder.values == publisher.expected)
    #expect(checker.violations.isEmpty, "\(checker.violations)")
  }

  @Test("the subscriber is released after completion", arguments: PublisherCase.all)
  func releasedAfterCompletion(_ publisher: PublisherCase) async {
    let subscription = Box<any Subscription>()
    let done = AsyncStream<Void>.makeStream()
    weak var weakProbe: Probe<Int, Never>?
    do {
      let probe = Probe<Int, Never>(
        onSubscription: {
          subscription.set($0); $0.request(.unlimited)
        },
        onCompletion: { _ in done.continuation.finish() })
      weakProbe = probe
      publisher.make().subscribe(probe)
    }
    for await _ in done.stream {}
    // The call delivering the completion (on a scheduler's thread, say) may still be returning.
    var released = weakProbe == nil
    let deadline = ContinuousClock.now + .seconds(60)
    while !released, ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(1))
      released = weakProbe == nil
    }
    withExtendedLifetime(subscription.value) {
      #expect(released, "the subscription still holds its subscriber after completion")
    }
  }

  @Test("the subscriber is released after cancel()", arguments: PublisherCase.all)
  func releasedAfterCancel(_ publisher: PublisherCase) async {
    let subscription = Box<any Subscription>()
    weak var weakProbe: Probe<Int, Never>?
    do {
      let probe = Probe<Int, Never>(onSubscription: { subscription.set($0) })
      weakProbe = probe
      publisher.make().subscribe(probe)
    }
    subscription.value?.cancel()
    // A case that delivers on another thread may be inside a delivery when `cancel()` returns
    // (it completes, and holds the subscriber meanwhile): wait for its scheduler to be idle.
    // (Seen under the thread sanitizer: debounce's completion, scheduled on a queue when the
    // empty upstream finished, was being delivered as the test checked.)
    if let flush = publisher.flush { await flush() }
    withExtendedLifetime(subscription.value) {
      #expect(weakProbe == nil, "the subscription still holds its subscriber after cancel()")
    }
  }
}
