// Operators on `Just` with Combine's specialised result types.
//
// A `Just` has exactly one value and never fails, so Combine computes these operators when they
// are applied — the closure runs once, at once — and returns the result as another
// single-value publisher (`Just`, `Optional.Publisher`, `Result.Publisher`, `Empty`). The
// types match Combine's, so annotations written for Combine compile unchanged. Where the result
// is an `Optional.Publisher`, the operator is the one on `Optional(output).publisher`; with one
// value, `scan` is `reduce`.

extension Just where Output: Comparable {
  /// Itself: the only value is the smallest.
  ///
  /// ![Marble diagram: min()](min)
  public func min() -> Just<Output> { self }

  /// Itself: the only value is the largest.
  ///
  /// ![Marble diagram: max()](max)
  public func max() -> Just<Output> { self }
}

extension Just where Output: Equatable {
  /// Whether the value equals `output`.
  ///
  /// ![Marble diagram: contains("b")](contains)
  public func contains(_ output: Output) -> Just<Bool> { Just<Bool>(self.output == output) }

  /// Itself: one value has no duplicates.
  ///
  /// ![Marble diagram: removeDuplicates()](removeDuplicates)
  public func removeDuplicates() -> Just<Output> { self }
}

extension Just {
  /// Whether the value satisfies `predicate`.
  ///
  /// ![Marble diagram: allSatisfy { $0 < 5 }](allSatisfy)
  public func allSatisfy(_ predicate: (Output) -> Bool) -> Just<Bool> {
    Just<Bool>(predicate(output))
  }

  /// Whether the value satisfies `predicate`, or the error it throws.
  ///
  /// ![Marble diagram: tryAllSatisfy { $0 == 0 ? throw : $0 < 5 }](tryAllSatisfy)
  public func tryAllSatisfy(_ predicate: (Output) throws -> Bool)
    -> Result<Bool, any Error>
    .Publisher
  {
    Result<Bool, any Error>.Publisher(Result { try predicate(output) })
  }

  /// Whether the value satisfies `predicate`.
  ///
  /// ![Marble diagram: contains { $0 > 5 }](contains-where)
  public func contains(where predicate: (Output) -> Bool) -> Just<Bool> {
    Just<Bool>(predicate(output))
  }

  /// Whether the value satisfies `predicate`, or the error it throws.
  ///
  /// ![Marble diagram: tryContains { $0 == 0 ? throw : $0 > 5 }](tryContains)
  public func tryContains(where predicate: (Output) throws -> Bool)
    -> Result<Bool, any Error>
    .Publisher
  {
    Result<Bool, any Error>.Publisher(Result { try predicate(output) })
  }

  /// The value in an array.
  ///
  /// ![Marble diagram: collect()](collect)
  public func collect() -> Just<[Output]> { Just<[Output]>([output]) }

  /// Itself (`areInIncreasingOrder` is never called with one value).
  ///
  /// ![Marble diagram: min { $0 % 5 < $1 % 5 }](min-by)
  public func min(by areInIncreasingOrder: (Output, Output) -> Bool) -> Just<Output> { self }

  /// Itself (`areInIncreasingOrder` is never called with one value).
  ///
  /// ![Marble diagram: max { $0 % 5 < $1 % 5 }](max-by)
  public func max(by areInIncreasingOrder: (Output, Output) -> Bool) -> Just<Output> { self }

  /// One.
  ///
  /// ![Marble diagram: count()](count)
  public func count() -> Just<Int> { Just<Int>(1) }

  /// The value when `count` is 0, otherwise nothing. Traps when `count` is negative.
  ///
  /// ![Marble diagram: dropFirst(2)](dropFirst)
  public func dropFirst(_ count: Int = 1) -> Optional<Output>.Publisher {
    Optional(output).publisher.dropFirst(count)
  }

  /// Nothing when the value satisfies `predicate`, otherwise the value.
  ///
  /// ![Marble diagram: drop { $0 < 5 }](drop-while)
  public func drop(while predicate: (Output) -> Bool) -> Optional<Output>.Publisher {
    Optional(output).publisher.drop(while: predicate)
  }

  /// Itself.
  ///
  /// ![Marble diagram: first()](first)
  public func first() -> Just<Output> { self }

  /// The value if it satisfies `predicate`.
  ///
  /// ![Marble diagram: first { $0 > 5 }](first-where)
  public func first(where predicate: (Output) -> Bool) -> Optional<Output>.Publisher {
    Optional(output).publisher.filter(predicate)
  }

  /// Itself.
  ///
  /// ![Marble diagram: last()](last)
  public func last() -> Just<Output> { self }

  /// The value if it satisfies `predicate`.
  ///
  /// ![Marble diagram: last { $0 > 5 }](last-where)
  public func last(where predicate: (Output) -> Bool) -> Optional<Output>.Publisher {
    Optional(output).publisher.filter(predicate)
  }

  /// Finishes without a value.
  ///
  /// ![Marble diagram: ignoreOutput()](ignoreOutput)
  public func ignoreOutput() -> Empty<Output, Never> { Empty<Output, Never>() }

  /// The transformed value.
  ///
  /// ![Marble diagram: map { $0 * 10 }](map)
  public func map<ElementOfResult>(_ transform: (Output) -> ElementOfResult) -> Just<
    ElementOfResult
  > {
    Just<ElementOfResult>(transform(output))
  }

  /// The transformed value, or the error `transform` throws.
  ///
  /// ![Marble diagram: tryMap { 12 / $0 }  // throws on 0](tryMap)
  public func tryMap<ElementOfResult>(
    _ transform: (Output) throws -> ElementOfResult
  ) -> Result<ElementOfResult, any Error>.Publisher {
    Result<ElementOfResult, any Error>.Publisher(Result { try transform(output) })
  }

  /// The transformed value, unless it is `nil`.
  ///
  /// ![Marble diagram: compactMap { $0 % 2 == 0 ? $0 * 10 : nil }](compactMap)
  public func compactMap<ElementOfResult>(
    _ transform: (Output) -> ElementOfResult?
  ) -> Optional<ElementOfResult>.Publisher {
    Optional<ElementOfResult>.Publisher(transform(output))
  }

  /// The value if it satisfies `isIncluded`.
  ///
  /// ![Marble diagram: filter { $0 % 2 == 0 }](filter)
  public func filter(_ isIncluded: (Output) -> Bool) -> Optional<Output>.Publisher {
    Optional(output).publisher.filter(isIncluded)
  }

  /// The value when `index` is 0. Traps when `index` is negative.
  ///
  /// ![Marble diagram: output(at: 1)](output-at)
  public func output(at index: Int) -> Optional<Output>.Publisher {
    Optional(output).publisher.output(at: index)
  }

  /// The value when `range` starts at 0, exactly as Combine's specialization decides (so the
  /// empty range `0..<0` publishes the value too, and a range starting below 0 publishes nothing
  /// rather than trapping).
  ///
  /// ![Marble diagram: output(in: 1...2)](output-in)
  public func output<R: RangeExpression>(in range: R) -> Optional<Output>.Publisher
  where R.Bound == Int {
    Optional<Output>.Publisher(range.relative(to: 0..<Int.max).lowerBound == 0 ? output : nil)
  }

  /// The value unless `maxLength` is 0. Traps when `maxLength` is negative.
  ///
  /// ![Marble diagram: prefix(2)](prefix)
  public func prefix(_ maxLength: Int) -> Optional<Output>.Publisher {
    Optional(output).publisher.prefix(maxLength)
  }

  /// The value if it satisfies `predicate`.
  ///
  /// ![Marble diagram: prefix { $0 < 5 }](prefix-while)
  public func prefix(while predicate: (Output) -> Bool) -> Optional<Output>.Publisher {
    Optional(output).publisher.filter(predicate)
  }

  /// The value, as a publisher whose failure type is `failureType`.
  ///
  /// ![Marble diagram: setFailureType(to: Boom.self)](setFailureType)
  public func setFailureType<Failure: Error>(to failureType: Failure.Type)
    -> Result<
      Output, Failure
    >.Publisher
  {
    Result<Output, Failure>.Publisher(output)
  }

  /// The value, as a publisher whose failure type is `transform`'s (never called).
  ///
  /// ![Marble diagram: mapError { _ in URLError(.timedOut) }](mapError)
  public func mapError<Failure: Error>(_ transform: (Never) -> Failure)
    -> Result<
      Output, Failure
    >.Publisher
  {
    Result<Output, Failure>.Publisher(output)
  }

  /// Itself (`predicate` is never called with one value).
  ///
  /// ![Marble diagram: removeDuplicates { abs($0 - $1) < 2 }](removeDuplicates-by)
  public func removeDuplicates(by predicate: (Output, Output) -> Bool) -> Just<Output> { self }

  /// The value, after calling `predicate(output, output)` once (as Combine does); an error it
  /// throws becomes the failure.
  ///
  /// ![Marble diagram: tryRemoveDuplicates { $1 == 0 ? throw : $0 == $1 }](tryRemoveDuplicates)
  public func tryRemoveDuplicates(by predicate: (Output, Output) throws -> Bool)
    -> Result<Output, any Error>.Publisher
  {
    Result<Output, any Error>.Publisher(
      Result<Output, Never>.success(output).checkedOnce(by: predicate))
  }

  /// The value, after calling `areInIncreasingOrder(output, output)` once (as Combine does); an
  /// error it throws becomes the failure.
  ///
  /// ![Marble diagram: tryMin { $1 == 0 ? throw : $0 < $1 }](tryMin)
  public func tryMin(by areInIncreasingOrder: (Output, Output) throws -> Bool)
    -> Result<Output, any Error>.Publisher
  {
    Result<Output, any Error>.Publisher(
      Result<Output, Never>.success(output).checkedOnce(by: areInIncreasingOrder))
  }

  /// The value, after calling `areInIncreasingOrder(output, output)` once (as Combine does); an
  /// error it throws becomes the failure.
  ///
  /// ![Marble diagram: tryMax { $1 == 0 ? throw : $0 < $1 }](tryMax)
  public func tryMax(by areInIncreasingOrder: (Output, Output) throws -> Bool)
    -> Result<Output, any Error>.Publisher
  {
    Result<Output, any Error>.Publisher(
      Result<Output, Never>.success(output).checkedOnce(by: areInIncreasingOrder))
  }

  /// Itself: it never fails.
  ///
  /// ![Marble diagram: replaceError(with: 0)](replaceError)
  public func replaceError(with output: Output) -> Just<Output> { self }

  /// Itself: it is never empty.
  ///
  /// ![Marble diagram: replaceEmpty(with: "z")](replaceEmpty)
  public func replaceEmpty(with output: Output) -> Just<Output> { self }

  /// Itself: it never fails.
  ///
  /// ![Marble diagram: input.retry(1)](retry)
  public func retry(_ times: Int) -> Just<Output> { self }

  /// `nextPartialResult(initialResult, value)`.
  ///
  /// ![Marble diagram: reduce(0, +)](reduce)
  public func reduce<Accumulator>(
    _ initialResult: Accumulator, _ nextPartialResult: (Accumulator, Output) -> Accumulator
  ) -> Result<Accumulator, Never>.Publisher {
    Result<Accumulator, Never>.Publisher(nextPartialResult(initialResult, output))
  }

  /// `nextPartialResult(initialResult, value)`, or the error it throws.
  ///
  /// ![Marble diagram: tryReduce(0) { sum, n in n == 0 ? throw : sum + n }](tryReduce)
  public func tryReduce<Accumulator>(
    _ initialResult: Accumulator,
    _ nextPartialResult: (Accumulator, Output) throws -> Accumulator
  ) -> Result<Accumulator, any Error>.Publisher {
    Result<Accumulator, any Error>.Publisher(
      Result { try nextPartialResult(initialResult, output) })
  }

  /// `nextPartialResult(initialResult, value)`.
  ///
  /// ![Marble diagram: scan(0, +)](scan)
  public func scan<ElementOfResult>(
    _ initialResult: ElementOfResult,
    _ nextPartialResult: (ElementOfResult, Output) -> ElementOfResult
  ) -> Result<ElementOfResult, Never>.Publisher {
    reduce(initialResult, nextPartialResult)
  }

  /// `nextPartialResult(initialResult, value)`, or the error it throws.
  ///
  /// ![Marble diagram: tryScan(0) { sum, n in n == 0 ? throw : sum + n }](tryScan)
  public func tryScan<ElementOfResult>(
    _ initialResult: ElementOfResult,
    _ nextPartialResult: (ElementOfResult, Output) throws -> ElementOfResult
  ) -> Result<ElementOfResult, any Error>.Publisher {
    tryReduce(initialResult, nextPartialResult)
  }
}

extension Just {
  /// `elements`, then the value (computed now, as in Combine).
  ///
  /// ![Marble diagram: prepend("x", "y")](prepend)
  public func prepend(_ elements: Output...) -> Publishers.Sequence<[Output], Never> {
    prepend(elements)
  }

  /// `elements`, then the value (computed now, as in Combine).
  ///
  /// ![Marble diagram: prepend("x", "y")](prepend)
  public func prepend<S: Sequence>(_ elements: S) -> Publishers.Sequence<[Output], Never>
  where Output == S.Element {
    Publishers.Sequence(sequence: elements + [output])
  }

  /// The value, then `elements` (computed now, as in Combine).
  ///
  /// ![Marble diagram: append(second)](append)
  public func append(_ elements: Output...) -> Publishers.Sequence<[Output], Never> {
    append(elements)
  }

  /// The value, then `elements` (computed now, as in Combine).
  ///
  /// ![Marble diagram: append(second)](append)
  public func append<S: Sequence>(_ elements: S) -> Publishers.Sequence<[Output], Never>
  where Output == S.Element {
    Publishers.Sequence(sequence: [output] + elements)
  }
}
