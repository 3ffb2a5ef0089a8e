extension Publishers {
  /// A publisher that publishes a tuple of the newest value of each upstream whenever any of
  /// them sends, once every upstream has sent at least one — Combine's `CombineLatest` of 2
  /// upstreams.
  ///
  /// ![Marble diagram: letters.combineLatest(digits)](combineLatest)
  ///
  /// Demand: the downstream's requests are passed to every upstream; a combination that finds
  /// no demand is dropped (each upstream keeps only its newest value), as in Combine. Ordering:
  /// one combination per value received, delivered serially. Completion: finishes when every
  /// upstream has finished; the first failure cancels the others and fails. Cancellation
  /// cancels every upstream.
  public struct CombineLatest<A: Publisher, B: Publisher>: Publisher
  where A.Failure == B.Failure {
    public typealias Output = (A.Output, B.Output)
    public typealias Failure = A.Failure

    /// The first upstream publisher.
    public let a: A
    /// The second upstream publisher.
    public let b: B

    /// Creates a publisher that combines these upstreams.
    public init(_ a: A, _ b: B) {
      self.a = a
      self.b = b
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where S.Input == Output, S.Failure == Failure {
      FanInCore<Slots2<LatestSlot<A.Output>, LatestSlot<B.Output>>, Failure, S>.combine(
        .combineLatest, into: subscriber
      ) {
        $0.subscribe(a, index: 0) { $0.s0.put($1) }
        $0.subscribe(b, index: 1) { $0.s1.put($1) }
      }
    }
  }

  /// A publisher that publishes a tuple of the newest value of each upstream whenever any of
  /// them sends, once every upstream has sent at least one — Combine's `CombineLatest3` of 3
  /// upstreams.
  ///
  /// ![Marble diagram: a.combineLatest(b, c) { $0 + $1 + $2 }](combineLatest-three)
  ///
  /// Demand: the downstream's requests are passed to every upstream; a combination that finds
  /// no demand is dropped (each upstream keeps only its newest value), as in Combine. Ordering:
  /// one combination per value received, delivered serially. Completion: finishes when every
  /// upstream has finished; the first failure cancels the others and fails. Cancellation
  /// cancels every upstream.
  public struct CombineLatest3<A: Publisher, B: Publisher, C: Publisher>: Publisher
  where A.Failure == B.Failure, A.Failure == C.Failure {
    public typealias Output = (A.Output, B.Output, C.Output)
    public typealias Failure = A.Failure

    /// The first upstream publisher.
    public let a: A
    /// The second upstream publisher.
    public let b: B
    /// The third upstream publisher.
    public let c: C

    /// Creates a publisher that combines these upstreams.
    public init(_ a: A, _ b: B, _ c: C) {
      self.a = a
      self.b = b
      self.c = c
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where S.Input == Output, S.Failure == Failure {
      FanInCore<
        Slots3<LatestSlot<A.Output>, LatestSlot<B.Output>, LatestSlot<C.Output>>, Failure, S
      >.combine(.combineLatest, into: subscriber) {
        $0.subscribe(a, index: 0) { $0.s0.put($1) }
        $0.subscribe(b, index: 1) { $0.s1.put($1) }
        $0.subscribe(c, index: 2) { $0.s2.put($1) }
      }
    }
  }

  /// A publisher that publishes a tuple of the newest value of each upstream whenever any of
  /// them sends, once every upstream has sent at least one — Combine's `CombineLatest4` of 4
  /// upstreams.
  ///
  /// ![Marble diagram: a.combineLatest(b, c) { $0 + $1 + $2 }](combineLatest-three)
  ///
  /// Demand: the downstream's requests are passed to every upstream; a combination that finds
  /// no demand is dropped (each upstream keeps only its newest value), as in Combine. Ordering:
  /// one combination per value received, delivered serially. Completion: finishes when every
  /// upstream has finished; the first failure cancels the others and fails. Cancellation
  /// cancels every upstream.
  public struct CombineLatest4<A: Publisher, B: Publisher, C: Publisher, D: Publisher>: Publisher
  where A.Failure == B.Failure, A.Failure == C.Failure, A.Failure == D.Failure {
    public typealias Output = (A.Output, B.Output, C.Output, D.Output)
    public typealias Failure = A.Failure

    /// The first upstream publisher.
    public let a: A
    /// The second upstream publisher.
    public let b: B
    /// The third upstream publisher.
    public let c: C
    /// The fourth upstream publisher.
    public let d: D

    /// Creates a publisher that combines these upstreams.
    public init(_ a: A, _ b: B, _ c: C, _ d: D) {
      self.a = a
      self.b = b
      self.c = c
      self.d = d
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where S.Input == Output, S.Failure == Failure {
      FanInCore<
        Slots4<
          LatestSlot<A.Output>, LatestSlot<B.Output>, LatestSlot<C.Output>, LatestSlot<D.Output>
        >, Failure, S
      >.combine(.combineLatest, into: subscriber) {
        $0.subscribe(a, index: 0) { $0.s0.put($1) }
        $0.subscribe(b, index: 1) { $0.s1.put($1) }
        $0.subscribe(c, index: 2) { $0.s2.put($1) }
        $0.subscribe(d, index: 3) { $0.s3.put($1) }
      }
    }
  }
}

extension Publishers.CombineLatest: Equatable where A: Equatable, B: Equatable {}
extension Publishers.CombineLatest3: Equatable where A: Equatable, B: Equatable, C: Equatable {}
extension Publishers.CombineLatest4: Equatable
where A: Equatable, B: Equatable, C: Equatable, D: Equatable {}

extension Publisher {
  /// Combines the newest values of this publisher with 1 other; see ``Publishers/CombineLatest``.
  ///
  /// ![Marble diagram: letters.combineLatest(digits)](combineLatest)
  public func combineLatest<P: Publisher>(_ other: P) -> Publishers.CombineLatest<Self, P>
  where Failure == P.Failure {
    Publishers.CombineLatest(self, other)
  }

  /// Combines the newest values of this publisher with 1 other and transforms each tuple; see
  /// ``Publishers/CombineLatest``.
  ///
  /// ![Marble diagram: letters.combineLatest(digits)](combineLatest)
  public func combineLatest<P: Publisher, T>(
    _ other: P, _ transform: @escaping (Output, P.Output) -> T
  ) -> Publishers.Map<Publishers.CombineLatest<Self, P>, T>
  where Failure == P.Failure {
    Publishers.CombineLatest(self, other).map { transform($0, $1) }
  }

  /// Combines the newest values of this publisher with 2 others; see ``Publishers/CombineLatest3``.
  ///
  /// ![Marble diagram: a.combineLatest(b, c) { $0 + $1 + $2 }](combineLatest-three)
  public func combineLatest<P: Publisher, Q: Publisher>(_ publisher1: P, _ publisher2: Q)
    -> Publishers.CombineLatest3<Self, P, Q>
  where Failure == P.Failure, Failure == Q.Failure {
    Publishers.CombineLatest3(self, publisher1, publisher2)
  }

  /// Combines the newest values of this publisher with 2 others and transforms each tuple; see
  /// ``Publishers/CombineLatest3``.
  ///
  /// ![Marble diagram: a.combineLatest(b, c) { $0 + $1 + $2 }](combineLatest-three)
  public func combineLatest<P: Publisher, Q: Publisher, T>(
    _ publisher1: P, _ publisher2: Q, _ transform: @escaping (Output, P.Output, Q.Output) -> T
  ) -> Publishers.Map<Publishers.CombineLatest3<Self, P, Q>, T>
  where Failure == P.Failure, Failure == Q.Failure {
    Publishers.CombineLatest3(self, publisher1, publisher2).map { transform($0, $1, $2) }
  }

  /// Combines the newest values of this publisher with 3 others; see ``Publishers/CombineLatest4``.
  ///
  /// ![Marble diagram: a.combineLatest(b, c) { $0 + $1 + $2 }](combineLatest-three)
  public func combineLatest<P: Publisher, Q: Publisher, R: Publisher>(
    _ publisher1: P, _ publisher2: Q, _ publisher3: R
  ) -> Publishers.CombineLatest4<Self, P, Q, R>
  where Failure == P.Failure, Failure == Q.Failure, Failure == R.Failure {
    Publishers.CombineLatest4(self, publisher1, publisher2, publisher3)
  }

  /// Combines the newest values of this publisher with 3 others and transforms each tuple; see
  /// ``Publishers/CombineLatest4``.
  ///
  /// ![Marble diagram: a.combineLatest(b, c) { $0 + $1 + $2 }](combineLatest-three)
  public func combineLatest<P: Publisher, Q: Publisher, R: Publisher, T>(
    _ publisher1: P, _ publisher2: Q, _ publisher3: R,
    _ transform: @escaping (Output, P.Output, Q.Output, R.Output) -> T
  ) -> Publishers.Map<Publishers.CombineLatest4<Self, P, Q, R>, T>
  where Failure == P.Failure, Failure == Q.Failure, Failure == R.Failure {
    Publishers.CombineLatest4(self, publisher1, publisher2, publisher3).map {
      transform($0, $1, $2, $3)
    }
  }
}
