extension DiagramScenario {
  /// Every picture, family by family, in the order the overview article shows them.
  public static let all: [DiagramScenario] =
    mapping + filtering + reducing + mathematics + matching + sequence + combining + errors
    + time + buffering + multicasting + sideEffects + coding + subscribing + publishers
    + subjects + foundation + asyncOperators + bridges + awaiting + networking
}
