// Operators on `Result.Publisher` with Combine's specialised result types.
//
// One value or one failure: Combine computes these when they are applied and returns another
// `Result.Publisher` (or `Empty`). A failure passes through unchanged, and no closure runs for
// it. As in Combine, `ignoreOutput()` returns `Empty`, which drops a failure too.

extension Result.Publisher where Output: Equatable {
  /// Whether the value equals `output`, or the failure.
  ///
  /// ![Marble diagram: contains("b")](contains)
  public func contains(_ output: Output) -> Result<Bool, Failure>.Publisher {
    Result<Bool, Failure>.Publisher(result.map { $0 == output })
  }

  /// Itself.
  ///
  /// ![Marble diagram: removeDuplicates()](removeDuplicates)
  public func removeDuplicates() -> Result<Output, Failure>.Publisher { self }
}

extension Result.Publisher where Output: Comparable {
  /// Itself.
  ///
  /// ![Marble diagram: min()](min)
  public func min() -> Result<Output, Failure>.Publisher { self }

  /// Itself.
  ///
  /// ![Marble diagram: max()](max)
  public func max() -> Result<Output, Failure>.Publisher { self }
}

extension Result {
  /// `body(value)`, the error it throws, or this result's failure.
  @usableFromInline
  func attemptMap<NewSuccess>(_ body: (Success) throws -> NewSuccess) -> Result<
    NewSuccess, any Error
  > {
    switch self {
    case .success(let value): Result<NewSuccess, any Error> { try body(value) }
    case .failure(let error): .failure(error)
    }
  }

  /// The success after calling `compare(value, value)` once, as Combine's single-value `tryMin`,
  /// `tryMax` and `tryRemoveDuplicates` do; an error it throws becomes the failure.
  func checkedOnce(by compare: (Success, Success) throws -> Bool) -> Result<Success, any Error> {
    attemptMap { value in
      _ = try compare(value, value)
      return value
    }
  }
}

extension Result.Publisher {
  /// Whether the value satisfies `predicate`, or the failure.
  ///
  /// ![Marble diagram: allSatisfy { $0 < 5 }](allSatisfy)
  public func allSatisfy(_ predicate: (Output) -> Bool) -> Result<Bool, Failure>.Publisher {
    Result<Bool, Failure>.Publisher(result.map(predicate))
  }

  /// Whether the value satisfies `predicate`, the error it throws, or the failure.
  ///
  /// ![Marble diagram: tryAllSatisfy { $0 == 0 ? throw : $0 < 5 }](tryAllSatisfy)
  public func tryAllSatisfy(_ predicate: (Output) throws -> Bool)
    -> Result<Bool, any Error>
    .Publisher
  {
    Result<Bool, any Error>.Publisher(result.attemptMap(predicate))
  }

  /// Whether the value satisfies `predicate`, or the failure.
  ///
  /// ![Marble diagram: contains { $0 > 5 }](contains-where)
  public func contains(where predicate: (Output) -> Bool) -> Result<Bool, Failure>.Publisher {
    Result<Bool, Failure>.Publisher(result.map(predicate))
  }

  /// Whether the value satisfies `predicate`, the error it throws, or the failure.
  ///
  /// ![Marble diagram: tryContains { $0 == 0 ? throw : $0 > 5 }](tryContains)
  public func tryContains(where predicate: (Output) throws -> Bool)
    -> Result<Bool, any Error>
    .Publisher
  {
    Result<Bool, any Error>.Publisher(result.attemptMap(predicate))
  }

  /// The value in an array, or the failure.
  ///
  /// ![Marble diagram: collect()](collect)
  public func collect() -> Result<[Output], Failure>.Publisher {
    Result<[Output], Failure>.Publisher(result.map { [$0] })
  }

  /// Itself.
  ///
  /// ![Marble diagram: min { $0 % 5 < $1 % 5 }](min-by)
  public func min(by areInIncreasingOrder: (Output, Output) -> Bool)
    -> Result<Output, Failure>
    .Publisher
  { self }

  /// The value or the failure, with `any Error` as failure type; on a value,
  /// `areInIncreasingOrder(value, value)` is called once (as Combine does) and an error it throws
  /// becomes the failure.
  ///
  /// ![Marble diagram: tryMin { $1 == 0 ? throw : $0 < $1 }](tryMin)
  public func tryMin(by areInIncreasingOrder: (Output, Output) throws -> Bool)
    -> Result<
      Output, any Error
    >.Publisher
  {
    Result<Output, any Error>.Publisher(result.checkedOnce(by: areInIncreasingOrder))
  }

  /// Itself.
  ///
  /// ![Marble diagram: max { $0 % 5 < $1 % 5 }](max-by)
  public func max(by areInIncreasingOrder: (Output, Output) -> Bool)
    -> Result<Output, Failure>
    .Publisher
  { self }

  /// The value or the failure, with `any Error` as failure type; on a value,
  /// `areInIncreasingOrder(value, value)` is called once (as Combine does) and an error it throws
  /// becomes the failure.
  ///
  /// ![Marble diagram: tryMax { $1 == 0 ? throw : $0 < $1 }](tryMax)
  public func tryMax(by areInIncreasingOrder: (Output, Output) throws -> Bool)
    -> Result<
      Output, any Error
    >.Publisher
  {
    Result<Output, any Error>.Publisher(result.checkedOnce(by: areInIncreasingOrder))
  }

  /// One, or the failure.
  ///
  /// ![Marble diagram: count()](count)
  public func count() -> Result<Int, Failure>.Publisher {
    Result<Int, Failure>.Publisher(result.map { _ in 1 })
  }

  /// Itself.
  ///
  /// ![Marble diagram: first()](first)
  public func first() -> Result<Output, Failure>.Publisher { self }

  /// Itself.
  ///
  /// ![Marble diagram: last()](last)
  public func last() -> Result<Output, Failure>.Publisher { self }

  /// Finishes without a value (as in Combine, a failure is not published either).
  ///
  /// ![Marble diagram: ignoreOutput()](ignoreOutput)
  public func ignoreOutput() -> Empty<Output, Failure> { Empty<Output, Failure>() }

  /// The transformed value, or the failure.
  ///
  /// ![Marble diagram: map { $0 * 10 }](map)
  public func map<ElementOfResult>(_ transform: (Output) -> ElementOfResult)
    -> Result<
      ElementOfResult, Failure
    >.Publisher
  {
    Result<ElementOfResult, Failure>.Publisher(result.map(transform))
  }

  /// The transformed value, the error `transform` throws, or the failure.
  ///
  /// ![Marble diagram: tryMap { 12 / $0 }  // throws on 0](tryMap)
  public func tryMap<ElementOfResult>(
    _ transform: (Output) throws -> ElementOfResult
  ) -> Result<ElementOfResult, any Error>.Publisher {
    Result<ElementOfResult, any Error>.Publisher(result.attemptMap(transform))
  }

  /// The value, or the transformed failure.
  ///
  /// ![Marble diagram: mapError { _ in URLError(.timedOut) }](mapError)
  public func mapError<TransformedFailure: Error>(
    _ transform: (Failure) -> TransformedFailure
  ) -> Result<Output, TransformedFailure>.Publisher {
    Result<Output, TransformedFailure>.Publisher(result.mapError(transform))
  }

  /// Itself.
  ///
  /// ![Marble diagram: removeDuplicates { abs($0 - $1) < 2 }](removeDuplicates-by)
  public func removeDuplicates(by predicate: (Output, Output) -> Bool)
    -> Result<
      Output, Failure
    >.Publisher
  { self }

  /// The value or the failure, with `any Error` as failure type; on a value,
  /// `predicate(value, value)` is called once (as Combine does) and an error it throws becomes the
  /// failure.
  ///
  /// ![Marble diagram: tryRemoveDuplicates { $1 == 0 ? throw : $0 == $1 }](tryRemoveDuplicates)
  public func tryRemoveDuplicates(by predicate: (Output, Output) throws -> Bool)
    -> Result<
      Output, any Error
    >.Publisher
  {
    Result<Output, any Error>.Publisher(result.checkedOnce(by: predicate))
  }

  /// The value, or `output` in place of the failure.
  ///
  /// ![Marble diagram: replaceError(with: 0)](replaceError)
  public func replaceError(with output: Output) -> Result<Output, Never>.Publisher {
    switch result {
    case .success(let value): Result<Output, Never>.Publisher(value)
    case .failure: Result<Output, Never>.Publisher(output)
    }
  }

  /// Itself: it is never empty.
  ///
  /// ![Marble diagram: replaceEmpty(with: "z")](replaceEmpty)
  public func replaceEmpty(with output: Output) -> Result<Output, Failure>.Publisher { self }

  /// Itself: resubscribing gives the same result.
  ///
  /// ![Marble diagram: input.retry(1)](retry)
  public func retry(_ times: Int) -> Result<Output, Failure>.Publisher { self }

  /// `nextPartialResult(initialResult, value)`, or the failure.
  ///
  /// ![Marble diagram: reduce(0, +)](reduce)
  public func reduce<Accumulator>(
    _ initialResult: Accumulator, _ nextPartialResult: (Accumulator, Output) -> Accumulator
  ) -> Result<Accumulator, Failure>.Publisher {
    Result<Accumulator, Failure>.Publisher(result.map { nextPartialResult(initialResult, $0) })
  }

  /// `nextPartialResult(initialResult, value)`, the error it throws, or the failure.
  ///
  /// ![Marble diagram: tryReduce(0) { sum, n in n == 0 ? throw : sum + n }](tryReduce)
  public func tryReduce<Accumulator>(
    _ initialResult: Accumulator,
    _ nextPartialResult: (Accumulator, Output) throws -> Accumulator
  ) -> Result<Accumulator, any Error>.Publisher {
    Result<Accumulator, any Error>.Publisher(
      result.attemptMap { try nextPartialResult(initialResult, $0) })
  }

  /// `nextPartialResult(initialResult, value)`, or the failure.
  ///
  /// ![Marble diagram: scan(0, +)](scan)
  public func scan<ElementOfResult>(
    _ initialResult: ElementOfResult,
    _ nextPartialResult: (ElementOfResult, Output) -> ElementOfResult
  ) -> Result<ElementOfResult, Failure>.Publisher {
    reduce(initialResult, nextPartialResult)
  }

  /// `nextPartialResult(initialResult, value)`, the error it throws, or the failure.
  ///
  /// ![Marble diagram: tryScan(0) { sum, n in n == 0 ? throw : sum + n }](tryScan)
  public func tryScan<ElementOfResult>(
    _ initialResult: ElementOfResult,
    _ nextPartialResult: (ElementOfResult, Output) throws -> ElementOfResult
  ) -> Result<ElementOfResult, any Error>.Publisher {
    tryReduce(initialResult, nextPartialResult)
  }
}

extension Result.Publisher where Failure == Never {
  /// The value, as a publisher whose failure type is `failureType`.
  ///
  /// ![Marble diagram: setFailureType(to: Boom.self)](setFailureType)
  public func setFailureType<NewFailure: Error>(to failureType: NewFailure.Type)
    -> Result<
      Output, NewFailure
    >.Publisher
  {
    switch result {
    case .success(let value): Result<Output, NewFailure>.Publisher(value)
    }
  }
}
