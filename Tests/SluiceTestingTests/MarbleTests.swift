import Dispatch
import SluiceCore
import SluiceTesting
import Testing

@Suite("Marble diagrams: parsing, publishers, recording, checking")
struct MarbleTests {
  struct Boom: Error, Equatable {}
  let values: [Character: Int] = ["a": 1, "b": 2, "c": 3]

  // MARK: Parsing

  @Test func eachCharacterIsATickAndAGroupIsOne() throws {
    let diagram = try Marbles("-a-(bc)--|")
    #expect(
      diagram.frames == [
        .init(tick: 1, events: [.value("a")]),
        .init(tick: 3, events: [.value("b"), .value("c")]),
        .init(tick: 6, events: [.finished]),
      ])
    #expect(diagram.firstTick == 0)
    #expect(diagram.endTick == 7)
    #expect(diagram.description == "-a-(bc)--|")
  }

  @Test func theSubscriptionPointIsTickZeroAndSpacesMeanNothing() throws {
    let diagram = try Marbles("a-^ -b #")
    #expect(diagram.events.map(\.tick) == [-2, 0, 2, 3])
    #expect(diagram.events.map(\.event) == [.value("a"), .subscribed, .value("b"), .failed])
    #expect(diagram.firstTick == -2)
    #expect(diagram.description == "a-^-b#")
    #expect(try Marbles(diagram.description) == diagram)
  }

  @Test(arguments: [
    ("-a-(b", 4, "the group opened here is never closed"),
    ("-a)", 3, "')' closes no group"),
    ("-()", 2, "an empty group"),
    ("(a(b))", 3, "a group inside the group opened at 1"),
    ("(a-b)", 3, "'-' inside the group opened at 1"),
    ("^-^", 3, "a second '^' (the first is at position 1)"),
    ("(a^)", 3, "'^' inside the group opened at 1"),
    ("-a|-b", 5, "'b' comes after the completion at position 3"),
    ("#(a)", 3, "'a' comes after the completion at position 1"),
  ])
  func malformedDiagramsNameThePosition(diagram: String, position: Int, reason: String) {
    #expect(throws: MarbleSyntaxError(diagram: diagram, position: position, reason: reason)) {
      try Marbles(diagram)
    }
  }

  // Found by the marble fuzz target (Fuzz/, input d6 99 d6 2e): a diagram starting with a
  // combining mark parsed, and drawn under a label the mark joined the label's padding.
  @Test(arguments: [
    ("\u{599}\u{FFFD}.", 1, "the value U+599 joins the character next to it"),
    ("-\u{600}", 2, "the value U+600 joins the character next to it"),
    ("-\r \n|", 4, "the value U+A joins the value at position 2 (U+D)"),
    ("a(🇦)🇧", 5, "the value U+1F1E7 joins the value at position 3 (U+1F1E6)"),
    ("\u{1100} \u{1161}", 3, "the value U+1161 joins the value at position 1 (U+1100)"),
  ])
  func aValueThatWouldJoinItsNeighbourWhenDrawnIsAnError(
    diagram: String, position: Int, reason: String
  ) {
    #expect {
      try Marbles(diagram)
    } throws: { error in
      let error = error as? MarbleSyntaxError
      return error?.position == position && error?.reason.hasPrefix(reason) == true
    }
  }

  @Test func valuesThatStandAloneDrawAsTheyWereWritten() throws {
    let diagram = try Marbles("-e\u{301}-가(각🇫🇷)-🇦-🇧 a|")
    #expect(diagram.events.map(\.event.symbol) == ["e\u{301}", "가", "각", "🇫🇷", "🇦", "🇧", "a", "|"])
    #expect(try Marbles(diagram.description) == diagram)
    let lines = Marbles.aligned([("in", diagram), ("later", diagram.shifted(by: 2))])
    #expect(try Marbles(String(lines[0].dropFirst(7))) == diagram)
  }

  @Test func theErrorShowsACaretUnderTheMistake() {
    let error = MarbleSyntaxError(
      diagram: "-a-(b", position: 4, reason: "the group opened here is never closed")
    #expect(
      error.description == """
        Marble diagram "-a-(b": the group opened here is never closed (position 4)
          -a-(b
             ^
        """)
  }

  @Test func diagramsDrawnUnderEachOtherShareTheirColumns() throws {
    let lines = Marbles.aligned([
      ("input", try Marbles("x^-a-(bc)|")), ("output", try Marbles("-x-y-z|")),
    ])
    #expect(lines == ["input   x^-a-(bc)|", "output   -x-y-   z|"])
    #expect(try Marbles(String(lines[1].dropFirst(6))) == Marbles("-x-y-z|"))
  }

  @Test func aDiagramShiftedAndASubscriptionLogDrawnAsADiagram() throws {
    let shifted = try Marbles("-a|").shifted(by: 3)
    #expect(shifted.events.map(\.tick) == [4, 5])
    #expect(Marbles.aligned([("x", try Marbles("-")), ("y", shifted)]) == ["x  -", "y     -a|"])
    let scheduler = DispatchQueue.test
    let input = try scheduler.coldPublisher("-a-b-c|", values: values)
    scheduler.advance(by: .seconds(2))
    _ = scheduler.recordMarbles(input, ticks: 4, cancelAtTick: 3)
    #expect(input.subscriptionLogs[0].diagram.events.map(\.tick) == [2, 5])
    #expect(input.subscriptionLogs[0].marbles == "--^--!")
  }

  // MARK: Cold and hot publishers

  @Test func aColdPublisherPlaysFromEachSubscription() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.coldPublisher("-a-b|", values: values)
    let first = scheduler.recordMarbles(input)
    #expect(first.marbles(values: values).description == "-a-b|")
    #expect(first.values == [1, 2])
    // Subscribed 5 ticks later, the second subscriber still sees the whole diagram.
    let second = scheduler.recordMarbles(input)
    #expect(second.marbles(values: values).description == "-a-b|")
    // The first recording ran until the completion, at tick 4.
    #expect(input.subscriptionLogs.map(\.marbles) == ["^", "----^"])
    #expect(input.subscriptionLogs[1].requests == [.init(tick: 4, demand: .unlimited)])
  }

  @Test func aColdPublisherKeepsAValueUntilItIsRequested() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.coldPublisher("ab-c|", values: values)
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    input.subscribe(recorder)
    scheduler.advance(by: .seconds(3))
    #expect(recorder.values == [1])
    recorder.request(.max(2))
    #expect(recorder.values == [1, 2, 3])  // b and c waited; the completion did not
    #expect(recorder.completion == nil)
    scheduler.advance(by: .seconds(1))
    #expect(recorder.completion == .finished)
    #expect(
      input.subscriptionLogs[0].requests == [
        .init(tick: 0, demand: .max(1)), .init(tick: 3, demand: .max(2)),
      ])
  }

  @Test func theCompletionWaitsForTheValuesBeforeItNotForDemand() throws {
    let scheduler = DispatchQueue.test
    let empty = try scheduler.coldPublisher("--|", values: values)
    #expect(
      scheduler.recordMarbles(empty, demand: .none).marbles(values: values).description == "--|")
    let oneValue = try scheduler.coldPublisher("a|", values: values)
    let recording = scheduler.recordMarbles(oneValue, demand: .none)
    #expect(recording.signals.isEmpty)
  }

  @Test func cancellingStopsDeliveryAndIsLogged() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.coldPublisher("-a-b-c|", values: values)
    let recording = scheduler.recordMarbles(input, ticks: 6, cancelAtTick: 3)
    #expect(recording.marbles(values: values).description == "-a-b---")
    #expect(input.subscriptionLogs.map(\.marbles) == ["^--!"])
    #expect(input.subscriptionLogs[0].cancelledAt == 3)
  }

  @Test func aHotPublisherPlaysOnceAndALateSubscriberMissesWhatCameBefore() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.hotPublisher("x-^a-b-c|", values: ["x": 0, "a": 1, "b": 2, "c": 3])
    scheduler.advance(by: .seconds(2))
    let late = scheduler.recordMarbles(input)
    #expect(late.values == [2, 3])
    #expect(late.marbles(values: values).description == "-b-c|")  // b at tick 3 of the diagram
    #expect(input.subscriptionLogs.map(\.marbles) == ["--^"])
  }

  @Test func aHotPublisherDropsAValueASubscriberDidNotAskFor() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.hotPublisher("a-b-c|", values: values)
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
    input.subscribe(recorder)
    scheduler.advance(by: .seconds(3))
    recorder.request(.max(5))
    scheduler.advance(by: .seconds(3))
    #expect(recorder.values == [1, 3])
    #expect(recorder.completion == .finished)
  }

  @Test func failuresAndWhatAPublisherCannotSay() throws {
    let scheduler = DispatchQueue.test
    let failing = try scheduler.coldPublisher("-a#", values: values, failure: Boom())
    let recording = scheduler.recordMarbles(failing)
    #expect(recording.marbles(values: values).description == "-a#")
    guard case .failure(let error) = recording.signals.last?.signal else {
      Issue.record("expected a failure")
      return
    }
    #expect(error == Boom())
    #expect(
      throws: MarbleSyntaxError(
        diagram: "-a#", position: 3, reason: "'#' in a publisher that cannot fail")
    ) { try scheduler.coldPublisher("-a#", values: values) }
    #expect(
      throws: MarbleSyntaxError(
        diagram: "-a-z", position: 4, reason: "no value for 'z' in `values`")
    ) { try scheduler.coldPublisher("-a-z", values: values) }
    #expect(
      throws: MarbleSyntaxError(
        diagram: "-^a", position: 2,
        reason: "'^' in a cold publisher (it starts at each subscription)")
    ) { try scheduler.coldPublisher("-^a", values: values) }
    #expect(throws: MarbleSyntaxError.self) { try scheduler.hotPublisher("-a!", values: values) }
  }

  @Test func aColdMarblePublisherKeepsTheRules() throws {
    let scheduler = DispatchQueue.test
    let checker = RuleChecker()
    let input = try scheduler.coldPublisher("abc(ab)-c|", values: values)
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1), demandPerValue: .none)
    input.checkingRules(checker).subscribe(recorder)
    for _ in 0..<6 {
      scheduler.advance(by: .seconds(2))
      recorder.request(.max(1))
    }
    scheduler.advance(by: .seconds(10))
    #expect(recorder.values == [1, 2, 3, 1, 2, 3])
    #expect(recorder.completion == .finished)
    #expect(checker.violations.isEmpty)
  }

  // MARK: Recording and checking

  @Test func recordingUsesTheTickAndDrawsUnknownValuesAsQuestionMarks() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.coldPublisher(
      "-a-b|", values: values, tick: .milliseconds(10))
    let recording = scheduler.recordMarbles(input.map { $0 * 10 }, tick: .milliseconds(10))
    #expect(recording.marbles(values: ["x": 10]).description == "-x-?|")
    // With a tick twice as long, two characters become one.
    let coarse = scheduler.recordMarbles(input, tick: .milliseconds(20))
    #expect(coarse.marbles(values: values).description == "ab|")
  }

  @Test func aMatchingCheck() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.coldPublisher("-a-b|", values: values)
    let check = try scheduler.checkMarbles(input, expected: "-a-b|", values: values)
    #expect(check.matches, "\(check)")
    #expect(check.firstDifference == nil)
  }

  @Test func aMismatchPrintsBothTimelinesAligned() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.coldPublisher("-a-(bc)|", values: values)
    let check = try scheduler.checkMarbles(input, expected: "-a-b--c|", values: values)
    #expect(!check.matches)
    #expect(check.firstDifference == 3)  // where the actual c came, three ticks early
    #expect(
      check.description == """
        Marbles differ at tick 3:
          expected  -a-b   --c|
          actual    -a-(bc)|
                       ^
        """)
  }

  @Test func aWrongValueAtTheRightTickIsADifference() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.coldPublisher("-a-b|", values: values)
    let check = try scheduler.checkMarbles(input.map { $0 + 40 }, expected: "-a-b|", values: values)
    #expect(!check.matches)
    #expect(check.firstDifference == 1)
    #expect(check.description.hasSuffix("  ? = 41, 42"))
  }

  @Test func anExpectedValueMissingFromTheDictionaryIsAnError() throws {
    let scheduler = DispatchQueue.test
    let input = try scheduler.coldPublisher("-a|", values: values)
    #expect(
      throws: MarbleSyntaxError(
        diagram: "-q|", position: 2, reason: "no value for 'q' in `values`")
    ) { try scheduler.checkMarbles(input, expected: "-q|", values: values) }
  }
}
