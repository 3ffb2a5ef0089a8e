/// A known reason for two logs to differ that is not a Sluice bug: either a place where
/// OpenCombine 0.14.0 departs from Apple's Combine, or one of Sluice's deliberate deviations from
/// Combine (README, "Where Sluice differs from Combine, on purpose"). Each says why, with its
/// evidence, and checks narrowly that it explains the difference at hand.
public struct KnownDivergence: Sendable {
  public enum Kind: Sendable {
    /// OpenCombine behaves unlike Combine here.
    case openCombine
    /// Sluice behaves unlike Combine here, on purpose.
    case sluiceOnPurpose
  }

  public let kind: Kind
  public let name: String
  public let evidence: String
  /// Whether this divergence explains the difference between the two logs.
  let explains: @Sendable (Scenario, [String], [String]) -> Bool

  public static let printZeroDemand = KnownDivergence(
    kind: .openCombine,
    name: "print writes \"request max: (0) (synchronous)\" when a value's returned demand is 0",
    evidence: """
      Combine's print writes a synchronous request only for demand a subscriber returns \
      from receive(_:) that is not zero: Apple's documentation of print(_:to:) shows a sink \
      (which returns .none for every value) printing "receive value" lines and no request \
      lines between them. OpenCombine's Print writes the line for every value, zero included.
      """,
    // Applied to every log before comparing (`withoutZeroDemandPrints`), so that it combines
    // with the other divergences; this entry only names it.
    explains: { _, _, _ in false })

  /// OpenCombine's log without the lines ``printZeroDemand`` explains.
  public static func withoutZeroDemandPrints(_ openCombine: [String]) -> [String] {
    openCombine.filter { !$0.hasSuffix("request max: (0) (synchronous)") }
  }

  /// Every known divergence.
  public static let all: [KnownDivergence] = [
    KnownDivergence(
      kind: .openCombine,
      name: "output(at:), output(in:) and prefix(_:) finish only when a value past the range "
        + "arrives",
      evidence: """
        Apple's documentation of output(in:): "After publishing all elements, the publisher \
        finishes normally." CombineX (another reimplementation, whose specs also run against \
        Combine) cancels and finishes right after delivering the last value in range, as \
        Sluice does. OpenCombine's Output.Inner cancels and finishes only in receive(_:) when \
        its remaining count is already zero, i.e. on the next value.
        """,
      explains: { scenario, sluice, openCombine in
        // Sluice cancels at once; below a `prepend`, before the Concatenate moves on to the
        // source, so Sluice's log finishes where OpenCombine's subscribes the source.
        let first = firstDifference(sluice, openCombine).sluice
        let neverSubscribed = !sluice.contains { $0.hasPrefix("src#1 subscribed") }
        let difference = firstDifference(sluice, openCombine)
        return scenario.operators.contains(where: \.isOutputRange)
          && (first?.hasSuffix(" cancel") == true
            // OpenCombine never finishes: nothing past the range comes (a delayed last value).
            || (difference.sluice == "sub finished" && difference.other == nil)
            || (scenario.operators.contains(.prependValues) && neverSubscribed
              && valuesAndRequests(openCombine).starts(with: valuesAndRequests(sluice)))
            || finishedByTheValuePastTheRange(sluice, openCombine))
      }),
    printZeroDemand,
    KnownDivergence(
      kind: .sluiceOnPurpose,
      name: "print passes on (and prints) nothing its upstream sends after it was cancelled",
      evidence: """
        README, "Where Sluice differs from Combine, on purpose": nothing is delivered after \
        termination. Combine's (and OpenCombine's) print goes on printing and forwarding the \
        value or completion an upstream still sends after the cancel (here an operator \
        finishing while it delivers, whose subscriber cancelled meanwhile).
        """,
      explains: { scenario, sluice, openCombine in
        guard scenario.operators.contains(.print),
          let cancel = openCombine.firstIndex(of: "print p: receive cancel")
        else { return false }
        let after = openCombine[(cancel + 1)...].filter { !$0.hasPrefix("print p: receive ") }
        return sluice == Array(openCombine[...cancel]) + after
      }),
    KnownDivergence(
      kind: .openCombine,
      name: "replaceError delivers its replacement again (and may finish twice) when the "
        + "subscriber requests re-entrantly while receiving it",
      evidence: """
        OpenCombine's log shows the replacement value delivered once per re-entrant request, \
        sometimes followed by two `.finished`; Combine documents replaceError as publishing \
        the replacement once and then finishing, and a publisher completes exactly once.
        """,
      explains: { scenario, sluice, openCombine in
        let difference = firstDifference(sluice, openCombine)
        return scenario.operators.contains(.replaceError)
          && ((difference.sluice.map(isCompletion) == true
            && (difference.other?.hasPrefix("sub value") == true
              || openCombine.filter(isCompletion).count > 1))
            || repeatsPreviousValue(openCombine, at: firstDifferenceIndex(sluice, openCombine)))
      }),
    KnownDivergence(
      kind: .sluiceOnPurpose,
      name: "flatMap asks every inner publisher for .unlimited once the downstream's demand "
        + "becomes unlimited through demand returned from receive(_:)",
      evidence: """
        OpenCombine keeps asking inners one value at a time and stops asking once the demand is \
        unlimited: `Just(0).flatMap { _ in (1...5).publisher }` delivers [1, 2] to a subscriber \
        that requests .max(1) and returns .unlimited, then stalls without finishing. Demand \
        returned from receive(_:) is demand like any other (Combine's Subscriber \
        documentation), so Sluice asks every inner for .unlimited at that point; the values \
        and completion are the same, only the order of requests (and of values from different \
        inners) differs.
        """,
      explains: { scenario, _, _ in
        scenario.operators.contains(where: \.isFlatMap)
          && scenario.returnedDemands.contains(.unlimited)
      }),
    KnownDivergence(
      kind: .openCombine,
      name: "flatMap asks its inner publishers for more in an order that changes from run to run",
      evidence: """
        OpenCombine keeps inner subscriptions in a Dictionary and requests from them in its \
        iteration order, which depends on the process's hash seed: seed 22831 agrees in one \
        process and not in another. Sluice asks inners oldest first. The same events appear in \
        both logs (the subscriber's scripted answers follow the order values arrive in), only \
        values from different inners interleave differently.
        """,
      explains: { scenario, sluice, openCombine in
        guard scenario.operators.contains(where: \.isFlatMap) else { return false }
        if sluice.map(withoutAnswer).sorted() == openCombine.map(withoutAnswer).sorted() {
          return true
        }
        // Below an aggregating operator the reordering changes the aggregates; the source
        // then still sees exactly the same, once the demand went unlimited.
        return scenario.demandBecomesUnlimited && sluice.count == openCombine.count
          && sluice.filter { $0.hasPrefix("src") } == openCombine.filter { $0.hasPrefix("src") }
      }),
    KnownDivergence(
      kind: .sluiceOnPurpose,
      name: "delay's and prefix(untilOutputFrom:)'s subscriptions are described by the operator's "
        + "name",
      evidence: """
        README, "Where Sluice differs from Combine, on purpose": Combine's (and OpenCombine's) \
        Delay and PrefixUntilOutput subscriptions conform to neither CustomStringConvertible \
        nor CustomReflectable, so they describe themselves by their type names; Sluice's are \
        "Delay" and "PrefixUntilOutput", so that print and debuggers show the operator. The \
        logs are compared with those descriptions replaced.
        """,
      explains: { scenario, sluice, openCombine in
        scenario.operators.contains(where: \.hasNamelessOpenCombineSubscription)
          && sluice == openCombine.map(describingNamelessByName)
      }),
    KnownDivergence(
      kind: .sluiceOnPurpose,
      name: "receive(on:) and delay deliver nothing inside the subscriber's "
        + "receive(subscription:)",
      evidence: """
        README, "Where Sluice differs from Combine, on purpose": signals stay serial, so a \
        value that reaches receive(on:) or delay (on ImmediateScheduler) while the subscriber's \
        first request is still inside its receive(subscription:) is delivered right after that \
        returns. Combine delivers it inside, so what the source does meanwhile (a Concatenate \
        subscribing its next publisher) is logged after the value there, before it here. The \
        subscriber's and the source's logs are each the same.
        """,
      explains: { scenario, sluice, openCombine in
        scenario.operators.contains(where: \.hopsToScheduler)
          && subscriberSide(sluice) == subscriberSide(openCombine)
          && sourceSide(sluice) == sourceSide(openCombine)
      }),
    KnownDivergence(
      kind: .sluiceOnPurpose,
      name: "nothing is forwarded to an upstream subscription after that upstream completed, "
        + "and no demand is answered for a value that arrives after it was cancelled",
      evidence: """
        README, "Where Sluice differs from Combine, on purpose": nothing passes after \
        termination. Combine (and OpenCombine) pass later requests and cancels on to an \
        upstream that has already completed, and answer demand for a value that arrives while \
        its subscriber cancels (buffer(.keepFull) answers .max(1)).
        """,
      explains: { _, sluice, openCombine in
        withoutSignalsAfterEnd(sluice) == withoutSignalsAfterEnd(openCombine)
      }),
    KnownDivergence(
      kind: .sluiceOnPurpose,
      name: "nothing reaches a subscriber after it cancelled, nor what a misbehaving source "
        + "sends after it completed",
      evidence: """
        README, "Where Sluice differs from Combine, on purpose": nothing is delivered after \
        termination. OpenCombine's debounce, delay and timeout deliver a completion they had \
        scheduled after the subscriber cancelled (at the next scheduler turn), and its \
        pass-through operators forward values and completions a source sends after it \
        completed; Sluice's do neither. Everything else in the logs is the same, and what \
        Sluice delivered is what OpenCombine delivered, less those signals.
        """,
      explains: { scenario, sluice, openCombine in
        let rest = { (log: [String]) in withoutSignalsAfterEnd(log.filter { !isDelivery($0) }) }
        guard rest(sluice) == rest(openCombine) else { return false }
        let delivered = sluice.filter(isDelivery)
        let reference = openCombine.filter(isDelivery)
        guard delivered.count < reference.count, isSubsequence(delivered, of: reference) else {
          return false
        }
        if scenario.hasMisbehavingSource { return true }
        // Otherwise only after the subscriber's cancel: the same before it, nothing after.
        guard let cancel = sluice.firstIndex(of: "sub cancel"),
          let reference = openCombine.firstIndex(of: "sub cancel")
        else { return false }
        return sluice[..<cancel].filter(isDelivery) == openCombine[..<reference].filter(isDelivery)
          && !sluice[cancel...].contains(where: isDelivery)
      }),
    KnownDivergence(
      kind: .sluiceOnPurpose,
      name: "prefix(untilOutputFrom:) goes on after its upstream completed before its "
        + "subscription",
      evidence: """
        A misbehaving source completes before it hands over its subscription. OpenCombine's \
        PrefixUntilOutput then cancels the subscription when it comes and never gives its own \
        subscriber one, so that subscriber waits for ever without a subscription, a completion \
        or a way to cancel. Combine's documentation says nothing of this case; Sluice ignores \
        the early completion (as its other operators with a subscription of their own do, \
        README's misuse table) and serves the subscriber from the subscription that follows.
        """,
      explains: { scenario, _, openCombine in
        scenario.completesBeforeSubscription && scenario.operators.first == .prefixUntilNever
          && !openCombine.contains { $0.hasPrefix("sub subscription") }
          && openCombine.contains("src#1 cancel")
      }),
  ]

  /// The first known divergence that explains the difference, if any. OpenCombine's nameless
  /// subscriptions are set aside first, so they can combine with any other divergence.
  public static func explaining(
    _ scenario: Scenario, sluice: [String], openCombine: [String]
  ) -> KnownDivergence? {
    if let found = all.first(where: { $0.explains(scenario, sluice, openCombine) }) {
      return found
    }
    guard scenario.operators.contains(where: \.hasNamelessOpenCombineSubscription) else {
      return nil
    }
    let named = openCombine.map(describingNamelessByName)
    return all.first { $0.explains(scenario, sluice, named) }
  }
}

extension Scenario {
  /// Whether the subscriber's demand can become unlimited.
  var demandBecomesUnlimited: Bool {
    initialDemand == .unlimited || returnedDemands.contains(.unlimited)
      || steps.contains(.request(.unlimited))
  }
}

extension Operator {
  var isFlatMap: Bool {
    switch self {
    case .flatMapJust, .flatMapSequence: true
    default: false
    }
  }

  var isOutputRange: Bool {
    switch self {
    case .outputAt, .outputIn, .prefix: true
    default: false
    }
  }
}

/// The first lines at which two logs differ (`nil` past a log's end).
func firstDifference(_ sluice: [String], _ other: [String]) -> (sluice: String?, other: String?) {
  for index in 0..<max(sluice.count, other.count) {
    let left = index < sluice.count ? sluice[index] : nil
    let right = index < other.count ? other[index] : nil
    if left != right { return (left, right) }
  }
  return (nil, nil)
}

/// What the subscriber saw but its subscription's end (a completion, or its own cancel).
func valuesAndRequests(_ log: [String]) -> [String] {
  subscriberSide(log).filter { $0 != "sub cancel" && !isCompletion($0) }
}

/// What the subscriber saw.
func subscriberSide(_ log: [String]) -> [String] { log.filter { $0.hasPrefix("sub ") } }

/// What the source saw, with consecutive requests summed and without requests made after it
/// was asked for `.unlimited` (how demand is split into requests depends on when the source was
/// subscribed; the total is the same).
func sourceSide(_ log: [String]) -> [String] {
  var unlimited = Set<Substring>()
  var result: [String] = []
  var pending: (link: Substring, count: Int)?
  func flush() {
    if let (link, count) = pending { result.append("\(link) request max(\(count))") }
    pending = nil
  }
  for line in log {
    guard line.hasPrefix("src"), let space = line.firstIndex(of: " ") else { continue }
    let link = line[..<space]
    let event = line[line.index(after: space)...]
    guard event.hasPrefix("request") else {
      flush()
      result.append(line)
      continue
    }
    if unlimited.contains(link) { continue }
    if event == "request unlimited" {
      flush()
      unlimited.insert(link)
      result.append(line)
    } else if let count = Int(event.dropFirst("request max(".count).dropLast()) {
      if let current = pending, current.link != link { flush() }
      pending = (link, (pending?.count ?? 0) + count)
    }
  }
  flush()
  return result
}

/// The index of the first line where the logs differ.
/// Whether OpenCombine's log is Sluice's but for the value past an output range that made
/// OpenCombine finish: the subscriber had ended the same way at the same point in both logs
/// (Sluice right after the last value in range, a re-entrant request having been made meanwhile;
/// OpenCombine inside the delivery of the next value, whose "sent" line the source writes once
/// that delivery returns), and Sluice's source skips that value, its subscription cancelled.
/// (Seed 4706: `switchToLatest → output(in: 0..<1)`.)
func finishedByTheValuePastTheRange(_ sluice: [String], _ openCombine: [String]) -> Bool {
  let index = firstDifferenceIndex(sluice, openCombine)
  guard index > 0, index < sluice.count, index < openCombine.count,
    sluice[index].hasPrefix("src skip "), openCombine[index].hasPrefix("src#"),
    openCombine[index - 1] == "sub finished"
  else { return false }
  let value = sluice[index].dropFirst("src skip ".count)
  guard openCombine[index].contains(" sent \(value), got ") else { return false }
  var replaced = openCombine
  replaced[index] = sluice[index]
  return replaced == sluice
}

func firstDifferenceIndex(_ sluice: [String], _ other: [String]) -> Int {
  (0..<min(sluice.count, other.count)).first { sluice[$0] != other[$0] }
    ?? min(sluice.count, other.count)
}

/// Whether `log[index]` delivers the same value (and answer) as the value delivered before it
/// (a replacement delivered again; later operators may have mapped it).
func repeatsPreviousValue(_ log: [String], at index: Int) -> Bool {
  guard index < log.count, log[index].hasPrefix("sub value") else { return false }
  return log[..<index].last { $0.hasPrefix("sub value") } == log[index]
}

/// A log line with OpenCombine's type-name description of its Delay subscription replaced by
/// "Delay".
func describingNamelessByName(_ line: String) -> String {
  for marker in ["sub subscription ", "subscribed by ", "receive subscription: ("] {
    guard let start = line.firstRange(of: marker) else { continue }
    for name in ["Delay", "PrefixUntilOutput"]
    where line[start.upperBound...].hasPrefix("OpenCombine.Publishers.\(name)<") {
      // print's line closes its parenthesis.
      return String(line[..<start.upperBound]) + name + (marker.hasSuffix("(") ? ")" : "")
    }
  }
  return line
}

/// A log line without the demand the subscriber answered with.
func withoutAnswer(_ line: String) -> Substring {
  guard line.hasPrefix("sub value"), let arrow = line.firstIndex(of: "→") else { return line[...] }
  return line[..<arrow]
}

/// Whether a line is something delivered to the subscriber (or printed as passing to it).
func isDelivery(_ line: String) -> Bool {
  line.hasPrefix("sub value") || line == "sub request max(1) (re-entrant)" || isCompletion(line)
    || line.hasPrefix("print p: receive value") || line.hasPrefix("print p: receive finished")
    || line.hasPrefix("print p: receive error") || line.hasPrefix("print p: request max")
}

/// Whether `part`'s lines all appear in `whole`, in order.
func isSubsequence(_ part: [String], of whole: [String]) -> Bool {
  var remaining = whole[...]
  for line in part {
    guard let found = remaining.firstIndex(of: line) else { return false }
    remaining = remaining[(found + 1)...]
  }
  return true
}

extension Scenario {
  /// Whether the source misbehaves in this scenario.
  var hasMisbehavingSource: Bool {
    completesBeforeSubscription
      || steps.contains { step in
        switch step {
        case .rogueSend, .rogueFinish: true
        default: false
        }
      }
  }
}

func isCompletion(_ line: String) -> Bool {
  line == "sub finished" || line.hasPrefix("sub failure")
}

/// The log without requests and cancels that reached a source subscription after it completed
/// (print's request lines too, once print saw the completion), and without the demand answered
/// for a value a misbehaving source sends after its completion.
func withoutSignalsAfterEnd(_ log: [String]) -> [String] {
  var ended = Set<Substring>()
  var cancelled = Set<Substring>()
  var printEnded = false
  return log.compactMap { line in
    if line.hasPrefix("print p: receive finished") || line.hasPrefix("print p: receive error") {
      printEnded = true
    }
    if printEnded, line.hasPrefix("print p: request") || line == "print p: receive cancel" {
      return nil
    }
    guard line.hasPrefix("src#"), let space = line.firstIndex(of: " ") else { return line }
    let link = line[..<space]
    let event = line[line.index(after: space)...]
    if event.hasPrefix("finished") || event.hasPrefix("failure") {
      ended.insert(link)
      return line
    }
    // The demand answered for a value that arrives while it is being cancelled: Sluice answers
    // none, Combine's operators (and OpenCombine's) what they would have asked for.
    if cancelled.contains(link) || ended.contains(link), event.hasPrefix("sent "),
      let got = line.firstRange(of: ", got ")
    {
      return String(line[..<got.lowerBound])
    }
    // A request after the operator cancelled its upstream (buffer(.keepFull) refills then).
    if event.hasPrefix("request"), cancelled.contains(link) { return nil }
    let isSignal = event.hasPrefix("request") || event == "cancel"
    if event == "cancel", !ended.contains(link) { cancelled.insert(link) }
    return isSignal && ended.contains(link) ? nil : line
  }
}
