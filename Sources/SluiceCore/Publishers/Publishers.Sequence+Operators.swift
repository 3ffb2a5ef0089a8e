// Operators on `Publishers.Sequence` with Combine's specialised result types.
//
// A sequence publisher's values are all known up front, so Combine applies these operators to
// the sequence itself when they are applied — eagerly, so `map` and `filter` build an array —
// and returns another `Publishers.Sequence` (or a single-value publisher for reductions). The
// types match Combine's, so annotations written for Combine compile unchanged. To stream
// instead (one value per unit of demand, closures run on delivery), wrap the sequence
// publisher in `Deferred` or erase it first.

extension Publishers.Sequence where Failure == Never {
  /// The smallest element by `areInIncreasingOrder`; nothing when empty.
  ///
  /// ![Marble diagram: min { $0 % 5 < $1 % 5 }](min-by)
  public func min(by areInIncreasingOrder: (Elements.Element, Elements.Element) -> Bool)
    -> Optional<Elements.Element>.Publisher
  {
    Optional<Elements.Element>.Publisher(sequence.min(by: areInIncreasingOrder))
  }

  /// The largest element by `areInIncreasingOrder`; nothing when empty.
  ///
  /// ![Marble diagram: max { $0 % 5 < $1 % 5 }](max-by)
  public func max(by areInIncreasingOrder: (Elements.Element, Elements.Element) -> Bool)
    -> Optional<Elements.Element>.Publisher
  {
    Optional<Elements.Element>.Publisher(sequence.max(by: areInIncreasingOrder))
  }

  /// The first element that satisfies `predicate`, if any.
  ///
  /// ![Marble diagram: first { $0 > 5 }](first-where)
  public func first(where predicate: (Elements.Element) -> Bool)
    -> Optional<Elements.Element>
    .Publisher
  {
    Optional<Elements.Element>.Publisher(sequence.first(where: predicate))
  }
}

extension Publishers.Sequence {
  /// Whether every element satisfies `predicate`.
  ///
  /// ![Marble diagram: allSatisfy { $0 < 5 }](allSatisfy)
  public func allSatisfy(_ predicate: (Elements.Element) -> Bool)
    -> Result<Bool, Failure>
    .Publisher
  {
    Result<Bool, Failure>.Publisher(sequence.allSatisfy(predicate))
  }

  /// Whether every element satisfies `predicate`, or the error it throws.
  ///
  /// ![Marble diagram: tryAllSatisfy { $0 == 0 ? throw : $0 < 5 }](tryAllSatisfy)
  public func tryAllSatisfy(_ predicate: (Elements.Element) throws -> Bool)
    -> Result<
      Bool, any Error
    >.Publisher
  {
    Result<Bool, any Error>.Publisher(Result { try sequence.allSatisfy(predicate) })
  }

  /// Every element, in one array.
  ///
  /// ![Marble diagram: collect()](collect)
  public func collect() -> Result<[Elements.Element], Failure>.Publisher {
    Result<[Elements.Element], Failure>.Publisher(Array(sequence))
  }

  /// The non-`nil` results of `transform`.
  ///
  /// ![Marble diagram: compactMap { $0 % 2 == 0 ? $0 * 10 : nil }](compactMap)
  public func compactMap<ElementOfResult>(
    _ transform: (Elements.Element) -> ElementOfResult?
  ) -> Publishers.Sequence<[ElementOfResult], Failure> {
    Publishers.Sequence<[ElementOfResult], Failure>(sequence: sequence.compactMap(transform))
  }

  /// Whether an element satisfies `predicate`.
  ///
  /// ![Marble diagram: contains { $0 > 5 }](contains-where)
  public func contains(where predicate: (Elements.Element) -> Bool)
    -> Result<Bool, Failure>
    .Publisher
  {
    Result<Bool, Failure>.Publisher(sequence.contains(where: predicate))
  }

  /// Whether an element satisfies `predicate`, or the error it throws.
  ///
  /// ![Marble diagram: tryContains { $0 == 0 ? throw : $0 > 5 }](tryContains)
  public func tryContains(where predicate: (Elements.Element) throws -> Bool)
    -> Result<
      Bool, any Error
    >.Publisher
  {
    Result<Bool, any Error>.Publisher(Result { try sequence.contains(where: predicate) })
  }

  /// The elements after the leading ones that satisfy `predicate` (evaluated lazily, as the
  /// standard library's `drop(while:)`).
  ///
  /// ![Marble diagram: drop { $0 < 5 }](drop-while)
  public func drop(while predicate: @escaping (Elements.Element) -> Bool)
    -> Publishers.Sequence<
      DropWhileSequence<Elements>, Failure
    >
  {
    Publishers.Sequence<DropWhileSequence<Elements>, Failure>(
      sequence: sequence.drop(while: predicate))
  }

  /// The elements after the first `count`. Traps when `count` is negative.
  ///
  /// ![Marble diagram: dropFirst(2)](dropFirst)
  public func dropFirst(_ count: Int = 1)
    -> Publishers.Sequence<
      DropFirstSequence<Elements>, Failure
    >
  {
    if count < 0 { Violation.negativeCount(count, operator: "dropFirst") }
    return Publishers.Sequence<DropFirstSequence<Elements>, Failure>(
      sequence: sequence.dropFirst(count))
  }

  /// The elements that satisfy `isIncluded`.
  ///
  /// ![Marble diagram: filter { $0 % 2 == 0 }](filter)
  public func filter(_ isIncluded: (Elements.Element) -> Bool)
    -> Publishers.Sequence<
      [Elements.Element], Failure
    >
  {
    Publishers.Sequence<[Elements.Element], Failure>(sequence: sequence.filter(isIncluded))
  }

  /// Finishes without a value.
  ///
  /// ![Marble diagram: ignoreOutput()](ignoreOutput)
  public func ignoreOutput() -> Empty<Elements.Element, Failure> {
    Empty<Elements.Element, Failure>()
  }

  /// Every element, transformed.
  ///
  /// ![Marble diagram: map { $0 * 10 }](map)
  public func map<ElementOfResult>(
    _ transform: (Elements.Element) -> ElementOfResult
  ) -> Publishers.Sequence<[ElementOfResult], Failure> {
    Publishers.Sequence<[ElementOfResult], Failure>(sequence: sequence.map(transform))
  }

  /// The first `maxLength` elements. Traps when `maxLength` is negative.
  ///
  /// ![Marble diagram: prefix(2)](prefix)
  public func prefix(_ maxLength: Int) -> Publishers.Sequence<PrefixSequence<Elements>, Failure> {
    if maxLength < 0 { Violation.negativeCount(maxLength, operator: "prefix") }
    return Publishers.Sequence<PrefixSequence<Elements>, Failure>(
      sequence: sequence.prefix(maxLength))
  }

  /// The leading elements that satisfy `predicate`.
  ///
  /// ![Marble diagram: prefix { $0 < 5 }](prefix-while)
  public func prefix(while predicate: (Elements.Element) -> Bool)
    -> Publishers.Sequence<
      [Elements.Element], Failure
    >
  {
    Publishers.Sequence<[Elements.Element], Failure>(sequence: sequence.prefix(while: predicate))
  }

  /// The result of combining every element with `nextPartialResult`, from `initialResult`.
  ///
  /// ![Marble diagram: reduce(0, +)](reduce)
  public func reduce<Accumulator>(
    _ initialResult: Accumulator,
    _ nextPartialResult: @escaping (Accumulator, Elements.Element) -> Accumulator
  ) -> Result<Accumulator, Failure>.Publisher {
    Result<Accumulator, Failure>.Publisher(sequence.reduce(initialResult, nextPartialResult))
  }

  /// The result of combining every element with `nextPartialResult`, or the error it throws.
  ///
  /// ![Marble diagram: tryReduce(0) { sum, n in n == 0 ? throw : sum + n }](tryReduce)
  public func tryReduce<Accumulator>(
    _ initialResult: Accumulator,
    _ nextPartialResult: @escaping (Accumulator, Elements.Element) throws -> Accumulator
  ) -> Result<Accumulator, any Error>.Publisher {
    Result<Accumulator, any Error>.Publisher(
      Result { try sequence.reduce(initialResult, nextPartialResult) })
  }

  /// Every element, with `nil` replaced by `output` (the element type stays optional, as in
  /// Combine).
  ///
  /// ![Marble diagram: replaceNil(with: 0)](replaceNil)
  public func replaceNil<ElementOfResult>(with output: ElementOfResult)
    -> Publishers.Sequence<
      [Elements.Element], Failure
    > where Elements.Element == ElementOfResult?
  {
    Publishers.Sequence<[Elements.Element], Failure>(
      sequence: sequence.map { .some($0 ?? output) })
  }

  /// Every running result of `nextPartialResult`, from `initialResult`.
  ///
  /// ![Marble diagram: scan(0, +)](scan)
  public func scan<ElementOfResult>(
    _ initialResult: ElementOfResult,
    _ nextPartialResult: @escaping (ElementOfResult, Elements.Element) -> ElementOfResult
  ) -> Publishers.Sequence<[ElementOfResult], Failure> {
    var accumulator = initialResult
    var results: [ElementOfResult] = []
    for element in sequence {
      accumulator = nextPartialResult(accumulator, element)
      results.append(accumulator)
    }
    return Publishers.Sequence<[ElementOfResult], Failure>(sequence: results)
  }

  /// The same elements, as a publisher whose failure type is `error`.
  ///
  /// ![Marble diagram: setFailureType(to: Boom.self)](setFailureType)
  public func setFailureType<NewFailure: Error>(to error: NewFailure.Type)
    -> Publishers
    .Sequence<Elements, NewFailure>
  {
    Publishers.Sequence<Elements, NewFailure>(sequence: sequence)
  }
}

extension Publishers.Sequence where Elements.Element: Equatable {
  /// The elements without consecutive repeats.
  ///
  /// ![Marble diagram: removeDuplicates()](removeDuplicates)
  public func removeDuplicates() -> Publishers.Sequence<[Elements.Element], Failure> {
    var kept: [Elements.Element] = []
    for element in sequence where kept.last != element { kept.append(element) }
    return Publishers.Sequence<[Elements.Element], Failure>(sequence: kept)
  }

  /// Whether an element equals `output`.
  ///
  /// ![Marble diagram: contains("b")](contains)
  public func contains(_ output: Elements.Element) -> Result<Bool, Failure>.Publisher {
    Result<Bool, Failure>.Publisher(sequence.contains(output))
  }
}

extension Publishers.Sequence where Failure == Never, Elements.Element: Comparable {
  /// The smallest element; nothing when empty.
  ///
  /// ![Marble diagram: min()](min)
  public func min() -> Optional<Elements.Element>.Publisher {
    Optional<Elements.Element>.Publisher(sequence.min())
  }

  /// The largest element; nothing when empty.
  ///
  /// ![Marble diagram: max()](max)
  public func max() -> Optional<Elements.Element>.Publisher {
    Optional<Elements.Element>.Publisher(sequence.max())
  }
}

extension Publishers.Sequence where Elements: Collection, Failure == Never {
  /// The first element; nothing when empty.
  ///
  /// ![Marble diagram: first()](first)
  public func first() -> Optional<Elements.Element>.Publisher {
    Optional<Elements.Element>.Publisher(sequence.first)
  }

  /// The element at `index`; nothing when out of range.
  ///
  /// ![Marble diagram: output(at: 1)](output-at)
  public func output(at index: Elements.Index) -> Optional<Elements.Element>.Publisher {
    Optional<Elements.Element>.Publisher(
      sequence.indices.contains(index) ? sequence[index] : nil)
  }
}

extension Publishers.Sequence where Elements: Collection {
  /// The number of elements.
  ///
  /// ![Marble diagram: count()](count)
  public func count() -> Result<Int, Failure>.Publisher {
    Result<Int, Failure>.Publisher(sequence.count)
  }

  /// The elements at the indices in `range`, which must be valid for the collection.
  ///
  /// ![Marble diagram: output(in: 1...2)](output-in)
  public func output(in range: Range<Elements.Index>)
    -> Publishers.Sequence<
      [Elements.Element], Failure
    >
  {
    Publishers.Sequence<[Elements.Element], Failure>(sequence: Array(sequence[range]))
  }
}

extension Publishers.Sequence where Elements: BidirectionalCollection, Failure == Never {
  /// The last element; nothing when empty.
  ///
  /// ![Marble diagram: last()](last)
  public func last() -> Optional<Elements.Element>.Publisher {
    Optional<Elements.Element>.Publisher(sequence.last)
  }

  /// The last element that satisfies `predicate`, if any.
  ///
  /// ![Marble diagram: last { $0 > 5 }](last-where)
  public func last(where predicate: (Elements.Element) -> Bool)
    -> Optional<Elements.Element>
    .Publisher
  {
    Optional<Elements.Element>.Publisher(sequence.last(where: predicate))
  }
}

extension Publishers.Sequence where Elements: RandomAccessCollection, Failure == Never {
  /// The element at `index`; nothing when out of range.
  ///
  /// ![Marble diagram: output(at: 1)](output-at)
  public func output(at index: Elements.Index) -> Optional<Elements.Element>.Publisher {
    Optional<Elements.Element>.Publisher(
      sequence.indices.contains(index) ? sequence[index] : nil)
  }

  /// The number of elements.
  ///
  /// ![Marble diagram: count()](count)
  public func count() -> Just<Int> { Just(sequence.count) }
}

extension Publishers.Sequence where Elements: RandomAccessCollection {
  /// The elements at the indices in `range`, which must be valid for the collection.
  ///
  /// ![Marble diagram: output(in: 1...2)](output-in)
  public func output(in range: Range<Elements.Index>)
    -> Publishers.Sequence<
      [Elements.Element], Failure
    >
  {
    Publishers.Sequence<[Elements.Element], Failure>(sequence: Array(sequence[range]))
  }

  /// The number of elements.
  ///
  /// ![Marble diagram: count()](count)
  public func count() -> Result<Int, Failure>.Publisher {
    Result<Int, Failure>.Publisher(sequence.count)
  }
}

extension Publishers.Sequence where Elements: RangeReplaceableCollection {
  /// `elements`, then this sequence's, built with the collection's own `+` when applied.
  ///
  /// ![Marble diagram: prepend("x", "y")](prepend)
  public func prepend(_ elements: Output...) -> Publishers.Sequence<Elements, Failure> {
    prepend(elements)
  }

  /// `elements`, then this sequence's, built with the collection's own `+` when applied.
  ///
  /// ![Marble diagram: prepend("x", "y")](prepend)
  public func prepend<S: Sequence>(_ elements: S) -> Publishers.Sequence<Elements, Failure>
  where Elements.Element == S.Element {
    Publishers.Sequence(sequence: elements + sequence)
  }

  /// `publisher`'s elements, then this sequence's: this sequence's elements appended to (a copy
  /// of) `publisher`'s collection, as Combine builds it (not a new collection from both).
  ///
  /// ![Marble diagram: prepend("x", "y")](prepend)
  public func prepend(
    _ publisher: Publishers.Sequence<Elements, Failure>
  ) -> Publishers.Sequence<Elements, Failure> {
    var elements = publisher.sequence
    elements.append(contentsOf: sequence)
    return Publishers.Sequence(sequence: elements)
  }

  /// This sequence's elements, then `elements`, built with the collection's own `+`.
  ///
  /// ![Marble diagram: append(second)](append)
  public func append(_ elements: Output...) -> Publishers.Sequence<Elements, Failure> {
    append(elements)
  }

  /// This sequence's elements, then `elements`, built with the collection's own `+`.
  ///
  /// ![Marble diagram: append(second)](append)
  public func append<S: Sequence>(_ elements: S) -> Publishers.Sequence<Elements, Failure>
  where Elements.Element == S.Element {
    Publishers.Sequence(sequence: sequence + elements)
  }

  /// This sequence's elements, then `publisher`'s, built with the collection's own `+`.
  ///
  /// ![Marble diagram: append(second)](append)
  public func append(
    _ publisher: Publishers.Sequence<Elements, Failure>
  ) -> Publishers.Sequence<Elements, Failure> {
    append(publisher.sequence)
  }
}
