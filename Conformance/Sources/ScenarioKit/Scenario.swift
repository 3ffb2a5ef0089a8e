/// One generated test case: a pipeline of operators between a scripted source and a scripted
/// subscriber, and the script both follow. Run on each implementation, it yields a log of what
/// the source and the subscriber saw; the logs must be equal.
public struct Scenario: Sendable, CustomStringConvertible {
  public let seed: UInt64
  /// Operators, from the source down.
  public let operators: [Operator]
  /// What the subscriber requests when it receives its subscription (`nil`: nothing).
  public let initialDemand: Demand?
  /// What the subscriber returns from its n-th `receive(_:)` (0 past the end).
  public let returnedDemands: [Demand?]
  /// Indices of values during whose delivery the subscriber re-entrantly requests `.max(1)`.
  public let reentrantRequests: Set<Int>
  public let steps: [Step]
  /// A misbehaving source: the first subscriber gets `.finished` before its subscription.
  public let completesBeforeSubscription: Bool

  public init(
    seed: UInt64, operators: [Operator], initialDemand: Demand?, returnedDemands: [Demand?],
    reentrantRequests: Set<Int>, steps: [Step], completesBeforeSubscription: Bool = false
  ) {
    self.completesBeforeSubscription = completesBeforeSubscription
    self.seed = seed
    self.operators = operators
    self.initialDemand = initialDemand
    self.returnedDemands = returnedDemands
    self.reentrantRequests = reentrantRequests
    self.steps = steps
  }

  public var description: String {
    let ops = operators.map(\.description).joined(separator: " → ")
    let initial = initialDemand.map(\.description) ?? "none"
    let returned = returnedDemands.map { $0?.description ?? "0" }.joined(separator: ",")
    let reentrant = reentrantRequests.sorted().map(String.init).joined(separator: ",")
    let script = steps.map(\.description).joined(separator: " ")
    let early = completesBeforeSubscription ? " (completes before its subscription)" : ""
    return """
      seed \(seed): source\(early) → \(ops) → subscriber
        initial demand \(initial); returned [\(returned)]; re-entrant request on values [\(reentrant)]
        script: \(script)
      """
  }
}

/// A demand, independent of either implementation's type.
public enum Demand: Sendable, Hashable, CustomStringConvertible {
  case max(Int)
  case unlimited

  public var description: String {
    switch self {
    case .max(let n): "max(\(n))"
    case .unlimited: "unlimited"
    }
  }
}

/// One step of the script, run in order after the subscriber has subscribed.
public enum Step: Sendable, Hashable, CustomStringConvertible {
  /// The source sends a value if its current subscription has demand (a well-behaved source).
  case send(Int)
  /// The source finishes (its current subscription).
  case finish
  /// The source fails with `TestError(code:)`.
  case fail(Int)
  /// The subscriber requests more.
  case request(Demand)
  /// The subscriber cancels.
  case cancel
  /// The virtual-time scheduler moves on by this many ticks, running what falls due.
  case advance(Int)
  /// A misbehaving source: sends the value to its latest subscriber after it completed or was
  /// cancelled (while it is live, a plain `send`).
  case rogueSend(Int)
  /// A misbehaving source: finishes its latest subscriber again, whatever its state.
  case rogueFinish

  public var description: String {
    switch self {
    case .send(let value): "send(\(value))"
    case .finish: "finish"
    case .fail(let code): "fail(\(code))"
    case .request(let demand): "request(\(demand))"
    case .cancel: "cancel"
    case .advance(let ticks): "advance(\(ticks))"
    case .rogueSend(let value): "rogueSend(\(value))"
    case .rogueFinish: "rogueFinish"
    }
  }
}

/// The source's failure type on both sides.
public struct TestError: Error, Hashable, Sendable, CustomStringConvertible {
  public let code: Int
  public init(code: Int) { self.code = code }
  public var description: String { "E\(code)" }
}

/// What each implementation must provide: run a scenario and return its log.
public protocol ConformanceSide {
  static var name: String { get }
  static func run(_ scenario: Scenario) -> [String]
}
