import Foundation
import Observation
import Sluice
import SluiceTesting

/// An async sequence whose elements come after the given numbers of ticks of a lab's clock.
struct TickSequence: AsyncSequence, Sendable {
  typealias Element = String
  let lab: Lab
  let elements: [(wait: Int, value: String)]
  let produced: Lab.Manual

  struct AsyncIterator: AsyncIteratorProtocol {
    let sequence: TickSequence
    var index = 0

    mutating func next() async -> String? {
      guard index < sequence.elements.count else {
        sequence.produced.record(.finished)
        return nil
      }
      let element = sequence.elements[index]
      index += 1
      await sequence.lab.sleep(element.wait)
      sequence.produced.value(element.value)
      return element.value
    }
  }

  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(sequence: self) }
}

/// The model of the `ObservationPublisher` diagram.
@Observable final class Dial: @unchecked Sendable {
  // Safety: set by the generator's thread between ticks, read by the observation's task, which
  // the step executor runs on that same thread.
  var level = 0
}

/// The actor of the `sink(isolatedTo:)` diagram.
actor Board {
  var values: [String] = []
  func add(_ value: String) { values.append(value) }
}

extension DiagramScenario {
  /// An `async` loop over a bridge: `body` iterates and records into `loop`.
  static func loop(
    _ name: String, covers: [String], title: String, input: String, caption: String,
    _ body: @escaping @Sendable (MarblePublisher<String, Never>, Lab, Lab.Manual) async -> Void
  ) -> DiagramScenario {
    DiagramScenario(
      name, .async, family: "Bridges to async/await", covers: covers, title: title,
      caption: caption, async: true
    ) { lab in
      let publisher = try lab.letters(input)
      let loop = lab.outputRow("for await")
      Task.detached { await body(publisher, lab, loop) }
    }
  }

  /// A value awaited from a task: `body` returns what the call returned.
  static func awaited(
    _ name: String, covers: [String], title: String, input: String, caption: String,
    _ body: @escaping @Sendable (MarblePublisher<String, Never>) async throws -> Any
  ) -> DiagramScenario {
    DiagramScenario(
      name, .async, family: "Awaiting values", covers: covers, title: title, caption: caption,
      async: true
    ) { lab in
      let publisher = try lab.letters(input)
      let result = lab.outputRow("returns")
      Task.detached {
        do {
          result.value(try await body(publisher))
          result.record(.finished)
        } catch {
          result.record(.failed(String(describing: error)))
        }
      }
    }
  }

  static let asyncOperators: [DiagramScenario] = [
    DiagramScenario(
      "asyncMap", .async, family: "Async operators", covers: ["asyncMap"],
      title: "asyncMap { await work($0) }   // work takes 2 ticks",
      caption: "One transformation at a time (maxConcurrent: 1): the input is asked for the next "
        + "value when the result is delivered.", async: true
    ) { lab in
      let input = try lab.numbers("-1-2-3|")
      lab.observe(
        input.asyncMap { value in
          await lab.sleep(2)
          return value * 10
        })
    },
    DiagramScenario(
      "asyncMap-maxConcurrent", .async, family: "Async operators", covers: ["asyncMap"],
      title: "asyncMap(maxConcurrent: 2) { await work($0) }   // 1 takes 3 ticks, others 1",
      caption: "Up to two transformations run at once; results keep the input's order, so 20 "
        + "waits for 10.", async: true
    ) { lab in
      let input = try lab.numbers("-12-3|")
      lab.observe(
        input.asyncMap(maxConcurrent: 2) { value in
          await lab.sleep(value == 1 ? 3 : 1)
          return value * 10
        })
    },
    DiagramScenario(
      "tryAsyncMap", .async, family: "Async operators", covers: ["tryAsyncMap"],
      title: "tryAsyncMap { try await work($0) }   // throws on 0",
      caption: "A thrown error cancels the input and fails the output.", async: true
    ) { lab in
      let input = try lab.numbers("-1-0-3|")
      lab.observe(
        input.tryAsyncMap { (value: Int) async throws(Boom) -> Int in
          await lab.sleep(1)
          if value == 0 { throw Boom() }
          return value * 10
        })
    },
    DiagramScenario(
      "asyncFilter", .async, family: "Async operators", covers: ["asyncFilter"],
      title: "asyncFilter { await isEven($0) }   // takes 1 tick", async: true
    ) { lab in
      let input = try lab.numbers("-1-2-3-4|")
      lab.observe(
        input.asyncFilter { value in
          await lab.sleep(1)
          return value % 2 == 0
        })
    },
    DiagramScenario(
      "sink-isolatedTo", .async, family: "Async operators", covers: ["sink(isolatedTo:)"],
      title: "input.sink(isolatedTo: board) { board, value in board.add(value) }",
      caption: "Each value is handed to the actor in order; the input is asked ahead (prefetch) "
        + "so a busy actor does not lose values.", async: true, ticks: 6
    ) { lab in
      let board = Board()
      let seen = lab.outputRow("on board")
      let input = try lab.letters("-a-b-c|")
      lab.keep(
        input.sink(isolatedTo: board) { board, value in
          board.add(value)
          seen.value(value)
        })
    },
  ]

  static let bridges: [DiagramScenario] = [
    loop(
      "values", covers: ["values"],
      title: "for await value in input.values { await use(value) }   // use takes 2 ticks",
      input: "-a-b-c|",
      caption: "The loop's pace is the demand: one value is requested each time the loop asks "
        + "for the next (.demandOne); a value that comes before that waits in the input."
    ) { input, lab, loop in
      for await value in input.values {
        loop.value(value)
        await lab.sleep(2)
      }
      loop.record(.finished)
    },
    loop(
      "values-prefetch", covers: ["values(bufferingPolicy:)"],
      title: "for await value in input.values(bufferingPolicy: .prefetch(2)) { … }   // 2 ticks",
      input: "-abc-d|",
      caption: "Two values are requested ahead and kept; each one the loop takes is requested "
        + "again."
    ) { input, lab, loop in
      for await value in input.values(bufferingPolicy: .prefetch(2)) {
        loop.value(value)
        await lab.sleep(2)
      }
      loop.record(.finished)
    },
    loop(
      "stream", covers: ["stream"],
      title: "for await value in input.stream() { await use(value) }   // use takes 2 ticks",
      input: "-a-b-c|",
      caption: "An AsyncStream with the same demand as values (one value at a time unless a "
        + "buffering policy says otherwise)."
    ) { input, lab, loop in
      for await value in input.stream() {
        loop.value(value)
        await lab.sleep(2)
      }
      loop.record(.finished)
    },
    DiagramScenario(
      "asyncSequence-publisher", .async, family: "Bridges to async/await",
      covers: ["publisher", "publisher(priority:)", "AsyncSequencePublisher"],
      title: "sequence.publisher   // an AsyncSequence, its elements 1, 2, 1 ticks apart",
      caption: "A task pulls the sequence while there is demand (1 at tick 0, 1 more at tick "
        + "4); cancel() at tick 8 cancels the task.", async: true
    ) { lab in
      let produced = lab.inputRow("next()")
      let sequence = TickSequence(
        lab: lab, elements: [(1, "a"), (2, "b"), (1, "c")], produced: produced)
      lab.observe(sequence.publisher, demand: .max(1), requests: [(4, .max(1))], cancelAt: 8)
    },
    DiagramScenario(
      "observation", .async, family: "Bridges to async/await", covers: ["ObservationPublisher"],
      title: "ObservationPublisher { dial.level }   // @Observable final class Dial",
      caption: "The value at the first demand, then the value after each change of what the "
        + "closure reads; it never finishes (cancel() ends the observation).", async: true,
      ticks: 6
    ) { lab in
      guard #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) else {
        return
      }
      let dial = Dial()
      let sets = lab.inputRow("level =")
      lab.observe(ObservationPublisher { dial.level })
      for (tick, value) in [(2, 1), (4, 2)] {
        lab.at(tick) {
          sets.value(value)
          dial.level = value
        }
      }
    },
    DiagramScenario(
      "asyncFuture", .async, family: "Bridges to async/await", covers: ["AsyncFuture"],
      title: "AsyncFuture { await load() }   // load takes 2 ticks",
      caption: "The work starts in a task at the first demand (tick 1) and its result is the one "
        + "value.", async: true
    ) { lab in
      let future = AsyncFuture<String, Never> {
        await lab.sleep(2)
        return "a"
      }
      lab.observe(future, demand: .none, requests: [(1, .max(1))])
    },
    DiagramScenario(
      "asyncProducer", .async, family: "Bridges to async/await", covers: ["AsyncProducer"],
      title: "AsyncProducer { sender in for v in [\"a\", \"b\", \"c\"] { await sender.send(v) } }",
      caption: "send waits for demand: the subscriber asks for 1 at tick 0 and 2 more at tick 3.",
      async: true
    ) { lab in
      let producer = AsyncProducer<String, Never> { sender in
        for value in ["a", "b", "c"] { await sender.send(value) }
      }
      lab.observe(producer, demand: .max(1), requests: [(3, .max(2))])
    },
  ]

  static let awaiting: [DiagramScenario] = [
    awaited(
      "firstValue", covers: ["firstValue"], title: "try await input.firstValue()",
      input: "-a-b-c|", caption: "The first value; the input is cancelled once it has it."
    ) { try await $0.firstValue() },
    awaited(
      "lastValue", covers: ["lastValue"], title: "try await input.lastValue()",
      input: "-a-b-c|", caption: "The last value, when the input finishes."
    ) { try await $0.lastValue() },
    awaited(
      "singleValue", covers: ["singleValue"], title: "try await input.singleValue()",
      input: "-a-b|",
      caption: "Throws when the input sends a second value (or none); cancels the input."
    ) { try await $0.singleValue() },
    awaited(
      "allValues", covers: ["allValues"], title: "try await input.allValues()",
      input: "-a-b-c|", caption: "Every value, in order, when the input finishes."
    ) { try await $0.allValues() },
  ]
}
