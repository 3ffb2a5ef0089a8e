import Dispatch
import SluiceCore
import SluiceTesting
import Testing

/// The time and combining operators drawn as marble diagrams on virtual time (one tick = one
/// second): inputs as cold or hot marble publishers, the output checked against a diagram.
@Suite("Time and combining operators as marble diagrams")
struct MarbleOperatorTests {
  let values: [Character: String] = [
    "a": "a", "b": "b", "c": "c", "d": "d", "x": "x", "y": "y", "1": "1", "2": "2", "3": "3",
    "4": "4",
  ]

  func expectMarbles<P: Publisher>(
    _ publisher: P, _ expected: String, on scheduler: TestSchedulerOf<DispatchQueue>,
    values: [Character: String]? = nil, sourceLocation: SourceLocation = #_sourceLocation
  ) throws where P.Output == String {
    let check = try scheduler.checkMarbles(
      publisher, expected: expected, values: values ?? self.values)
    #expect(check.matches, "\(check)", sourceLocation: sourceLocation)
  }

  @Test func debounceEmitsAValueOnceTheInputIsQuietForTheInterval() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.coldPublisher("-a--b-c------d-|", values: values)
    // As in Combine, the completion drops the value still waiting (d).
    try expectMarbles(
      input.debounce(for: .seconds(2), scheduler: scheduler),
      "---a----c------|", on: scheduler)
  }

  @Test func throttleEmitsTheFirstOrTheLatestOfEachInterval() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.coldPublisher("ab-c-d---x|", values: values)
    try expectMarbles(
      input.throttle(for: .seconds(3), scheduler: scheduler, latest: true),
      "a--c--d--x|", on: scheduler)
    try expectMarbles(
      input.throttle(for: .seconds(3), scheduler: scheduler, latest: false),
      "a--b--d--x|", on: scheduler)
  }

  @Test func delayShiftsEverySignal() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.coldPublisher("-a-b|", values: values)
    try expectMarbles(
      input.delay(for: .seconds(2), scheduler: scheduler), "---a-b|", on: scheduler)
  }

  @Test func mergeInterleavesAndFinishesWhenAllHaveFinished() throws {
    let scheduler = DispatchQueue.test
    let first = try scheduler.coldPublisher("-a---c|", values: values)
    let second = try scheduler.coldPublisher("--b-d---|", values: values)
    try expectMarbles(first.merge(with: second), "-ab-dc--|", on: scheduler)
  }

  @Test func zipPairsInOrderAndFinishesWhenOneSideHasNothingLeftToPair() throws {
    let scheduler = DispatchQueue.test
    let letters = try scheduler.coldPublisher("-a--b|", values: values)
    let digits = try scheduler.coldPublisher("--1-2-3|", values: values)
    try expectMarbles(
      letters.zip(digits) { $0 + $1 }, "--x-y|", on: scheduler, values: ["x": "a1", "y": "b2"])
  }

  @Test func combineLatestPairsEachValueWithTheOthersLatest() throws {
    let scheduler = DispatchQueue.test
    let letters = try scheduler.coldPublisher("-a--b---|", values: values)
    let digits = try scheduler.coldPublisher("--1---2|", values: values)
    try expectMarbles(
      letters.combineLatest(digits) { $0 + $1 }, "--x-y-z-|", on: scheduler,
      values: ["x": "a1", "y": "b1", "z": "b2"])
  }

  @Test func switchToLatestCancelsThePreviousInner() throws {
    let scheduler = DispatchQueue.test
    let first = try scheduler.coldPublisher("-1-2-3|", values: values)
    let second = try scheduler.coldPublisher("-4|", values: values)
    let outer = try scheduler.coldPublisher(
      "-A---B|", values: ["A": first.eraseToAnyPublisher(), "B": second.eraseToAnyPublisher()])
    try expectMarbles(outer.switchToLatest(), "--1-2-4|", on: scheduler)
    // The first inner was subscribed at tick 1 and cancelled when the second came, at tick 5.
    #expect(first.subscriptionLogs.map(\.marbles) == ["-^---!"])
    #expect(second.subscriptionLogs.map(\.marbles) == ["-----^"])
  }

  @Test func flatMapWithOnePublisherAtATimeWaitsForTheInnerToFinish() throws {
    let scheduler = DispatchQueue.test
    let first = try scheduler.coldPublisher("-1-2|", values: values)
    let second = try scheduler.coldPublisher("-3|", values: values)
    let outer = try scheduler.coldPublisher("-A-B|", values: ["A": first, "B": second])
    try expectMarbles(outer.flatMap(maxPublishers: .max(1)) { $0 }, "--1-2-3|", on: scheduler)
    // B came at tick 3 but was asked for only when A finished, at tick 5.
    #expect(outer.subscriptionLogs[0].requests.map(\.tick) == [0, 5])
    #expect(second.subscriptionLogs.map(\.marbles) == ["-----^"])
  }

  @Test func flatMapWithoutALimitRunsInnersTogether() throws {
    let scheduler = DispatchQueue.test
    let first = try scheduler.coldPublisher("-1---2|", values: values)
    let second = try scheduler.coldPublisher("-3|", values: values)
    let outer = try scheduler.coldPublisher("-A-B|", values: ["A": first, "B": second])
    try expectMarbles(outer.flatMap { $0 }, "--1-3-2|", on: scheduler)
  }

  @Test func aHotSourceThroughDebounceSeesOnlyWhatCameAfterTheSubscription() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.hotPublisher("ab^-c--d|", values: values)
    try expectMarbles(
      input.debounce(for: .seconds(1), scheduler: scheduler), "---c--|", on: scheduler)
  }
}
