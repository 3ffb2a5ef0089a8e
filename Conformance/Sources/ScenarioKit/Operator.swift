/// The operators scenarios are built from: every one-upstream operator Sluice has that maps
/// `Int` to `Int` (or is made to, with a `map` that does not change its demand or timing), with
/// the parameter a generator picks. Try-operators throw `TestError(code: 100 + k)` on the value
/// `k`. `replaceEmpty` is left out: Sluice forwards demand on purpose where Combine requests
/// `.unlimited` (README, "Where Sluice differs from Combine, on purpose"). `subscribe(on:)` is
/// built but not generated: OpenCombine's SubscribeOn holds a non-recursive lock while it
/// requests from its upstream, so an upstream that delivers synchronously inside `request` (a
/// reducing operator, with `ImmediateScheduler`) makes OpenCombine abort with "Resource
/// deadlock avoided" (seed 27338 did: collect() → subscribe(on:) → retry(0)). OpenCombine 0.14
/// has no `merge` or `combineLatest`, and its `Zip` crashes (an unowned reference to a released
/// child subscriber) when an upstream finishes while it delivers (seed 6509: first → zip): the
/// tests cover them. `zipSequence` is built but not generated.
public enum Operator: Sendable, Hashable, CustomStringConvertible {
  case map, filter, compactMap, scan, removeDuplicates, ignoreOutput, handleEvents, breakpoint
  case mapError, first, last, collectAll, reduce, count, min, max
  case dropFirst(Int), prefix(Int), outputAt(Int), outputIn(Int, Int)
  case firstWhere(Int), lastWhere(Int), collect(Int), contains(Int), allSatisfy(Int)
  case prefixWhile(Int), dropWhile(Int)
  case tryMap(Int), tryFilter(Int), tryScan(Int), tryCompactMap(Int), tryRemoveDuplicates(Int)
  case tryPrefixWhile(Int), tryDropWhile(Int), tryFirstWhere(Int), tryLastWhere(Int)
  case tryMin(Int), tryMax(Int), tryContains(Int), tryAllSatisfy(Int), tryReduce(Int)
  case catchJust, tryCatchJust, replaceError, retry(Int)
  case receiveOnImmediate, subscribeOnImmediate, debounceImmediate, delayImmediate
  case switchToLatestJust
  case flatMapJust(Int), flatMapSequence(Int)
  case appendValues, prependValues, appendJust, zipSequence
  case dropUntilJust, prefixUntilNever, share, measureIntervalImmediate
  case throttleImmediate(latest: Bool)
  case buffer(size: Int, keepFull: Bool, whenFull: Int)
  case print
  // On the driver's virtual-time scheduler (ticks; `Step.advance` moves time).
  case debounceVirtual(Int), throttleVirtual(Int, latest: Bool), delayVirtual(Int)
  case timeoutVirtual(Int)
  case measureIntervalVirtual

  public var description: String {
    switch self {
    case .map: "map"
    case .filter: "filter"
    case .compactMap: "compactMap"
    case .scan: "scan"
    case .removeDuplicates: "removeDuplicates"
    case .ignoreOutput: "ignoreOutput"
    case .handleEvents: "handleEvents"
    case .breakpoint: "breakpoint"
    case .mapError: "mapError"
    case .first: "first"
    case .last: "last"
    case .collectAll: "collect()"
    case .reduce: "reduce"
    case .count: "count"
    case .min: "min"
    case .max: "max"
    case .dropFirst(let k): "dropFirst(\(k))"
    case .prefix(let k): "prefix(\(k))"
    case .outputAt(let k): "output(at: \(k))"
    case .outputIn(let a, let b): "output(in: \(a)..<\(b))"
    case .firstWhere(let k): "first(where: > \(k))"
    case .lastWhere(let k): "last(where: > \(k))"
    case .collect(let k): "collect(\(k))"
    case .contains(let k): "contains(\(k))"
    case .allSatisfy(let k): "allSatisfy(< \(k))"
    case .prefixWhile(let k): "prefix(while: != \(k))"
    case .dropWhile(let k): "drop(while: != \(k))"
    case .tryMap(let k): "tryMap(throws on \(k))"
    case .tryFilter(let k): "tryFilter(throws on \(k))"
    case .tryScan(let k): "tryScan(throws on \(k))"
    case .tryCompactMap(let k): "tryCompactMap(throws on \(k))"
    case .tryRemoveDuplicates(let k): "tryRemoveDuplicates(throws on \(k))"
    case .tryPrefixWhile(let k): "tryPrefix(while:, throws on \(k))"
    case .tryDropWhile(let k): "tryDrop(while:, throws on \(k))"
    case .tryFirstWhere(let k): "tryFirst(where:, throws on \(k))"
    case .tryLastWhere(let k): "tryLast(where:, throws on \(k))"
    case .tryMin(let k): "tryMin(throws on \(k))"
    case .tryMax(let k): "tryMax(throws on \(k))"
    case .tryContains(let k): "tryContains(throws on \(k))"
    case .tryAllSatisfy(let k): "tryAllSatisfy(throws on \(k))"
    case .tryReduce(let k): "tryReduce(throws on \(k))"
    case .catchJust: "catch { Just(-1) }"
    case .tryCatchJust: "tryCatch { Just(-1) }"
    case .replaceError: "replaceError(with: -1)"
    case .retry(let k): "retry(\(k))"
    case .receiveOnImmediate: "receive(on: ImmediateScheduler)"
    case .subscribeOnImmediate: "subscribe(on: ImmediateScheduler)"
    case .debounceImmediate: "debounce(for: 0, scheduler: ImmediateScheduler)"
    case .delayImmediate: "delay(for: 0, scheduler: ImmediateScheduler)"
    case .switchToLatestJust: "map { Just($0) }.switchToLatest()"
    case .flatMapJust(let k):
      "flatMap(maxPublishers: \(k == 0 ? "unlimited" : "max(\(k))")) { Just }"
    case .flatMapSequence(let k):
      "flatMap(maxPublishers: \(k == 0 ? "unlimited" : "max(\(k))")) { [v, v + 100] }"
    case .appendValues: "append(-2, -3)"
    case .prependValues: "prepend(-4)"
    case .appendJust: "append(Just(-5))"
    case .zipSequence: "zip([0, 10, 20, 30, 40].publisher) { $0 + $1 }"
    case .dropUntilJust: "drop(untilOutputFrom: Just(0))"
    case .prefixUntilNever: "prefix(untilOutputFrom: Empty(completeImmediately: false))"
    case .share: "share()"
    case .measureIntervalImmediate: "measureInterval(using: ImmediateScheduler).map { _ in 7 }"
    case .throttleImmediate(let latest):
      "throttle(for: 0, scheduler: ImmediateScheduler, latest: \(latest))"
    case .buffer(let size, let keepFull, let whenFull):
      "buffer(size: \(size), prefetch: \(keepFull ? ".keepFull" : ".byRequest"), whenFull: "
        + "\(["dropNewest", "dropOldest", "customError(E50)"][whenFull]))"
    case .print: "print(\"p\", to: the log)"
    case .debounceVirtual(let k): "debounce(for: \(k), scheduler: virtual)"
    case .throttleVirtual(let k, let latest):
      "throttle(for: \(k), scheduler: virtual, latest: \(latest))"
    case .delayVirtual(let k): "delay(for: \(k), scheduler: virtual)"
    case .timeoutVirtual(let k): "timeout(\(k), scheduler: virtual)"
    case .measureIntervalVirtual: "measureInterval(using: virtual).map(ticks)"
    }
  }

  /// Every operator, with a parameter drawn from `random`.
  /// `extended`: also the virtual-time operators (kept apart so that the scenarios of the
  /// seeds before ``Scenario/firstExtendedSeed`` stay what they were).
  static func random(_ random: inout SplitMix64, extended: Bool) -> Operator {
    let k = random.next(upTo: 10)
    let small = random.next(upTo: 4)
    let all: [Operator] = [
      .map, .filter, .compactMap, .scan, .removeDuplicates, .ignoreOutput, .handleEvents,
      .breakpoint, .mapError, .first, .last, .collectAll, .reduce, .count, .min, .max,
      .dropFirst(small), .prefix(small), .outputAt(small), .outputIn(small, small + k % 4),
      .firstWhere(k), .lastWhere(k), .collect(1 + small), .contains(k), .allSatisfy(k),
      .prefixWhile(k), .dropWhile(k), .tryMap(k), .tryFilter(k), .tryScan(k),
      .tryCompactMap(k), .tryRemoveDuplicates(k), .tryPrefixWhile(k), .tryDropWhile(k),
      .tryFirstWhere(k), .tryLastWhere(k), .tryMin(k), .tryMax(k), .tryContains(k),
      .tryAllSatisfy(k), .tryReduce(k), .catchJust, .tryCatchJust, .replaceError,
      .retry(small), .receiveOnImmediate, .debounceImmediate, .delayImmediate,
      .switchToLatestJust, .flatMapJust(small), .flatMapSequence(small),
      .appendValues, .prependValues, .appendJust,
      .dropUntilJust, .prefixUntilNever, .share, .measureIntervalImmediate,
      .throttleImmediate(latest: k % 2 == 0),
      .buffer(size: 1 + small, keepFull: k % 2 == 0, whenFull: k % 3), .print,
    ]
    let timed: [Operator] = [
      .debounceVirtual(1 + small), .throttleVirtual(1 + small, latest: k % 2 == 0),
      .delayVirtual(small), .timeoutVirtual(2 + small), .measureIntervalVirtual,
    ]
    // Extended scenarios draw a time operator a third of the time.
    if extended, random.chance(33) { return timed[random.next(upTo: timed.count)] }
    return all[random.next(upTo: all.count)]
  }

  /// Whether the operator requests from its upstream from inside `receive(_:)`.
  var requestsReentrantly: Bool {
    switch self {
    case .retry, .flatMapJust, .flatMapSequence: true
    default: false
    }
  }
}

extension Operator {
  /// Whether OpenCombine's subscription for this operator describes itself by its type name.
  var hasNamelessOpenCombineSubscription: Bool {
    switch self {
    case .delayImmediate, .delayVirtual, .prefixUntilNever: true
    default: false
    }
  }

  /// Whether this is a buffer that fails when full.
  var failsWhenFull: Bool {
    if case .buffer(_, _, let whenFull) = self { whenFull == 2 } else { false }
  }

  /// Whether a misbehaving source crashes one of the implementations in this operator, so that
  /// the two cannot be compared: `catch` traps on a second completion (as Combine's does, README's
  /// misuse table); OpenCombine's `drop(untilOutputFrom:)` takes a value sent after the
  /// completion from demand it no longer has and traps ("demand cannot be negative", seed 27556).
  var crashesOnAMisbehavingSource: Bool {
    switch self {
    case .catchJust, .tryCatchJust, .dropUntilJust: true
    default: false
    }
  }

  /// Whether the operator lets a completion that comes before its upstream's subscription
  /// through without trapping: Sluice's operators that track their upstream trap there
  /// (README's misuse table: "a value or completion before receive(subscription:)"), which
  /// cannot be compared; the pass-through operators, `print`, `share()`, `prefix(untilOutputFrom:)`
  /// and `Concatenate` do not.
  var toleratesACompletionBeforeSubscription: Bool {
    switch self {
    case .map, .mapError, .handleEvents, .breakpoint, .print, .share, .prefixUntilNever,
      .appendValues, .prependValues, .appendJust:
      true
    default: false
    }
  }

  /// Whether the operator runs on the virtual-time scheduler.
  var usesVirtualTime: Bool {
    switch self {
    case .debounceVirtual, .throttleVirtual, .delayVirtual, .timeoutVirtual,
      .measureIntervalVirtual:
      true
    default: false
    }
  }

  /// Whether the operator delivers through a scheduler action (on ImmediateScheduler here).
  var hopsToScheduler: Bool {
    switch self {
    case .receiveOnImmediate, .delayImmediate: true
    default: false
    }
  }
}
