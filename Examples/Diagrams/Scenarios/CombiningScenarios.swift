import Foundation
import Sluice
import SluiceTesting

extension DiagramScenario {
  static let combining: [DiagramScenario] = [
    DiagramScenario(
      "merge", family: "Combining", covers: ["merge(with:)"], title: "first.merge(with: second)",
      caption: "Values as they come; finished when every input has finished."
    ) { lab in
      let first = try lab.letters("-a---c|", "first")
      let second = try lab.letters("--b-d---|", "second")
      lab.observe(first.merge(with: second))
    },
    DiagramScenario(
      "merge-three", family: "Combining", covers: ["merge(with:)", "merge"],
      title: "first.merge(with: second, third)",
      caption: "The forms with up to eight inputs, and Publishers.MergeMany, work the same way."
    ) { lab in
      let first = try lab.letters("-a----|", "first")
      let second = try lab.letters("--b-d|", "second")
      let third = try lab.letters("---c--e|", "third")
      lab.observe(first.merge(with: second, third))
    },
    DiagramScenario(
      "combineLatest", family: "Combining", covers: ["combineLatest(_:)"],
      title: "letters.combineLatest(digits)",
      caption: "Once each input has a value, every value comes out with the other's latest."
    ) { lab in
      let letters = try lab.letters("-a--b---|", "letters")
      let digits = try lab.numbers("--1---2|", "digits")
      lab.observe(letters.combineLatest(digits))
    },
    DiagramScenario(
      "combineLatest-three", family: "Combining", covers: ["combineLatest(_:)"],
      title: "a.combineLatest(b, c) { $0 + $1 + $2 }",
      caption: "The forms with three and four inputs, with or without a closure."
    ) { lab in
      let a = try lab.letters("-a---d|", "a")
      let b = try lab.letters("--b----|", "b")
      let c = try lab.letters("---c-e|", "c")
      lab.observe(a.combineLatest(b, c) { $0 + $1 + $2 })
    },
    DiagramScenario(
      "zip", family: "Combining", covers: ["zip(_:)"], title: "letters.zip(digits)",
      caption: "Pairs in order: the n-th value of each input; done when an input has finished and "
        + "nothing of it waits."
    ) { lab in
      let letters = try lab.letters("-a--b|", "letters")
      let digits = try lab.numbers("--1-2-3|", "digits")
      lab.observe(letters.zip(digits))
    },
    DiagramScenario(
      "zip-three", family: "Combining", covers: ["zip(_:)"],
      title: "a.zip(b, c) { $0 + $1 + $2 }",
      caption: "The forms with three and four inputs, with or without a closure."
    ) { lab in
      let a = try lab.letters("-a-d|", "a")
      let b = try lab.letters("--b--e|", "b")
      let c = try lab.letters("c-----f|", "c")
      lab.observe(a.zip(b, c) { $0 + $1 + $2 })
    },
    DiagramScenario(
      "flatMap", family: "Combining", covers: ["flatMap"],
      title: "outer.flatMap { inner($0) }",
      caption: "Each value becomes a publisher, subscribed at once; their values are merged. "
        + "Each inner publisher plays from the tick it is subscribed at."
    ) { lab in
      let outer = try lab.letters("-a--b|", "outer")
      let innerA = try lab.numbers("-1-2|", "inner(a)")
      let innerB = try lab.numbers("-3-4|", "inner(b)")
      lab.observe(outer.flatMap { $0 == "a" ? innerA : innerB })
    },
    DiagramScenario(
      "flatMap-maxPublishers", family: "Combining", covers: ["flatMap"],
      title: "outer.flatMap(maxPublishers: .max(1)) { inner($0) }",
      caption: "At most one inner publisher at a time: the outer is asked for the next value "
        + "when the current inner one finishes."
    ) { lab in
      let outer = try lab.letters("-ab|", "outer")
      let innerA = try lab.numbers("-1-2|", "inner(a)")
      let innerB = try lab.numbers("-3|", "inner(b)")
      lab.observe(outer.flatMap(maxPublishers: .max(1)) { $0 == "a" ? innerA : innerB })
    },
    DiagramScenario(
      "switchToLatest", family: "Combining", covers: ["switchToLatest"],
      title: "outer.map { inner($0) }.switchToLatest()",
      caption: "Only the latest inner publisher is listened to: the previous one is cancelled "
        + "when the next arrives."
    ) { lab in
      let outer = try lab.letters("-a---b|", "outer")
      let innerA = try lab.numbers("-1-2-3|", "inner(a)")
      let innerB = try lab.numbers("-4|", "inner(b)")
      lab.observe(outer.map { $0 == "a" ? innerA : innerB }.switchToLatest())
    },
  ]

  static let errors: [DiagramScenario] = [
    DiagramScenario(
      "catch", family: "Handling errors", covers: ["catch(_:)"],
      title: "input.catch { _ in fallback }",
      caption: "On a failure, the output goes on with the publisher the closure returns."
    ) { lab in
      let input = try lab.failing("-1-2#", values: Lab.digits)
      let fallback = try lab.numbers("-8-9|", "fallback")
      lab.observe(input.catch { _ in fallback })
    },
    DiagramScenario(
      "tryCatch", family: "Handling errors", covers: ["tryCatch(_:)"],
      title: "input.tryCatch { _ in fallback }",
      caption: "As catch, but the closure may throw, which fails the output."
    ) { lab in
      let input = try lab.failing("-1-2#", values: Lab.digits)
      let fallback = try lab.numbers("-8|", "fallback")
      lab.observe(input.tryCatch { _ in fallback })
    },
    DiagramScenario(
      "retry", family: "Handling errors", covers: ["retry(_:)"], title: "input.retry(1)",
      caption: "A failure subscribes again, up to the given number of times; then it passes on."
    ) { lab in
      lab.observe(try lab.failing("-1-2#", values: Lab.digits).retry(1))
    },
    numbers(
      "assertNoFailure", family: "Handling errors", covers: ["assertNoFailure"],
      title: "assertNoFailure()", input: "-1-2|",
      caption: "Values and completion pass unchanged; a failure would stop the program with its "
        + "message."
    ) { input, _ in input.setFailureType(to: Boom.self).assertNoFailure() },
  ]

  static let time: [DiagramScenario] = [
    letters(
      "debounce", family: "Controlling timing", covers: ["debounce(for:)"],
      title: "debounce(for: .seconds(2), scheduler: scheduler)", input: "-a--b-c------d-|",
      caption: "A value once the input has been quiet for 2 seconds. As in Combine, the "
        + "completion drops the value still waiting (d)."
    ) { input, lab in input.debounce(for: .seconds(2), scheduler: lab.scheduler) },
    letters(
      "throttle", family: "Controlling timing", covers: ["throttle(for:)"],
      title: "throttle(for: .seconds(3), scheduler: scheduler, latest: false)",
      input: "ab-c-d---x|", caption: "The first value of each 3 seconds."
    ) { input, lab in input.throttle(for: .seconds(3), scheduler: lab.scheduler, latest: false) },
    letters(
      "throttle-latest", family: "Controlling timing", covers: ["throttle(for:)"],
      title: "throttle(for: .seconds(3), scheduler: scheduler, latest: true)",
      input: "ab-c-d---x|", caption: "The latest value of each 3 seconds."
    ) { input, lab in input.throttle(for: .seconds(3), scheduler: lab.scheduler, latest: true) },
    letters(
      "delay", family: "Controlling timing", covers: ["delay(for:)"],
      title: "delay(for: .seconds(2), scheduler: scheduler)", input: "-a-b|"
    ) { input, lab in input.delay(for: .seconds(2), scheduler: lab.scheduler) },
    letters(
      "timeout", family: "Controlling timing", covers: ["timeout(_:)"],
      title: "timeout(.seconds(3), scheduler: scheduler)", input: "-a-b-----c|",
      caption: "Finishes (or fails with customError) when the input is silent for 3 seconds."
    ) { input, lab in input.timeout(.seconds(3), scheduler: lab.scheduler) },
    DiagramScenario(
      "measureInterval", family: "Controlling timing", covers: ["measureInterval(using:)"],
      title: "measureInterval(using: scheduler)",
      caption: "Each value becomes the time since the previous one (or since the subscription)."
    ) { lab in
      let input = try lab.letters("-a--b-c|")
      lab.observe(input.measureInterval(using: lab.scheduler)) {
        "\($0.magnitude / 1_000_000_000)s"
      }
    },
    letters(
      "receive-on", family: "Controlling timing", covers: ["receive(on:)"],
      title: "receive(on: scheduler)", input: "-a-b|",
      caption: "Each signal is delivered from the scheduler: on a test scheduler, at the same "
        + "instant, after what was scheduled before it."
    ) { input, lab in input.receive(on: lab.scheduler) },
    letters(
      "subscribe-on", family: "Controlling timing", covers: ["subscribe(on:)"],
      title: "subscribe(on: scheduler)", input: "-a-b|",
      caption: "The subscription, requests and cancel reach the upstream from the scheduler."
    ) { input, lab in input.subscribe(on: lab.scheduler) },
  ]

  static let buffering: [DiagramScenario] = [
    DiagramScenario(
      "buffer", family: "Buffering", covers: ["buffer(size:)"],
      title: "buffer(size: 2, prefetch: .keepFull, whenFull: .dropNewest)",
      caption: "keepFull asks the input for 2 at once and for one more each time it hands a "
        + "value on; the subscriber asks for 1 at ticks 0 and 6 and for 2 at tick 10. The "
        + "cold input's values wait in it until the buffer asks.", ticks: 13
    ) { lab in
      let input = try lab.letters("-a-b-c-d-e|")
      lab.observe(
        input.buffer(size: 2, prefetch: .keepFull, whenFull: .dropNewest), demand: .max(1),
        requests: [(6, .max(1)), (10, .max(2))])
    },
    DiagramScenario(
      "buffer-byRequest", family: "Buffering", covers: ["buffer(size:)"],
      title: "buffer(size: 2, prefetch: .byRequest, whenFull: .dropOldest)",
      caption: "byRequest asks the input for unlimited values at the first request; the buffer "
        + "keeps the 2 newest values the subscriber has not asked for yet (b is dropped when d "
        + "comes). The finish waits for demand, as in Combine.", ticks: 11
    ) { lab in
      let input = try lab.hot("-a-b-c-d-e|", values: Lab.letters)
      lab.observe(
        input.buffer(size: 2, prefetch: .byRequest, whenFull: .dropOldest), demand: .max(1),
        requests: [(8, .max(3))])
    },
  ]
}
