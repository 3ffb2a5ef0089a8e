// Operators on `Optional.Publisher` with Combine's specialised result types.
//
// At most one value and no failure: Combine computes these when they are applied and returns
// another `Optional.Publisher` (or `Just` / `Empty`). As in Combine, an empty publisher stays
// empty through `allSatisfy`, `contains`, `count`, `reduce` and `scan` (where the generic
// operators would publish `true`, `false`, `0` or the initial result), while `collect()`
// publishes `[]` and `replaceEmpty` the replacement.

extension Optional.Publisher where Wrapped: Equatable {
  /// Whether the value equals `output`; nothing when empty.
  ///
  /// ![Marble diagram: contains("b")](contains)
  public func contains(_ output: Output) -> Optional<Bool>.Publisher {
    Optional<Bool>.Publisher(self.output.map { $0 == output })
  }

  /// Itself: at most one value has no duplicates.
  ///
  /// ![Marble diagram: removeDuplicates()](removeDuplicates)
  public func removeDuplicates() -> Optional<Wrapped>.Publisher { self }
}

extension Optional.Publisher where Wrapped: Comparable {
  /// Itself.
  ///
  /// ![Marble diagram: min()](min)
  public func min() -> Optional<Wrapped>.Publisher { self }

  /// Itself.
  ///
  /// ![Marble diagram: max()](max)
  public func max() -> Optional<Wrapped>.Publisher { self }
}

extension Optional.Publisher {
  /// Whether the value satisfies `predicate`; nothing when empty.
  ///
  /// ![Marble diagram: allSatisfy { $0 < 5 }](allSatisfy)
  public func allSatisfy(_ predicate: (Output) -> Bool) -> Optional<Bool>.Publisher {
    Optional<Bool>.Publisher(output.map(predicate))
  }

  /// The value in an array; `[]` when empty.
  ///
  /// ![Marble diagram: collect()](collect)
  public func collect() -> Optional<[Output]>.Publisher {
    Optional<[Output]>.Publisher(output.map { [$0] } ?? [])
  }

  /// The transformed value, unless empty or `nil`.
  ///
  /// ![Marble diagram: compactMap { $0 % 2 == 0 ? $0 * 10 : nil }](compactMap)
  public func compactMap<ElementOfResult>(
    _ transform: (Output) -> ElementOfResult?
  ) -> Optional<ElementOfResult>.Publisher {
    Optional<ElementOfResult>.Publisher(output.flatMap(transform))
  }

  /// Itself.
  ///
  /// ![Marble diagram: min { $0 % 5 < $1 % 5 }](min-by)
  public func min(by areInIncreasingOrder: (Output, Output) -> Bool)
    -> Optional<Output>
    .Publisher
  { self }

  /// Itself.
  ///
  /// ![Marble diagram: max { $0 % 5 < $1 % 5 }](max-by)
  public func max(by areInIncreasingOrder: (Output, Output) -> Bool)
    -> Optional<Output>
    .Publisher
  { self }

  /// Whether the value satisfies `predicate`; nothing when empty.
  ///
  /// ![Marble diagram: contains { $0 > 5 }](contains-where)
  public func contains(where predicate: (Output) -> Bool) -> Optional<Bool>.Publisher {
    Optional<Bool>.Publisher(output.map(predicate))
  }

  /// One; nothing when empty.
  ///
  /// ![Marble diagram: count()](count)
  public func count() -> Optional<Int>.Publisher {
    Optional<Int>.Publisher(output.map { _ in 1 })
  }

  /// The value when `count` is 0. Traps when `count` is negative.
  ///
  /// ![Marble diagram: dropFirst(2)](dropFirst)
  public func dropFirst(_ count: Int = 1) -> Optional<Output>.Publisher {
    if count < 0 { Violation.negativeCount(count, operator: "dropFirst") }
    return Optional<Output>.Publisher(count == 0 ? output : nil)
  }

  /// The value unless it satisfies `predicate`.
  ///
  /// ![Marble diagram: drop { $0 < 5 }](drop-while)
  public func drop(while predicate: (Output) -> Bool) -> Optional<Output>.Publisher {
    Optional<Output>.Publisher(output.flatMap { predicate($0) ? nil : $0 })
  }

  /// Itself.
  ///
  /// ![Marble diagram: first()](first)
  public func first() -> Optional<Output>.Publisher { self }

  /// The value if it satisfies `predicate`.
  ///
  /// ![Marble diagram: first { $0 > 5 }](first-where)
  public func first(where predicate: (Output) -> Bool) -> Optional<Output>.Publisher {
    filter(predicate)
  }

  /// Itself.
  ///
  /// ![Marble diagram: last()](last)
  public func last() -> Optional<Output>.Publisher { self }

  /// The value if it satisfies `predicate`.
  ///
  /// ![Marble diagram: last { $0 > 5 }](last-where)
  public func last(where predicate: (Output) -> Bool) -> Optional<Output>.Publisher {
    filter(predicate)
  }

  /// The value if it satisfies `isIncluded`.
  ///
  /// ![Marble diagram: filter { $0 % 2 == 0 }](filter)
  public func filter(_ isIncluded: (Output) -> Bool) -> Optional<Output>.Publisher {
    Optional<Output>.Publisher(output.flatMap { isIncluded($0) ? $0 : nil })
  }

  /// Finishes without a value.
  ///
  /// ![Marble diagram: ignoreOutput()](ignoreOutput)
  public func ignoreOutput() -> Empty<Output, Failure> { Empty<Output, Failure>() }

  /// The transformed value.
  ///
  /// ![Marble diagram: map { $0 * 10 }](map)
  public func map<ElementOfResult>(_ transform: (Output) -> ElementOfResult)
    -> Optional<
      ElementOfResult
    >.Publisher
  {
    Optional<ElementOfResult>.Publisher(output.map(transform))
  }

  /// The value when `index` is 0. Traps when `index` is negative.
  ///
  /// ![Marble diagram: output(at: 1)](output-at)
  public func output(at index: Int) -> Optional<Output>.Publisher {
    if index < 0 { Violation.negativeIndex(index, operator: "output(at:)") }
    return Optional<Output>.Publisher(index == 0 ? output : nil)
  }

  /// The value when `range` contains 0. Traps when the range starts below 0 or (as Combine's
  /// specialization does) ends at `Int.max - 1` or beyond.
  ///
  /// ![Marble diagram: output(in: 1...2)](output-in)
  public func output<R: RangeExpression>(in range: R) -> Optional<Output>.Publisher
  where R.Bound == Int {
    let range = range.relative(to: 0..<Int.max)
    if range.lowerBound < 0 { Violation.negativeIndex(range.lowerBound, operator: "output(in:)") }
    if range.upperBound >= .max - 1 {
      Violation.upperBoundTooLarge(range.upperBound, operator: "Optional.Publisher.output(in:)")
    }
    return Optional<Output>.Publisher(range.contains(0) ? output : nil)
  }

  /// The value unless `maxLength` is 0. Traps when `maxLength` is negative.
  ///
  /// ![Marble diagram: prefix(2)](prefix)
  public func prefix(_ maxLength: Int) -> Optional<Output>.Publisher {
    if maxLength < 0 { Violation.negativeCount(maxLength, operator: "prefix") }
    return Optional<Output>.Publisher(maxLength > 0 ? output : nil)
  }

  /// The value if it satisfies `predicate`.
  ///
  /// ![Marble diagram: prefix { $0 < 5 }](prefix-while)
  public func prefix(while predicate: (Output) -> Bool) -> Optional<Output>.Publisher {
    filter(predicate)
  }

  /// `nextPartialResult(initialResult, value)`; nothing when empty.
  ///
  /// ![Marble diagram: reduce(0, +)](reduce)
  public func reduce<Accumulator>(
    _ initialResult: Accumulator, _ nextPartialResult: (Accumulator, Output) -> Accumulator
  ) -> Optional<Accumulator>.Publisher {
    Optional<Accumulator>.Publisher(output.map { nextPartialResult(initialResult, $0) })
  }

  /// `nextPartialResult(initialResult, value)`; nothing when empty.
  ///
  /// ![Marble diagram: scan(0, +)](scan)
  public func scan<ElementOfResult>(
    _ initialResult: ElementOfResult,
    _ nextPartialResult: (ElementOfResult, Output) -> ElementOfResult
  ) -> Optional<ElementOfResult>.Publisher {
    reduce(initialResult, nextPartialResult)
  }

  /// Itself.
  ///
  /// ![Marble diagram: removeDuplicates { abs($0 - $1) < 2 }](removeDuplicates-by)
  public func removeDuplicates(by predicate: (Output, Output) -> Bool)
    -> Optional<Output>
    .Publisher
  { self }

  /// Itself: it never fails.
  ///
  /// ![Marble diagram: replaceError(with: 0)](replaceError)
  public func replaceError(with output: Output) -> Optional<Output>.Publisher { self }

  /// The value, or `output` when empty.
  ///
  /// ![Marble diagram: replaceEmpty(with: "z")](replaceEmpty)
  public func replaceEmpty(with output: Output) -> Just<Output> { Just(self.output ?? output) }

  /// Itself: it never fails.
  ///
  /// ![Marble diagram: input.retry(1)](retry)
  public func retry(_ times: Int) -> Optional<Output>.Publisher { self }
}
