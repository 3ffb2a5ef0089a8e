import Foundation
import Sluice
import SluiceTesting

extension DiagramScenario {
  static let mapping: [DiagramScenario] = [
    numbers(
      "map", family: "Mapping", covers: ["map(_:)"], title: "map { $0 * 10 }", input: "-1-2--3|"
    ) {
      input, _ in input.map { $0 * 10 }
    },
    DiagramScenario(
      "map-keypath", family: "Mapping", covers: ["map(_:)"], title: "map(\\.count)",
      caption: "The key-path forms read one, two or three properties of each value."
    ) { lab in
      let words = try lab.cold("-a--b-c|", values: ["a": "one", "b": "three", "c": "four"])
      lab.observe(words.map(\.count))
    },
    numbers(
      "tryMap", family: "Mapping", covers: ["tryMap(_:)"],
      title: "tryMap { 12 / $0 }  // throws on 0", input: "-1-2-0-3|",
      caption: "An error thrown by the closure cancels the upstream and fails the output."
    ) { input, _ in
      input.tryMap { try orThrow(12 / max($0, 1), if: $0 == 0) }
    },
    numbers("scan", family: "Mapping", covers: ["scan(_:)"], title: "scan(0, +)", input: "-1-2--3|")
    {
      input, _ in input.scan(0, +)
    },
    numbers(
      "tryScan", family: "Mapping", covers: ["tryScan(_:)"],
      title: "tryScan(0) { sum, n in n == 0 ? throw : sum + n }", input: "-1-2-0-3|"
    ) { input, _ in
      input.tryScan(0) { sum, next in try orThrow(sum + next, if: next == 0) }
    },
    numbers(
      "compactMap", family: "Mapping", covers: ["compactMap(_:)"],
      title: "compactMap { $0 % 2 == 0 ? $0 * 10 : nil }", input: "-1-2-3-4|",
      caption: "Each nil asks the upstream for one more value."
    ) { input, _ in
      input.compactMap { $0 % 2 == 0 ? $0 * 10 : nil }
    },
    numbers(
      "tryCompactMap", family: "Mapping", covers: ["tryCompactMap(_:)"],
      title: "tryCompactMap { odd: nil, 0: throw, else $0 * 10 }", input: "-1-2-0-4|"
    ) { input, _ in
      input.tryCompactMap { try orThrow($0 % 2 == 0 ? $0 * 10 : nil, if: $0 == 0) }
    },
    DiagramScenario(
      "replaceNil", family: "Mapping", covers: ["replaceNil(with:)"],
      title: "replaceNil(with: 0)"
    ) { lab in
      let input = try lab.cold("-a-n-b|", values: ["a": Int?.some(1), "n": nil, "b": 2])
      lab.observe(input.replaceNil(with: 0))
    },
    DiagramScenario(
      "setFailureType", family: "Mapping", covers: ["setFailureType(to:)"],
      title: "setFailureType(to: Boom.self)",
      caption: "Values and completion pass unchanged; only the type says it may fail."
    ) { lab in
      lab.observe(try lab.letters("-a-b|").setFailureType(to: Boom.self))
    },
    failingNumbers(
      "mapError", family: "Mapping", covers: ["mapError(_:)"],
      title: "mapError { _ in URLError(.timedOut) }", input: "-1-2#"
    ) { input, _ in
      input.mapError { _ in URLError(.timedOut) }
    },
  ]

  static let filtering: [DiagramScenario] = [
    numbers(
      "filter", family: "Filtering", covers: ["filter(_:)"], title: "filter { $0 % 2 == 0 }",
      input: "-1-2-3-4|", caption: "Each rejected value asks the upstream for one more."
    ) { input, _ in input.filter { $0 % 2 == 0 } },
    numbers(
      "tryFilter", family: "Filtering", covers: ["tryFilter(_:)"],
      title: "tryFilter { $0 == 0 ? throw : $0 % 2 == 0 }", input: "-2-3-0-4|"
    ) { input, _ in
      input.tryFilter { try orThrow($0 % 2 == 0, if: $0 == 0) }
    },
    letters(
      "removeDuplicates", family: "Filtering", covers: ["removeDuplicates"],
      title: "removeDuplicates()", input: "-a-a-b-b-a|"
    ) { input, _ in input.removeDuplicates() },
    numbers(
      "removeDuplicates-by", family: "Filtering", covers: ["removeDuplicates(by:)"],
      title: "removeDuplicates { abs($0 - $1) < 2 }", input: "-1-2-5-6-1|"
    ) { input, _ in input.removeDuplicates { abs($0 - $1) < 2 } },
    numbers(
      "tryRemoveDuplicates", family: "Filtering", covers: ["tryRemoveDuplicates(by:)"],
      title: "tryRemoveDuplicates { $1 == 0 ? throw : $0 == $1 }", input: "-1-1-2-0-3|"
    ) { input, _ in
      input.tryRemoveDuplicates { try orThrow($0 == $1, if: $1 == 0) }
    },
    letters(
      "replaceEmpty", family: "Filtering", covers: ["replaceEmpty(with:)"],
      title: "replaceEmpty(with: \"z\")", input: "---|",
      caption: "An upstream that finishes without a value is given one; other upstreams pass."
    ) { input, _ in input.replaceEmpty(with: "z") },
    failingNumbers(
      "replaceError", family: "Filtering", covers: ["replaceError(with:)"],
      title: "replaceError(with: 0)", input: "-1-2-#"
    ) { input, _ in input.replaceError(with: 0) },
    letters(
      "ignoreOutput", family: "Filtering", covers: ["ignoreOutput"], title: "ignoreOutput()",
      input: "-a-b-c|"
    ) { input, _ in input.ignoreOutput() },
  ]

  static let reducing: [DiagramScenario] = [
    letters(
      "collect", family: "Reducing", covers: ["collect"], title: "collect()", input: "-a-b-c|"
    ) { input, _ in input.collect() },
    letters(
      "collect-count", family: "Reducing", covers: ["collect(_:)"], title: "collect(2)",
      input: "-a-b-c-d-e|", caption: "The last, shorter group is sent when the upstream finishes."
    ) { input, _ in input.collect(2) },
    letters(
      "collect-byTime", family: "Reducing", covers: ["collect(_:)"],
      title: "collect(.byTime(scheduler, .seconds(3)))", input: "-ab--c----d|"
    ) { input, lab in input.collect(.byTime(lab.scheduler, .seconds(3))) },
    letters(
      "collect-byTimeOrCount", family: "Reducing", covers: ["collect(_:)"],
      title: "collect(.byTimeOrCount(scheduler, .seconds(3), 2))", input: "-abc----d|"
    ) { input, lab in input.collect(.byTimeOrCount(lab.scheduler, .seconds(3), 2)) },
    numbers(
      "reduce", family: "Reducing", covers: ["reduce(_:)"], title: "reduce(0, +)",
      input: "-1-2-3|"
    ) { input, _ in input.reduce(0, +) },
    numbers(
      "tryReduce", family: "Reducing", covers: ["tryReduce(_:)"],
      title: "tryReduce(0) { sum, n in n == 0 ? throw : sum + n }", input: "-1-2-0-3|"
    ) { input, _ in
      input.tryReduce(0) { sum, next in try orThrow(sum + next, if: next == 0) }
    },
    letters("count", family: "Reducing", covers: ["count"], title: "count()", input: "-a-b-c|") {
      input, _ in input.count()
    },
  ]

  static let mathematics: [DiagramScenario] = [
    numbers("max", family: "Mathematics", covers: ["max"], title: "max()", input: "-3-7-2|") {
      input, _ in input.max()
    },
    numbers(
      "max-by", family: "Mathematics", covers: ["max(by:)"], title: "max { $0 % 5 < $1 % 5 }",
      input: "-3-7-9|"
    ) { input, _ in input.max { $0 % 5 < $1 % 5 } },
    numbers(
      "tryMax", family: "Mathematics", covers: ["tryMax(by:)"],
      title: "tryMax { $1 == 0 ? throw : $0 < $1 }", input: "-3-7-0-9|"
    ) { input, _ in input.tryMax { try orThrow($0 < $1, if: $1 == 0) } },
    numbers("min", family: "Mathematics", covers: ["min"], title: "min()", input: "-3-7-2|") {
      input, _ in input.min()
    },
    numbers(
      "min-by", family: "Mathematics", covers: ["min(by:)"], title: "min { $0 % 5 < $1 % 5 }",
      input: "-3-7-9|"
    ) { input, _ in input.min { $0 % 5 < $1 % 5 } },
    numbers(
      "tryMin", family: "Mathematics", covers: ["tryMin(by:)"],
      title: "tryMin { $1 == 0 ? throw : $0 < $1 }", input: "-3-7-0-9|"
    ) { input, _ in input.tryMin { try orThrow($0 < $1, if: $1 == 0) } },
  ]

  static let matching: [DiagramScenario] = [
    letters(
      "contains", family: "Matching", covers: ["contains(_:)"], title: "contains(\"b\")",
      input: "-a-b-c|", caption: "The first match ends it: the upstream is cancelled."
    ) { input, _ in input.contains("b") },
    numbers(
      "contains-where", family: "Matching", covers: ["contains(where:)"],
      title: "contains { $0 > 5 }", input: "-3-7-9|"
    ) { input, _ in input.contains { $0 > 5 } },
    numbers(
      "tryContains", family: "Matching", covers: ["tryContains(where:)"],
      title: "tryContains { $0 == 0 ? throw : $0 > 5 }", input: "-3-0-9|"
    ) { input, _ in input.tryContains { try orThrow($0 > 5, if: $0 == 0) } },
    numbers(
      "allSatisfy", family: "Matching", covers: ["allSatisfy(_:)"], title: "allSatisfy { $0 < 5 }",
      input: "-1-3-7-2|", caption: "The first value that fails the test ends it with false."
    ) { input, _ in input.allSatisfy { $0 < 5 } },
    numbers(
      "tryAllSatisfy", family: "Matching", covers: ["tryAllSatisfy(_:)"],
      title: "tryAllSatisfy { $0 == 0 ? throw : $0 < 5 }", input: "-1-3-0-2|"
    ) { input, _ in input.tryAllSatisfy { try orThrow($0 < 5, if: $0 == 0) } },
  ]

  static let sequence: [DiagramScenario] = [
    letters(
      "first", family: "Picking by position", covers: ["first"], title: "first()", input: "-a-b-c|"
    ) {
      input, _ in input.first()
    },
    numbers(
      "first-where", family: "Picking by position", covers: ["first(where:)"],
      title: "first { $0 > 5 }", input: "-3-7-9|"
    ) { input, _ in input.first { $0 > 5 } },
    numbers(
      "tryFirst", family: "Picking by position", covers: ["tryFirst(where:)"],
      title: "tryFirst { $0 == 0 ? throw : $0 > 5 }", input: "-3-0-9|"
    ) { input, _ in input.tryFirst { try orThrow($0 > 5, if: $0 == 0) } },
    letters(
      "last", family: "Picking by position", covers: ["last"], title: "last()", input: "-a-b-c|"
    ) {
      input, _ in input.last()
    },
    numbers(
      "last-where", family: "Picking by position", covers: ["last(where:)"],
      title: "last { $0 > 5 }", input: "-7-9-3|"
    ) { input, _ in input.last { $0 > 5 } },
    numbers(
      "tryLast", family: "Picking by position", covers: ["tryLast(where:)"],
      title: "tryLast { $0 == 0 ? throw : $0 > 5 }", input: "-7-9-0-3|"
    ) { input, _ in input.tryLast { try orThrow($0 > 5, if: $0 == 0) } },
    letters(
      "dropFirst", family: "Picking by position", covers: ["dropFirst"], title: "dropFirst(2)",
      input: "-a-b-c-d|"
    ) { input, _ in input.dropFirst(2) },
    numbers(
      "drop-while", family: "Picking by position", covers: ["drop(while:)"],
      title: "drop { $0 < 5 }", input: "-1-3-7-2|"
    ) { input, _ in input.drop { $0 < 5 } },
    numbers(
      "tryDrop", family: "Picking by position", covers: ["tryDrop(while:)"],
      title: "tryDrop { $0 == 0 ? throw : $0 < 5 }", input: "-1-0-7|"
    ) { input, _ in input.tryDrop { try orThrow($0 < 5, if: $0 == 0) } },
    DiagramScenario(
      "drop-untilOutputFrom", family: "Picking by position", covers: ["drop(untilOutputFrom:)"],
      title: "drop(untilOutputFrom: trigger)"
    ) { lab in
      let input = try lab.letters("-a-b-c-d|")
      let trigger = try lab.letters("---x|", "trigger")
      lab.observe(input.drop(untilOutputFrom: trigger))
    },
    letters(
      "prefix", family: "Picking by position", covers: ["prefix(_:)"], title: "prefix(2)",
      input: "-a-b-c|"
    ) { input, _ in input.prefix(2) },
    numbers(
      "prefix-while", family: "Picking by position", covers: ["prefix(while:)"],
      title: "prefix { $0 < 5 }", input: "-1-3-7-2|"
    ) { input, _ in input.prefix { $0 < 5 } },
    numbers(
      "tryPrefix", family: "Picking by position", covers: ["tryPrefix(while:)"],
      title: "tryPrefix { $0 == 0 ? throw : $0 < 5 }", input: "-1-0-3|"
    ) { input, _ in input.tryPrefix { try orThrow($0 < 5, if: $0 == 0) } },
    DiagramScenario(
      "prefix-untilOutputFrom", family: "Picking by position", covers: ["prefix(untilOutputFrom:)"],
      title: "prefix(untilOutputFrom: trigger)"
    ) { lab in
      let input = try lab.letters("-a-b-c-d|")
      let trigger = try lab.letters("----x|", "trigger")
      lab.observe(input.prefix(untilOutputFrom: trigger))
    },
    letters(
      "output-at", family: "Picking by position", covers: ["output(at:)"], title: "output(at: 1)",
      input: "-a-b-c|"
    ) { input, _ in input.output(at: 1) },
    letters(
      "output-in", family: "Picking by position", covers: ["output(in:)"],
      title: "output(in: 1...2)", input: "-a-b-c-d|"
    ) { input, _ in input.output(in: 1...2) },
    DiagramScenario(
      "append", family: "Picking by position", covers: ["append(_:)"],
      title: "append(second)",
      caption: "The second publisher is subscribed when the first finishes. The forms that take "
        + "values append them as a sequence."
    ) { lab in
      let first = try lab.letters("-a-b|", "first")
      let second = try lab.letters("-x-y|", "second")
      lab.observe(first.append(second))
    },
    DiagramScenario(
      "prepend", family: "Picking by position", covers: ["prepend(_:)"],
      title: "prepend(\"x\", \"y\")"
    ) { lab in
      lab.observe(try lab.letters("--a-b|").prepend("x", "y"))
    },
  ]
}
