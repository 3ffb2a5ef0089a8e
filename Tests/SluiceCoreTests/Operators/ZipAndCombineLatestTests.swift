import Dispatch
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

/// `zip` and `combineLatest` (2, 3 and 4 upstreams, with and without a transform).
@Suite("zip and combineLatest", .onThreadsOfTheirOwn)
struct ZipAndCombineLatestTests {
  // MARK: zip

  @Test func zipPairsInOrderAndPassesEachRequestToEveryUpstream() {
    let a = TestPublisher<Int, Never>()
    let b = TestPublisher<String, Never>()
    let recorder = RecordingSubscriber<String, Never>(initialDemand: .max(2))
    a.zip(b) { "\($0)\($1)" }.subscribe(recorder)
    #expect(recorder.events.first == .subscription("Zip"))
    #expect(a.subscriptions[0].requests == [.max(2)])
    #expect(b.subscriptions[0].requests == [.max(2)])
    a.send(1)
    a.send(2)
    #expect(recorder.values == [])
    b.send("a")
    b.send("b")
    #expect(recorder.values == ["1a", "2b"])
    recorder.request(.max(3))
    #expect(a.subscriptions[0].requests == [.max(2), .max(3)])
    #expect(b.subscriptions[0].requests == [.max(2), .max(3)])
    recorder.cancel()
  }

  @Test func zipHoldsValuesBeyondTheDemandUntilRequested() {
    let a = TestPublisher<Int, Never>()
    let b = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    a.zip(b, +).subscribe(recorder)
    a.send(100)
    b.send(1)
    // A misbehaving upstream sends beyond the demand: kept, never delivered unrequested.
    a.send(200)
    b.send(2)
    #expect(recorder.values == [101])
    recorder.request(.max(1))
    #expect(recorder.values == [101, 202])
    recorder.cancel()
  }

  @Test func zipReturnsRequestsMadeDuringADeliveryToTheSideThatCompletedThePair() {
    let a = TestPublisher<Int, Never>()
    let b = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1)) { _ in .max(1) }
    a.zip(b, +).subscribe(recorder)
    a.send(1)
    b.send(1)
    #expect(recorder.values == [2])
    // The returned demand: b (whose value completed the pair) got it as its result, a by request.
    #expect(a.subscriptions[0].requests == [.max(1), .max(1)])
    #expect(b.subscriptions[0].requests == [.max(1)])
    #expect(b.subscriptions[0].totalDemand == .max(2))
    recorder.cancel()
  }

  @Test func zipFinishesWhenAFinishedUpstreamHasNothingLeftToPair() {
    for arity in 2...4 {
      for finishing in 0..<arity {
        let sides = (0..<arity).map { _ in TestPublisher<Int, Never>() }
        let recorder = RecordingSubscriber<Int, Never>()
        zipped(sides).subscribe(recorder)
        sides[finishing].send(1)
        sides[finishing].send(completion: .finished)
        #expect(recorder.completion == nil, "one value still to pair (arity \(arity))")
        for (index, side) in sides.enumerated() where index != finishing { side.send(1) }
        #expect(recorder.values == [arity])
        #expect(recorder.completion == .finished, "arity \(arity), finishing \(finishing)")
        for (index, side) in sides.enumerated() where index != finishing {
          #expect(side.subscriptions[0].isCancelled)
        }
      }
    }
  }

  @Test func zipOfSequencesStopsAtTheShortest() {
    let recorder = RecordingSubscriber<String, Never>()
    [1, 2, 3].publisher.zip(["a", "b"].publisher, [true, false, true].publisher) {
      "\($0)\($1)\($2)"
    }.subscribe(recorder)
    #expect(recorder.values == ["1atrue", "2bfalse"])
    #expect(recorder.completion == .finished)
    let pairs = RecordingSubscriber<String, Never>(initialDemand: .max(1), demandPerValue: .max(1))
    Publishers.Zip4(
      [1, 2].publisher, [3, 4].publisher, [5, 6].publisher, [7, 8].publisher
    ).map { "\($0.0)\($0.1)\($0.2)\($0.3)" }.subscribe(pairs)
    #expect(pairs.values == ["1357", "2468"])
    #expect(pairs.completion == .finished)
  }

  @Test func zipFailsAtTheFirstFailureAndCancelsTheOthers() {
    let a = TestPublisher<Int, TestError>()
    let b = TestPublisher<Int, TestError>()
    let c = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>()
    a.zip(b, c) { $0 + $1 + $2 }.subscribe(recorder)
    a.send(1)
    b.send(completion: .failure(TestError(code: 1)))
    #expect(recorder.completion == .failure(TestError(code: 1)))
    #expect(a.subscriptions[0].isCancelled)
    #expect(c.subscriptions[0].isCancelled)
    #expect(!b.subscriptions[0].isCancelled)
    c.send(1)
    a.send(completion: .failure(TestError(code: 2)))
    #expect(recorder.events.count == 2)
  }

  @Test func aLateSubscribingUpstreamIsAskedForEverythingRequestedSoFar() {
    let late = HeldPublisher<Int, Never>()
    let a = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2))
    a.zip(late, +).subscribe(recorder)
    recorder.request(.max(3))
    let subscription = TestSubscription()
    late.send(subscription: subscription)
    #expect(subscription.requests == [.max(5)])
    recorder.cancel()
  }

  @Test func describedAndReflectedAsCombine() throws {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<Int, Never>()
    let recorder = RecordingSubscriber<(Int, Int), Never>()
    a.zip(b).subscribe(recorder)
    let zip = try #require(recorder.subscription)
    #expect(String(describing: zip) == "Zip")
    #expect(mirrorLabels(zip) == ["downstream", "upstreamSubscriptions", "demand", "buffers"])
    let latest = RecordingSubscriber<(Int, Int), Never>()
    a.combineLatest(b).subscribe(latest)
    let combined = try #require(latest.subscription)
    #expect(String(describing: combined) == "CombineLatest")
    #expect(
      mirrorLabels(combined) == ["downstream", "upstreamSubscriptions", "demand", "buffers"])
    #expect(Publishers.Zip(Just(1), Just(2)) == Publishers.Zip(Just(1), Just(2)))
    #expect(
      Publishers.CombineLatest3(Just(1), Just(2), Just(3))
        != Publishers.CombineLatest3(Just(1), Just(2), Just(4)))
    recorder.cancel()
    latest.cancel()
  }

  // MARK: combineLatest

  @Test func combineLatestCombinesTheNewestOfEachOnceAllHaveSent() {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<String, Never>()
    let recorder = RecordingSubscriber<String, Never>()
    a.combineLatest(b) { "\($0)\($1)" }.subscribe(recorder)
    a.send(1)
    a.send(2)
    #expect(recorder.values == [])
    b.send("a")
    a.send(3)
    b.send("b")
    #expect(recorder.values == ["2a", "3a", "3b"])
    recorder.cancel()
  }

  @Test func combineLatestDropsCombinationsThatFindNoDemand() {
    let a = TestPublisher<Int, Never>()
    let b = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    a.combineLatest(b, +).subscribe(recorder)
    #expect(a.subscriptions[0].requests == [.max(1)])
    a.send(1)
    b.send(10)
    a.send(2)  // no demand: dropped, its value kept as the newest
    #expect(recorder.values == [11])
    recorder.request(.max(1))
    #expect(recorder.values == [11], "nothing is sent until an upstream sends again")
    #expect(b.subscriptions[0].requests == [.max(1), .max(1)])
    b.send(20)
    #expect(recorder.values == [11, 22])
    recorder.cancel()
  }

  @Test func combineLatestFinishesWhenEveryUpstreamHasFinished() {
    let sides = (0..<4).map { _ in TestPublisher<Int, TestError>() }
    let recorder = RecordingSubscriber<Int, TestError>()
    sides[0].combineLatest(sides[1], sides[2], sides[3]) { $0 + $1 + $2 + $3 }
      .subscribe(recorder)
    for side in sides { side.send(1) }
    #expect(recorder.values == [4])
    for side in sides.dropLast() { side.send(completion: .finished) }
    sides[3].send(2)
    #expect(recorder.values == [4, 5])
    #expect(recorder.completion == nil)
    sides[3].send(completion: .finished)
    #expect(recorder.completion == .finished)
  }

  @Test func combineLatestDeliversTheNewestCombinationSentDuringADelivery() {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<Int, Never>()
    var values: [Int] = []
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .unlimited) { value in
      values.append(value)
      if value == 11 { a.send(2) }  // re-entrant
      return .none
    }
    a.combineLatest(b, +).subscribe(recorder)
    a.send(1)
    b.send(10)
    #expect(recorder.values == [11, 12])
    recorder.cancel()
  }

  @Test func combiningOperatorsKeepSignalsSerialUnderConcurrentUpstreams() async {
    let a = PassthroughSubject<Int, Never>()
    let b = PassthroughSubject<Int, Never>()
    let checker = RuleChecker()
    let zipped = RecordingSubscriber<Int, Never>()
    a.zip(b, +).checkingRules(checker).subscribe(zipped)
    let latest = RecordingSubscriber<Int, Never>()
    a.combineLatest(b, +).checkingRules(checker).subscribe(latest)
    await concurrently(2) { side in
      for index in 0..<2_000 { (side == 0 ? a : b).send(index) }
    }
    let values = await zipped.waitForValues(count: 2_000, timeout: .seconds(600))
    #expect(values == (0..<2_000).map { $0 * 2 })
    #expect(latest.values.last == 3_998, "the newest combination is always delivered")
    #expect(checker.violations.isEmpty, "\(checker.violations)")
    zipped.cancel()
    latest.cancel()
  }

  // MARK: Helpers

  private func zipped(_ sides: [TestPublisher<Int, Never>]) -> AnyPublisher<Int, Never> {
    switch sides.count {
    case 2: sides[0].zip(sides[1], +).eraseToAnyPublisher()
    case 3: sides[0].zip(sides[1], sides[2]) { $0 + $1 + $2 }.eraseToAnyPublisher()
    default: sides[0].zip(sides[1], sides[2], sides[3]) { $0 + $1 + $2 + $3 }.eraseToAnyPublisher()
    }
  }
}
