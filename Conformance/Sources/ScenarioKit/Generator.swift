/// A small, fast, seedable random source (SplitMix64): the same seed gives the same scenario on
/// every machine.
public struct SplitMix64: Sendable {
  private var state: UInt64

  public init(seed: UInt64) { state = seed }

  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// A number in `0..<bound`.
  public mutating func next(upTo bound: Int) -> Int { Int(next() % UInt64(bound)) }

  /// `true` with probability `percent` / 100.
  public mutating func chance(_ percent: Int) -> Bool { next(upTo: 100) < percent }
}

extension Scenario {
  /// The first seed whose scenarios may use virtual time and a misbehaving source.
  public static let firstExtendedSeed: UInt64 = 20_000

  /// The scenario for `seed`: one to three operators, a demand script and 4…16 steps.
  public init(seed: UInt64) {
    var random = SplitMix64(seed: seed)
    func demand(allowingNone: Bool) -> Demand? {
      switch random.next(upTo: allowingNone ? 6 : 5) {
      case 0: .unlimited
      case 1, 2: .max(1)
      case 3: .max(2)
      case 4: .max(3)
      default: nil
      }
    }
    let extended = seed >= Self.firstExtendedSeed
    var operators = (0...random.next(upTo: 3)).map { _ in
      Operator.random(&random, extended: extended)
    }
    // OpenCombine's replaceError delivers its replacement again on every re-entrant request (a
    // known divergence); `retry` and `flatMap` request re-entrantly from inside receive, so
    // below them that recursion never ends and OpenCombine overflows its stack (seeds 44353,
    // 104569). Such pipelines use catch { Just(-1) } instead, the same to every other operator.
    if let index = operators.firstIndex(of: .replaceError),
      operators[index...].contains(where: \.requestsReentrantly)
    {
      operators[index] = .catchJust
    }
    let initialDemand = demand(allowingNone: true)
    let returnedDemands = (0..<12).map { _ in random.chance(60) ? nil : demand(allowingNone: true) }
    let reentrantRequests = Set((0..<12).filter { _ in random.chance(10) })
    // Seeds from `firstExtendedSeed` on also draw time operators, time steps and a misbehaving
    // source; below it the scenarios stay what they always were.
    let timed = operators.contains(where: \.usesVirtualTime)
    // A crash cannot be compared: pipelines where a misbehaving source crashes either side
    // keep a well-behaved source.
    let rogue =
      extended && random.chance(15)
      && !operators.contains(where: \.crashesOnAMisbehavingSource)
    var steps = (0..<(4 + random.next(upTo: 13))).map { _ -> Step in
      if timed, random.chance(30) { return .advance(1 + random.next(upTo: 4)) }
      if rogue, random.chance(15) {
        return random.chance(70) ? .rogueSend(random.next(upTo: 10)) : .rogueFinish
      }
      return switch random.next(upTo: 100) {
      case 0..<62: .send(random.next(upTo: 10))
      case 62..<76: .request(demand(allowingNone: false) ?? .max(1))
      case 76..<81: .cancel
      case 81..<91: .finish
      default: .fail(1 + random.next(upTo: 3))
      }
    }
    if timed { steps.append(.advance(20)) }  // what is still scheduled falls due
    self.init(
      seed: seed, operators: operators, initialDemand: initialDemand,
      returnedDemands: returnedDemands, reentrantRequests: reentrantRequests, steps: steps,
      completesBeforeSubscription: rogue && random.chance(30)
        && operators.allSatisfy(\.toleratesACompletionBeforeSubscription))
  }
}
