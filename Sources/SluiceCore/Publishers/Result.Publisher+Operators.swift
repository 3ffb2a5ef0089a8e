// Operators on `Result.Publisher` with Combine's specialised result types.
//
// One value or one failure: Combine computes these when they are applied and returns another
// `Result.Publisher` (or `Empty`). A failure passes through unchanged, and no closure runs for
// it. As in Combine, `ignoreOutput()` returns `Empty`, which drops a failure too.

extension Result.Publisher where Output: Equatable {
  /// Whether the value equals `output`, or the failure.
  public func contains(_ output: Output) -> Result<Bool, Failure>.Publisher {
    Result<Bool, Failure>.Publisher(result.map { $0 == output })
  }

  /// Itself.
  public func removeDuplicates() -> Result<Output, Failure>.Publisher { self }
}

extension Result.Publisher where Output: Comparable {
  /// Itself.
  public func min() -> Result<Output, Failure>.Publisher { self }

  /// Itself.
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
  public func allSatisfy(_ predicate: (Output) -> Bool) -> Result<Bool, Failure>.Publisher {
    Result<Bool, Failure>.Publisher(result.map(predicate))
  }

  /// Whether the value satisfies `predicate`, the error it throws, or the failure.
  public func tryAllSatisfy(_ predicate: (Output) throws -> Bool)
    -> Result<Bool, any Error>
    .Publisher
  {
    Result<Bool, any Error>.Publisher(result.attemptMap(predicate))
  }

  /// Whether the value satisfies `predicate`, or the failure.
  public func contains(where predicate: (Output) -> Bool) -> Result<Bool, Failure>.Publisher {
    Result<Bool, Failure>.Publisher(result.map(predicate))
  }

  /// Whether the value satisfies `predicate`, the error it throws, or the failure.
  public func tryContains(where predicate: (Output) throws -> Bool)
    -> Result<Bool, any Error>
    .Publisher
  {
    Result<Bool, any Error>.Publisher(result.attemptMap(predicate))
  }

  /// The value in an array, or the failure.
  public func collect() -> Result<[Output], Failure>.Publisher {
    Result<[Output], Failure>.Publisher(result.map { [$0] })
  }

  /// Itself.
  public func min(by areInIncreasingOrder: (Output, Output) -> Bool)
    -> Result<Output, Failure>
    .Publisher
  { self }

  /// The value or the failure, with `any Error` as failure type; on a value,
  /// `areInIncreasingOrder(value, value)` is called once (as Combine does) and an error it throws
  /// becomes the failure.
  public func tryMin(by areInIncreasingOrder: (Output, Output) throws -> Bool)
    -> Result<
      Output, any Error
    >.Publisher
  {
    Result<Output, any Error>.Publisher(result.checkedOnce(by: areInIncreasingOrder))
  }

  /// Itself.
  public func max(by areInIncreasingOrder: (Output, Output) -> Bool)
    -> Result<Output, Failure>
    .Publisher
  { self }

  /// The value or the failure, with `any Error` as failure type; on a value,
  /// `areInIncreasingOrder(value, value)` is called once (as Combine does) and an error it throws
  /// becomes the failure.
  public func tryMax(by areInIncreasingOrder: (Output, Output) throws -> Bool)
    -> Result<
      Output, any Error
    >.Publisher
  {
    Result<Output, any Error>.Publisher(result.checkedOnce(by: areInIncreasingOrder))
  }

  /// One, or the failure.
  public func count() -> Result<Int, Failure>.Publisher {
    Result<Int, Failure>.Publisher(result.map { _ in 1 })
  }

  /// Itself.
  public func first() -> Result<Output, Failure>.Publisher { self }

  /// Itself.
  public func last() -> Result<Output, Failure>.Publisher { self }

  /// Finishes without a value (as in Combine, a failure is not published either).
  public func ignoreOutput() -> Empty<Output, Failure> { Empty<Output, Failure>() }

  /// The transformed value, or the failure.
  public func map<ElementOfResult>(_ transform: (Output) -> ElementOfResult)
    -> Result<
      ElementOfResult, Failure
    >.Publisher
  {
    Result<ElementOfResult, Failure>.Publisher(result.map(transform))
  }

  /// The transformed value, the error `transform` throws, or the failure.
  public func tryMap<ElementOfResult>(
    _ transform: (Output) throws -> ElementOfResult
  ) -> Result<ElementOfResult, any Error>.Publisher {
    Result<ElementOfResult, any Error>.Publisher(result.attemptMap(transform))
  }

  /// The value, or the transformed failure.
  public func mapError<TransformedFailure: Error>(
    _ transform: (Failure) -> TransformedFailure
  ) -> Result<Output, TransformedFailure>.Publisher {
    Result<Output, TransformedFailure>.Publisher(result.mapError(transform))
  }

  /// Itself.
  public func removeDuplicates(by predicate: (Output, Output) -> Bool)
    -> Result<
      Output, Failure
    >.Publisher
  { self }

  /// The value or the failure, with `any Error` as failure type; on a value,
  /// `predicate(value, value)` is called once (as Combine does) and an error it throws becomes the
  /// failure.
  public func tryRemoveDuplicates(by predicate: (Output, Output) throws -> Bool)
    -> Result<
      Output, any Error
    >.Publisher
  {
    Result<Output, any Error>.Publisher(result.checkedOnce(by: predicate))
  }

  /// The value, or `output` in place of the failure.
  public func replaceError(with output: Output) -> Result<Output, Never>.Publisher {
    switch result {
    case .success(let value): Result<Output, Never>.Publisher(value)
    case .failure: Result<Output, Never>.Publisher(output)
    }
  }

  /// Itself: it is never empty.
  public func replaceEmpty(with output: Output) -> Result<Output, Failure>.Publisher { self }

  /// Itself: resubscribing gives the same result.
  public func retry(_ times: Int) -> Result<Output, Failure>.Publisher { self }

  /// `nextPartialResult(initialResult, value)`, or the failure.
  public func reduce<Accumulator>(
    _ initialResult: Accumulator, _ nextPartialResult: (Accumulator, Output) -> Accumulator
  ) -> Result<Accumulator, Failure>.Publisher {
    Result<Accumulator, Failure>.Publisher(result.map { nextPartialResult(initialResult, $0) })
  }

  /// `nextPartialResult(initialResult, value)`, the error it throws, or the failure.
  public func tryReduce<Accumulator>(
    _ initialResult: Accumulator,
    _ nextPartialResult: (Accumulator, Output) throws -> Accumulator
  ) -> Result<Accumulator, any Error>.Publisher {
    Result<Accumulator, any Error>.Publisher(
      result.attemptMap { try nextPartialResult(initialResult, $0) })
  }

  /// `nextPartialResult(initialResult, value)`, or the failure.
  public func scan<ElementOfResult>(
    _ initialResult: ElementOfResult,
    _ nextPartialResult: (ElementOfResult, Output) -> ElementOfResult
  ) -> Result<ElementOfResult, Failure>.Publisher {
    reduce(initialResult, nextPartialResult)
  }

  /// `nextPartialResult(initialResult, value)`, the error it throws, or the failure.
  public func tryScan<ElementOfResult>(
    _ initialResult: ElementOfResult,
    _ nextPartialResult: (ElementOfResult, Output) throws -> ElementOfResult
  ) -> Result<ElementOfResult, any Error>.Publisher {
    tryReduce(initialResult, nextPartialResult)
  }
}

extension Result.Publisher where Failure == Never {
  /// The value, as a publisher whose failure type is `failureType`.
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
