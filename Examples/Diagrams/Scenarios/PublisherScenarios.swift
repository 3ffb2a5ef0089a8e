import Foundation
import Sluice
import SluiceTesting
import Synchronization

/// A model for the `@Published` and `ObservableObject` diagrams.
final class Thermostat: ObservableObject, @unchecked Sendable {
  // Safety: used from the generator's thread only.
  @Published var target = 20
}

/// A class whose property `assign` sets, drawing each assignment.
final class Label: @unchecked Sendable {
  // Safety: used from the generator's thread only.
  let row: Lab.Manual
  var text = "" { didSet { row.value(text) } }
  init(row: Lab.Manual) { self.row = row }
}

extension DiagramScenario {
  static let multicasting: [DiagramScenario] = [
    DiagramScenario(
      "share", family: "Multicasting", covers: ["share"], title: "input.share()",
      caption: "One subscription to the input for every subscriber; a late subscriber sees "
        + "only what comes after it subscribed."
    ) { lab in
      let shared = try lab.letters("-a-b-c|").share()
      lab.observe(shared, "subscriber 1")
      lab.observe(shared, "subscriber 2", at: 2)
    },
    DiagramScenario(
      "multicast", family: "Multicasting", covers: ["multicast(_:)"],
      title: "input.multicast { PassthroughSubject() }",
      caption: "Nothing flows until connect() (at tick 2); then every subscriber gets the "
        + "values through the subject."
    ) { lab in
      let multicast = try lab.letters("-a-b|").multicast { PassthroughSubject<String, Never>() }
      lab.observe(multicast, "subscriber 1")
      lab.observe(multicast, "subscriber 2", at: 1)
      lab.at(2) { lab.keep(multicast.connect()) }
    },
    DiagramScenario(
      "multicast-subject", family: "Multicasting", covers: ["multicast(subject:)"],
      title: "input.multicast(subject: CurrentValueSubject(\"z\"))",
      caption: "With a subject that holds a value, each subscriber gets it first; connect() at "
        + "tick 2."
    ) { lab in
      let multicast = try lab.letters("-a-b|").multicast(
        subject: CurrentValueSubject<String, Never>("z"))
      lab.observe(multicast, "subscriber 1")
      lab.observe(multicast, "subscriber 2", at: 1)
      lab.at(2) { lab.keep(multicast.connect()) }
    },
    DiagramScenario(
      "makeConnectable", family: "Multicasting", covers: ["makeConnectable"],
      title: "input.makeConnectable()",
      caption: "The input is subscribed when connect() is called (tick 2), not before."
    ) { lab in
      let connectable = try lab.letters("-a-b|").makeConnectable()
      lab.observe(connectable)
      lab.at(2) { lab.keep(connectable.connect()) }
    },
    DiagramScenario(
      "autoconnect", family: "Multicasting", covers: ["autoconnect"],
      title: "input.makeConnectable().autoconnect()",
      caption: "Connects on the first subscription; cancelling the last one disconnects."
    ) { lab in
      let connected = try lab.letters("-a-b-c-d|").makeConnectable().autoconnect()
      lab.observe(connected, "subscriber 1", cancelAt: 3)
      lab.observe(connected, "subscriber 2", at: 2, cancelAt: 6)
    },
  ]

  static let sideEffects: [DiagramScenario] = [
    DiagramScenario(
      "handleEvents", family: "Debugging and side effects", covers: ["handleEvents"],
      title: "handleEvents(receiveOutput: { log($0) })",
      caption: "Signals pass unchanged; the closures see each one (the log row) first."
    ) { lab in
      let log = lab.outputRow("log")
      let input = try lab.letters("-a-b|")
      lab.observe(
        input.handleEvents(
          receiveOutput: { log.value("log \($0)") },
          receiveCompletion: { _ in log.record(.finished) }))
    },
    letters(
      "print", family: "Debugging and side effects", covers: ["print"],
      title: "print(\"input\")", input: "-a-b|",
      caption: "Signals pass unchanged; each is written to the standard output (or a stream), "
        + "\"input: receive value: (a)\"."
    ) { input, _ in input.print("input", to: Discard()) },
    letters(
      "breakpoint", family: "Debugging and side effects", covers: ["breakpoint"],
      title: "breakpoint(receiveOutput: { $0 == \"x\" })", input: "-a-b|",
      caption: "Signals pass unchanged; a closure that returns true stops in the debugger."
    ) { input, _ in input.breakpoint(receiveOutput: { $0 == "x" }) },
    letters(
      "breakpointOnError", family: "Debugging and side effects", covers: ["breakpointOnError"],
      title: "breakpointOnError()", input: "-a-b|",
      caption: "Signals pass unchanged; a failure would stop in the debugger."
    ) { input, _ in input.breakpointOnError() },
    numbers(
      "eraseToAnyPublisher", family: "Debugging and side effects",
      covers: ["eraseToAnyPublisher", "AnyPublisher"], title: "eraseToAnyPublisher()",
      input: "-1-2|", caption: "The same signals, behind the type AnyPublisher<Int, Never>."
    ) { input, _ in input.eraseToAnyPublisher() },
  ]

  static let coding: [DiagramScenario] = [
    numbers(
      "encode", family: "Encoding and decoding", covers: ["encode(encoder:)"],
      title: "encode(encoder: JSONEncoder())", input: "-1-2|",
      caption: "Each value becomes Data (drawn as its text in quotes); an encoding error fails "
        + "the output."
    ) { input, _ in input.encode(encoder: JSONEncoder()) },
    DiagramScenario(
      "decode", family: "Encoding and decoding", covers: ["decode(type:)"],
      title: "decode(type: Int.self, decoder: JSONDecoder())",
      caption: "Each Data (drawn as its text in quotes) decoded; data that does not decode fails "
        + "the output with the decoder's error."
    ) { lab in
      let input = try lab.cold(
        "-a-b-c|", values: ["a": Data("1".utf8), "b": Data("2".utf8), "c": Data("x".utf8)])
      lab.observe(input.decode(type: Int.self, decoder: JSONDecoder()))
    },
  ]

  static let subscribing: [DiagramScenario] = [
    DiagramScenario(
      "sink", family: "Subscribing", covers: ["sink(receiveCompletion:)", "sink(receiveValue:)"],
      title: "input.sink(receiveCompletion: …, receiveValue: …)",
      caption: "Asks for unlimited values when it subscribes; calls the closures for each signal."
    ) { lab in
      let seen = lab.outputRow("closures")
      let input = try lab.letters("-a-b|")
      lab.keep(
        input.sink(receiveCompletion: { _ in seen.record(.finished) }, receiveValue: seen.value))
    },
    DiagramScenario(
      "assign", family: "Subscribing", covers: ["assign(to:)"],
      title: "input.assign(to: \\.text, on: label)",
      caption: "Sets the property to each value; the form with a @Published property's "
        + "publisher (assign(to: &$text)) works the same way and ends with the object.",
      ticks: 5
    ) { lab in
      let label = Label(row: lab.outputRow("label.text"))
      lab.keep(try lab.letters("-a-b|").assign(to: \.text, on: label))
    },
    DiagramScenario(
      "subscribe", family: "Subscribing", covers: ["subscribe(_:)"],
      title: "input.subscribe(subject)",
      caption: "subscribe(_:) attaches any subscriber; given a subject, the subject sends on "
        + "what the input sends."
    ) { lab in
      let subject = PassthroughSubject<String, Never>()
      lab.observe(subject, "subject's subscriber")
      lab.keep(try lab.letters("-a-b|").subscribe(subject))
    },
  ]

  static let publishers: [DiagramScenario] = [
    DiagramScenario(
      "just", family: "Publishers", covers: ["Just"], title: "Just(\"a\")",
      caption: "One value when there is demand (here requested at tick 2), then finished."
    ) { lab in
      lab.observe(Just("a"), demand: .none, requests: [(2, .max(1))])
    },
    DiagramScenario(
      "empty", family: "Publishers", covers: ["Empty"], title: "Empty<Int, Never>()"
    ) { lab in
      lab.observe(Empty<Int, Never>())
    },
    DiagramScenario(
      "fail", family: "Publishers", covers: ["Fail"], title: "Fail<Int, Boom>(error: Boom())"
    ) { lab in
      lab.observe(Fail<Int, Boom>(error: Boom()))
    },
    DiagramScenario(
      "future", family: "Publishers", covers: ["Future"],
      title: "Future { promise in … promise(.success(\"a\")) }",
      caption: "The closure runs once, at creation; its promise is fulfilled at tick 2. A later "
        + "subscriber gets the result at once."
    ) { lab in
      let future = Future<String, Never> { promise in lab.at(2) { promise(.success("a")) } }
      lab.observe(future, "subscriber 1")
      lab.observe(future, "subscriber 2", at: 4)
    },
    DiagramScenario(
      "deferred", family: "Publishers", covers: ["Deferred"],
      title: "Deferred { makeInput() }",
      caption: "The closure runs for each subscriber, when it subscribes."
    ) { lab in
      let made = Mutex(0)
      let deferred = Deferred {
        let count = made.withLock { count in
          count += 1
          return count
        }
        return try! lab.letters("-a-b|", "made for \(count)")
      }
      lab.observe(deferred, "subscriber 1")
      lab.observe(deferred, "subscriber 2", at: 2)
    },
    DiagramScenario(
      "record", family: "Publishers", covers: ["Record"],
      title: "Record(output: [\"a\", \"b\", \"c\"], completion: .finished)",
      caption: "Plays what it recorded as fast as demand allows: one value at tick 0, then one "
        + "per request."
    ) { lab in
      let record = Record<String, Never>(output: ["a", "b", "c"], completion: .finished)
      lab.observe(record, demand: .max(1), requests: [(2, .max(1)), (4, .max(1))])
    },
    DiagramScenario(
      "sequence-publisher", family: "Publishers", covers: ["publisher", "Sequence.publisher"],
      title: "[1, 2, 3].publisher",
      caption: "Each element as demand allows (1 at tick 0, 2 more at tick 3), then finished."
    ) { lab in
      lab.observe([1, 2, 3].publisher, demand: .max(1), requests: [(3, .max(2))])
    },
    DiagramScenario(
      "optional-publisher", family: "Publishers", covers: ["Optional.publisher"],
      title: "Optional(\"a\").publisher",
      caption: "The value, if any, when there is demand; then finished."
    ) { lab in
      lab.observe(Optional("a").publisher)
    },
    DiagramScenario(
      "result-publisher", family: "Publishers", covers: ["Result.publisher"],
      title: "Result<Int, Boom>.failure(Boom()).publisher",
      caption: "A success is one value and finished; a failure fails at once."
    ) { lab in
      lab.observe(Result<Int, Boom>.failure(Boom()).publisher)
    },
  ]

  static let subjects: [DiagramScenario] = [
    DiagramScenario(
      "passthroughSubject", family: "Subjects", covers: ["PassthroughSubject"],
      title: "PassthroughSubject<String, Never>()",
      caption: "What is sent reaches the subscribers there at the time (and with demand)."
    ) { lab in
      let subject = PassthroughSubject<String, Never>()
      let sent = lab.inputRow("send")
      lab.observe(subject, "subscriber 1")
      lab.observe(subject, "subscriber 2", at: 2)
      for (tick, value) in [(1, "a"), (3, "b"), (5, "c")] {
        lab.at(tick) {
          sent.value(value)
          subject.send(value)
        }
      }
      lab.at(6) {
        sent.record(.finished)
        subject.send(completion: .finished)
      }
    },
    DiagramScenario(
      "currentValueSubject", family: "Subjects", covers: ["CurrentValueSubject"],
      title: "CurrentValueSubject<String, Never>(\"a\")",
      caption: "A subscriber gets the current value first, then what is sent."
    ) { lab in
      let subject = CurrentValueSubject<String, Never>("a")
      let sent = lab.inputRow("send")
      lab.observe(subject, "subscriber 1")
      lab.observe(subject, "subscriber 2", at: 3)
      for (tick, value) in [(2, "b"), (4, "c")] {
        lab.at(tick) {
          sent.value(value)
          subject.send(value)
        }
      }
      lab.at(5) {
        sent.record(.finished)
        subject.send(completion: .finished)
      }
    },
    DiagramScenario(
      "published", family: "Subjects", covers: ["Published"],
      title: "thermostat.$target   // @Published var target = 20",
      caption: "The current value first, then each new value as it is set (before the property "
        + "changes).", ticks: 6
    ) { lab in
      let thermostat = Thermostat()
      let sets = lab.inputRow("target =")
      lab.observe(thermostat.$target)
      for (tick, value) in [(2, 21), (4, 19)] {
        lab.at(tick) {
          sets.value(value)
          thermostat.target = value
        }
      }
    },
    DiagramScenario(
      "objectWillChange", family: "Subjects", covers: ["ObservableObjectPublisher"],
      title: "thermostat.objectWillChange",
      caption: "A Void value before each change of a @Published property.", ticks: 5
    ) { lab in
      let thermostat = Thermostat()
      let sets = lab.inputRow("target =")
      lab.observe(thermostat.objectWillChange) { _ in "()" }
      for (tick, value) in [(1, 21), (3, 19)] {
        lab.at(tick) {
          sets.value(value)
          thermostat.target = value
        }
      }
    },
  ]
}

extension DiagramScenario {
  static let foundation: [DiagramScenario] = [
    DiagramScenario(
      "notificationCenter", family: "Foundation publishers", covers: ["publisher(for:)"],
      title: "center.publisher(for: .thermostatChanged)",
      caption: "Each notification posted with that name (and object, if given) while "
        + "subscribed; it never finishes.", ticks: 6
    ) { lab in
      let center = NotificationCenter()
      let name = Notification.Name("thermostatChanged")
      let posts = lab.inputRow("post")
      lab.observe(center.publisher(for: name)) { $0.userInfo?["target"].map(Lab.text) ?? "?" }
      for (tick, value) in [(1, 21), (2, 19), (4, 22)] {
        lab.at(tick) {
          posts.value(value)
          center.post(name: name, object: nil, userInfo: ["target": value])
        }
      }
    },
    DiagramScenario(
      "timer", family: "Foundation publishers", covers: ["publish(every:)"],
      title: "Timer.publish(every: 0.02, on: .current, in: .default).autoconnect().prefix(3)",
      caption: "Drawn from a real run on a run loop, each fire at the tick of its number (one "
        + "tick per interval); the values are the fire dates."
    ) { lab in
      let output = lab.outputRow("output")
      output.record(.subscribed, at: 0)
      output.record(.requested(.unlimited), at: 0)
      let fires = Mutex(0)
      let done = Mutex(false)
      let cancellable = Timer.publish(every: 0.02, on: .current, in: .default).autoconnect()
        .prefix(3)
        .sink(
          receiveCompletion: { _ in
            output.record(.finished, at: fires.withLock { $0 })
            done.withLock { $0 = true }
          },
          receiveValue: { _ in
            let number = fires.withLock { count in
              count += 1
              return count
            }
            output.record(.value("date"), at: number)
          })
      let deadline = Date().addingTimeInterval(30)
      while !done.withLock({ $0 }), Date() < deadline {
        _ = RunLoop.current.run(mode: .default, before: Date().addingTimeInterval(0.01))
      }
      cancellable.cancel()
    },
  ]
}

/// A text stream that keeps nothing: `print`'s lines would clutter the generator's output.
struct Discard: TextOutputStream {
  mutating func write(_ string: String) {}
}
