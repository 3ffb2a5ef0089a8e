extension Publishers {
  /// A publisher that pairs the values of its upstreams in order: the first value of each, then
  /// the second of each, and so on — Combine's `Zip` of 2 upstreams.
  ///
  /// ![Marble diagram: letters.zip(digits)](zip)
  ///
  /// Demand: the downstream's requests are passed to every upstream, and values wait until
  /// every upstream has sent one, so zip never holds more than it asked for. Ordering: tuples
  /// in the order each upstream sent its values. Completion: finishes once an upstream has
  /// finished and everything it sent has been paired (the others are cancelled); the first
  /// failure cancels the others and fails. Cancellation cancels every upstream.
  public struct Zip<A: Publisher, B: Publisher>: Publisher
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
      FanInCore<Slots2<QueueSlot<A.Output>, QueueSlot<B.Output>>, Failure, S>.combine(
        .zip, into: subscriber
      ) {
        $0.subscribe(a, index: 0) { $0.s0.put($1) }
        $0.subscribe(b, index: 1) { $0.s1.put($1) }
      }
    }
  }

  /// A publisher that pairs the values of its upstreams in order: the first value of each, then
  /// the second of each, and so on — Combine's `Zip3` of 3 upstreams.
  ///
  /// ![Marble diagram: a.zip(b, c) { $0 + $1 + $2 }](zip-three)
  ///
  /// Demand: the downstream's requests are passed to every upstream, and values wait until
  /// every upstream has sent one, so zip never holds more than it asked for. Ordering: tuples
  /// in the order each upstream sent its values. Completion: finishes once an upstream has
  /// finished and everything it sent has been paired (the others are cancelled); the first
  /// failure cancels the others and fails. Cancellation cancels every upstream.
  public struct Zip3<A: Publisher, B: Publisher, C: Publisher>: Publisher
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
      FanInCore<Slots3<QueueSlot<A.Output>, QueueSlot<B.Output>, QueueSlot<C.Output>>, Failure, S>
        .combine(.zip, into: subscriber) {
          $0.subscribe(a, index: 0) { $0.s0.put($1) }
          $0.subscribe(b, index: 1) { $0.s1.put($1) }
          $0.subscribe(c, index: 2) { $0.s2.put($1) }
        }
    }
  }

  /// A publisher that pairs the values of its upstreams in order: the first value of each, then
  /// the second of each, and so on — Combine's `Zip4` of 4 upstreams.
  ///
  /// ![Marble diagram: a.zip(b, c) { $0 + $1 + $2 }](zip-three)
  ///
  /// Demand: the downstream's requests are passed to every upstream, and values wait until
  /// every upstream has sent one, so zip never holds more than it asked for. Ordering: tuples
  /// in the order each upstream sent its values. Completion: finishes once an upstream has
  /// finished and everything it sent has been paired (the others are cancelled); the first
  /// failure cancels the others and fails. Cancellation cancels every upstream.
  public struct Zip4<A: Publisher, B: Publisher, C: Publisher, D: Publisher>: Publisher
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
        Slots4<QueueSlot<A.Output>, QueueSlot<B.Output>, QueueSlot<C.Output>, QueueSlot<D.Output>>,
        Failure, S
      >.combine(.zip, into: subscriber) {
        $0.subscribe(a, index: 0) { $0.s0.put($1) }
        $0.subscribe(b, index: 1) { $0.s1.put($1) }
        $0.subscribe(c, index: 2) { $0.s2.put($1) }
        $0.subscribe(d, index: 3) { $0.s3.put($1) }
      }
    }
  }
}

extension Publishers.Zip: Equatable where A: Equatable, B: Equatable {}
extension Publishers.Zip3: Equatable where A: Equatable, B: Equatable, C: Equatable {}
extension Publishers.Zip4: Equatable where A: Equatable, B: Equatable, C: Equatable, D: Equatable {}

extension Publisher {
  /// Pairs this publisher with 1 other; see ``Publishers/Zip``.
  ///
  /// ![Marble diagram: letters.zip(digits)](zip)
  public func zip<P: Publisher>(_ other: P) -> Publishers.Zip<Self, P>
  where Failure == P.Failure {
    Publishers.Zip(self, other)
  }

  /// Pairs this publisher with 1 other and transforms each tuple; see
  /// ``Publishers/Zip``.
  ///
  /// ![Marble diagram: letters.zip(digits)](zip)
  public func zip<P: Publisher, T>(
    _ other: P, _ transform: @escaping (Output, P.Output) -> T
  ) -> Publishers.Map<Publishers.Zip<Self, P>, T>
  where Failure == P.Failure {
    Publishers.Zip(self, other).map { transform($0, $1) }
  }

  /// Pairs this publisher with 2 others; see ``Publishers/Zip3``.
  ///
  /// ![Marble diagram: a.zip(b, c) { $0 + $1 + $2 }](zip-three)
  public func zip<P: Publisher, Q: Publisher>(_ publisher1: P, _ publisher2: Q)
    -> Publishers.Zip3<Self, P, Q>
  where Failure == P.Failure, Failure == Q.Failure {
    Publishers.Zip3(self, publisher1, publisher2)
  }

  /// Pairs this publisher with 2 others and transforms each tuple; see
  /// ``Publishers/Zip3``.
  ///
  /// ![Marble diagram: a.zip(b, c) { $0 + $1 + $2 }](zip-three)
  public func zip<P: Publisher, Q: Publisher, T>(
    _ publisher1: P, _ publisher2: Q, _ transform: @escaping (Output, P.Output, Q.Output) -> T
  ) -> Publishers.Map<Publishers.Zip3<Self, P, Q>, T>
  where Failure == P.Failure, Failure == Q.Failure {
    Publishers.Zip3(self, publisher1, publisher2).map { transform($0, $1, $2) }
  }

  /// Pairs this publisher with 3 others; see ``Publishers/Zip4``.
  ///
  /// ![Marble diagram: a.zip(b, c) { $0 + $1 + $2 }](zip-three)
  public func zip<P: Publisher, Q: Publisher, R: Publisher>(
    _ publisher1: P, _ publisher2: Q, _ publisher3: R
  ) -> Publishers.Zip4<Self, P, Q, R>
  where Failure == P.Failure, Failure == Q.Failure, Failure == R.Failure {
    Publishers.Zip4(self, publisher1, publisher2, publisher3)
  }

  /// Pairs this publisher with 3 others and transforms each tuple; see
  /// ``Publishers/Zip4``.
  ///
  /// ![Marble diagram: a.zip(b, c) { $0 + $1 + $2 }](zip-three)
  public func zip<P: Publisher, Q: Publisher, R: Publisher, T>(
    _ publisher1: P, _ publisher2: Q, _ publisher3: R,
    _ transform: @escaping (Output, P.Output, Q.Output, R.Output) -> T
  ) -> Publishers.Map<Publishers.Zip4<Self, P, Q, R>, T>
  where Failure == P.Failure, Failure == Q.Failure, Failure == R.Failure {
    Publishers.Zip4(self, publisher1, publisher2, publisher3).map { transform($0, $1, $2, $3) }
  }
}
