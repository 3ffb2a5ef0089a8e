import SluiceCore
import SluiceTesting
import Testing

/// Operators on `Just`, `Optional.Publisher`, `Result.Publisher` and `Publishers.Sequence` return
/// Combine's specialised types (each `let` below is annotated with the type Combine returns, so
/// a wrong type fails to compile) and publish what the generic operators would, except where
/// Combine's own specialisations differ (noted).
@Suite("Specialised operator result types")
struct SpecialisedOperatorTests {
  /// What `publisher` publishes to a sink that requests `.unlimited`.
  func outcome<P: Publisher>(_ publisher: P) -> (values: [P.Output], finished: Bool)
  where P.Failure == Never {
    let values = Box<[P.Output]>([])
    let finished = Box<Bool>(false)
    let cancellable = publisher.sink(
      receiveCompletion: { _ in finished.set(true) },
      receiveValue: { value in values.update { $0?.append(value) } })
    cancellable.cancel()
    return (values.value ?? [], finished.value ?? false)
  }

  /// The values of `publisher`, or the error it failed with.
  func result<P: Publisher>(_ publisher: P) -> Result<[P.Output], P.Failure> {
    let values = Box<[P.Output]>([])
    let failure = Box<P.Failure>()
    let cancellable = publisher.sink(
      receiveCompletion: { if case .failure(let error) = $0 { failure.set(error) } },
      receiveValue: { value in values.update { $0?.append(value) } })
    cancellable.cancel()
    if let error = failure.value { return .failure(error) }
    return .success(values.value ?? [])
  }

  @Test func justOperatorsReturnSingleValuePublishers() throws {
    let just = Just(4)
    let mapped: Just<String> = just.map { "\($0)" }
    let tried: Result<Int, any Error>.Publisher = just.tryMap { $0 + 1 }
    let filtered: Optional<Int>.Publisher = just.filter { $0 > 10 }
    let compact: Optional<Int>.Publisher = just.compactMap { $0 % 2 == 0 ? $0 / 2 : nil }
    let counted: Just<Int> = just.count()
    let collected: Just<[Int]> = just.collect()
    let contained: Just<Bool> = just.contains(4)
    let satisfied: Just<Bool> = just.allSatisfy { $0 > 0 }
    let reduced: Result<Int, Never>.Publisher = just.reduce(10, +)
    let scanned: Result<Int, Never>.Publisher = just.scan(1, *)
    let dropped: Optional<Int>.Publisher = just.dropFirst()
    let kept: Optional<Int>.Publisher = just.dropFirst(0)
    let prefixed: Optional<Int>.Publisher = just.prefix(1)
    let atZero: Optional<Int>.Publisher = just.output(at: 0)
    let inRange: Optional<Int>.Publisher = just.output(in: 1...)
    let ignored: Empty<Int, Never> = just.ignoreOutput()
    let failing: Result<Int, TestError>.Publisher = just.setFailureType(to: TestError.self)
    let minimum: Just<Int> = just.min()
    let first: Just<Int> = just.first()
    let replaced: Just<Int> = just.replaceEmpty(with: 0)
    let retried: Just<Int> = just.retry(3)
    #expect(outcome(mapped).values == ["4"])
    #expect(try result(tried).get() == [5])
    #expect(outcome(filtered) == ([], true))
    #expect(outcome(compact).values == [2])
    #expect(outcome(counted).values == [1])
    #expect(outcome(collected).values == [[4]])
    #expect(outcome(contained).values == [true])
    #expect(outcome(satisfied).values == [true])
    #expect(outcome(reduced).values == [14])
    #expect(outcome(scanned).values == [4])
    #expect(outcome(dropped).values.isEmpty && outcome(kept).values == [4])
    #expect(outcome(prefixed).values == [4] && outcome(atZero).values == [4])
    #expect(outcome(inRange).values.isEmpty)
    #expect(outcome(ignored) == ([], true))
    #expect(try result(failing).get() == [4])
    #expect(outcome(minimum).values == [4] && outcome(first).values == [4])
    #expect(outcome(replaced).values == [4] && outcome(retried).values == [4])
  }

  @Test func justTryOperatorsCatchTheError() {
    let failed: Result<Bool, any Error>.Publisher = Just(1).tryAllSatisfy { _ in
      throw TestError(code: 7)
    }
    #expect(throws: TestError(code: 7)) { try result(failed).get() }
  }

  @Test func optionalOperatorsFollowCombineForEmptyPublishers() {
    let some = Optional(3).publisher
    let none = Optional<Int>.none.publisher
    let mapped: Optional<Int>.Publisher = some.map { $0 * 2 }
    let counted: Optional<Int>.Publisher = some.count()
    let collected: Optional<[Int]>.Publisher = none.collect()
    let satisfied: Optional<Bool>.Publisher = none.allSatisfy { _ in false }
    let countedNone: Optional<Int>.Publisher = none.count()
    let replaced: Just<Int> = none.replaceEmpty(with: 8)
    let reduced: Optional<Int>.Publisher = none.reduce(0, +)
    #expect(outcome(mapped).values == [6])
    #expect(outcome(counted).values == [1])
    // Combine's specialisations: an empty Optional.Publisher collects to [] but publishes
    // nothing for allSatisfy, count and reduce.
    #expect(outcome(collected).values == [[]])
    #expect(outcome(satisfied) == ([], true))
    #expect(outcome(countedNone) == ([], true))
    #expect(outcome(reduced) == ([], true))
    #expect(outcome(replaced).values == [8])
  }

  @Test func resultOperatorsPassFailuresThrough() throws {
    let success = Result<Int, TestError>.success(5).publisher
    let failure = Result<Int, TestError>.failure(TestError(code: 2)).publisher
    let mapped: Result<Int, TestError>.Publisher = success.map { $0 + 1 }
    let mappedFailure: Result<Int, TestError>.Publisher = failure.map { $0 + 1 }
    let tried: Result<Int, any Error>.Publisher = failure.tryMap { $0 }
    let remapped: Result<Int, TestError>.Publisher = failure.mapError {
      TestError(code: $0.code * 10)
    }
    let replaced: Result<Int, Never>.Publisher = failure.replaceError(with: 0)
    let counted: Result<Int, TestError>.Publisher = success.count()
    let contained: Result<Bool, TestError>.Publisher = success.contains(5)
    let minimum: Result<Int, any Error>.Publisher = success.tryMin(by: <)
    #expect(try result(mapped).get() == [6])
    #expect(throws: TestError(code: 2)) { try result(mappedFailure).get() }
    #expect(throws: TestError(code: 2)) { try result(tried).get() }
    #expect(throws: TestError(code: 20)) { try result(remapped).get() }
    #expect(outcome(replaced).values == [0])
    #expect(try result(counted).get() == [1])
    #expect(try result(contained).get() == [true])
    #expect(try result(minimum).get() == [5])
  }

  @Test func sequenceOperatorsReturnSequencesOrReductions() throws {
    let numbers = [3, 1, 1, 4, 1, 5].publisher
    let mapped: Publishers.Sequence<[Int], Never> = numbers.map { $0 * 10 }
    let filtered: Publishers.Sequence<[Int], Never> = numbers.filter { $0 > 1 }
    let deduplicated: Publishers.Sequence<[Int], Never> = numbers.removeDuplicates()
    let scanned: Publishers.Sequence<[Int], Never> = numbers.scan(0, +)
    let dropped: Publishers.Sequence<DropFirstSequence<[Int]>, Never> = numbers.dropFirst(2)
    let prefixed: Publishers.Sequence<PrefixSequence<[Int]>, Never> = numbers.prefix(2)
    let whileDropped: Publishers.Sequence<DropWhileSequence<[Int]>, Never> = numbers.drop {
      $0 > 2
    }
    let counted: Just<Int> = numbers.count()
    let reduced: Result<Int, Never>.Publisher = numbers.reduce(0, +)
    let minimum: Optional<Int>.Publisher = numbers.min()
    let last: Optional<Int>.Publisher = numbers.last()
    let atIndex: Optional<Int>.Publisher = numbers.output(at: 3)
    let beyond: Optional<Int>.Publisher = numbers.output(at: 30)
    let slice: Publishers.Sequence<[Int], Never> = numbers.output(in: 1..<3)
    let collected: Result<[Int], Never>.Publisher = numbers.collect()
    let failing: Publishers.Sequence<[Int], TestError> = numbers.setFailureType(to: TestError.self)
    let countedFailing: Result<Int, TestError>.Publisher = failing.count()
    let nils: Publishers.Sequence<[Int?], Never> = [1, nil, 3].publisher.replaceNil(with: 0)
    #expect(outcome(mapped).values == [30, 10, 10, 40, 10, 50])
    #expect(outcome(filtered).values == [3, 4, 5])
    #expect(outcome(deduplicated).values == [3, 1, 4, 1, 5])
    #expect(outcome(scanned).values == [3, 4, 5, 9, 10, 15])
    #expect(outcome(dropped).values == [1, 4, 1, 5])
    #expect(outcome(prefixed).values == [3, 1])
    #expect(outcome(whileDropped).values == [1, 1, 4, 1, 5])
    #expect(outcome(counted).values == [6])
    #expect(outcome(reduced).values == [15])
    #expect(outcome(minimum).values == [1] && outcome(last).values == [5])
    #expect(outcome(atIndex).values == [4] && outcome(beyond) == ([], true))
    #expect(outcome(slice).values == [1, 1])
    #expect(outcome(collected).values == [[3, 1, 1, 4, 1, 5]])
    #expect(try result(countedFailing).get() == [6])
    #expect(outcome(nils).values == [1, 0, 3])
  }

  @Test func mapAfterMapFusesIntoOneMap() {
    let source = PassthroughSubject<Int, Never>()
    let fused: Publishers.Map<PassthroughSubject<Int, Never>, String> =
      source.map { $0 + 1 }.map { "\($0)" }
    let values = Box<[String]>([])
    let cancellable = fused.sink { value in values.update { $0?.append(value) } }
    source.send(1)
    #expect(values.value == ["2"])
    cancellable.cancel()
  }
}
