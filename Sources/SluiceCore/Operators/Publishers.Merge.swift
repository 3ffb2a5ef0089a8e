extension Publishers {
  /// A publisher that merges 2 upstreams of the same output and failure, as Combine's
  /// `Merge`: see ``MergeMany`` for its demand, ordering and cancellation.
  ///
  /// ![Marble diagram: first.merge(with: second)](merge)
  public struct Merge<A: Publisher, B: Publisher>: Publisher
  where
    A.Output == B.Output, A.Failure == B.Failure
  {
    public typealias Output = A.Output
    public typealias Failure = A.Failure

    /// The first upstream publisher.
    public let a: A
    /// The second upstream publisher.
    public let b: B

    /// Creates a publisher that merges these upstreams.
    public init(_ a: A, _ b: B) {
      self.a = a
      self.b = b
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      MergeCore<Output, Failure, S>.merge(into: subscriber) {
        $0.subscribe(a); $0.subscribe(b)
      }
    }
  }

  /// A publisher that merges 3 upstreams of the same output and failure, as Combine's
  /// `Merge3`: see ``MergeMany`` for its demand, ordering and cancellation.
  ///
  /// ![Marble diagram: first.merge(with: second, third)](merge-three)
  public struct Merge3<A: Publisher, B: Publisher, C: Publisher>: Publisher
  where
    A.Output == B.Output, A.Failure == B.Failure,
    A.Output == C.Output, A.Failure == C.Failure
  {
    public typealias Output = A.Output
    public typealias Failure = A.Failure

    /// The first upstream publisher.
    public let a: A
    /// The second upstream publisher.
    public let b: B
    /// The third upstream publisher.
    public let c: C

    /// Creates a publisher that merges these upstreams.
    public init(_ a: A, _ b: B, _ c: C) {
      self.a = a
      self.b = b
      self.c = c
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      MergeCore<Output, Failure, S>.merge(into: subscriber) {
        $0.subscribe(a); $0.subscribe(b); $0.subscribe(c)
      }
    }
  }

  /// A publisher that merges 4 upstreams of the same output and failure, as Combine's
  /// `Merge4`: see ``MergeMany`` for its demand, ordering and cancellation.
  ///
  /// ![Marble diagram: first.merge(with: second, third)](merge-three)
  public struct Merge4<A: Publisher, B: Publisher, C: Publisher, D: Publisher>: Publisher
  where
    A.Output == B.Output, A.Failure == B.Failure,
    A.Output == C.Output, A.Failure == C.Failure,
    A.Output == D.Output, A.Failure == D.Failure
  {
    public typealias Output = A.Output
    public typealias Failure = A.Failure

    /// The first upstream publisher.
    public let a: A
    /// The second upstream publisher.
    public let b: B
    /// The third upstream publisher.
    public let c: C
    /// The fourth upstream publisher.
    public let d: D

    /// Creates a publisher that merges these upstreams.
    public init(_ a: A, _ b: B, _ c: C, _ d: D) {
      self.a = a
      self.b = b
      self.c = c
      self.d = d
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      MergeCore<Output, Failure, S>.merge(into: subscriber) {
        $0.subscribe(a); $0.subscribe(b); $0.subscribe(c); $0.subscribe(d)
      }
    }
  }

  /// A publisher that merges 5 upstreams of the same output and failure, as Combine's
  /// `Merge5`: see ``MergeMany`` for its demand, ordering and cancellation.
  ///
  /// ![Marble diagram: first.merge(with: second, third)](merge-three)
  public struct Merge5<A: Publisher, B: Publisher, C: Publisher, D: Publisher, E: Publisher>:
    Publisher
  where
    A.Output == B.Output, A.Failure == B.Failure,
    A.Output == C.Output, A.Failure == C.Failure,
    A.Output == D.Output, A.Failure == D.Failure,
    A.Output == E.Output, A.Failure == E.Failure
  {
    public typealias Output = A.Output
    public typealias Failure = A.Failure

    /// The first upstream publisher.
    public let a: A
    /// The second upstream publisher.
    public let b: B
    /// The third upstream publisher.
    public let c: C
    /// The fourth upstream publisher.
    public let d: D
    /// The fifth upstream publisher.
    public let e: E

    /// Creates a publisher that merges these upstreams.
    public init(_ a: A, _ b: B, _ c: C, _ d: D, _ e: E) {
      self.a = a
      self.b = b
      self.c = c
      self.d = d
      self.e = e
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      MergeCore<Output, Failure, S>.merge(into: subscriber) {
        $0.subscribe(a); $0.subscribe(b); $0.subscribe(c); $0.subscribe(d); $0.subscribe(e)
      }
    }
  }

  /// A publisher that merges 6 upstreams of the same output and failure, as Combine's
  /// `Merge6`: see ``MergeMany`` for its demand, ordering and cancellation.
  ///
  /// ![Marble diagram: first.merge(with: second, third)](merge-three)
  public struct Merge6<
    A: Publisher, B: Publisher, C: Publisher, D: Publisher, E: Publisher, F: Publisher
  >: Publisher
  where
    A.Output == B.Output, A.Failure == B.Failure,
    A.Output == C.Output, A.Failure == C.Failure,
    A.Output == D.Output, A.Failure == D.Failure,
    A.Output == E.Output, A.Failure == E.Failure,
    A.Output == F.Output, A.Failure == F.Failure
  {
    public typealias Output = A.Output
    public typealias Failure = A.Failure

    /// The first upstream publisher.
    public let a: A
    /// The second upstream publisher.
    public let b: B
    /// The third upstream publisher.
    public let c: C
    /// The fourth upstream publisher.
    public let d: D
    /// The fifth upstream publisher.
    public let e: E
    /// The sixth upstream publisher.
    public let f: F

    /// Creates a publisher that merges these upstreams.
    public init(_ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F) {
      self.a = a
      self.b = b
      self.c = c
      self.d = d
      self.e = e
      self.f = f
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      MergeCore<Output, Failure, S>.merge(into: subscriber) {
        $0.subscribe(a); $0.subscribe(b); $0.subscribe(c); $0.subscribe(d); $0.subscribe(e);
        $0.subscribe(f)
      }
    }
  }

  /// A publisher that merges 7 upstreams of the same output and failure, as Combine's
  /// `Merge7`: see ``MergeMany`` for its demand, ordering and cancellation.
  ///
  /// ![Marble diagram: first.merge(with: second, third)](merge-three)
  public struct Merge7<
    A: Publisher, B: Publisher, C: Publisher, D: Publisher, E: Publisher, F: Publisher, G: Publisher
  >: Publisher
  where
    A.Output == B.Output, A.Failure == B.Failure,
    A.Output == C.Output, A.Failure == C.Failure,
    A.Output == D.Output, A.Failure == D.Failure,
    A.Output == E.Output, A.Failure == E.Failure,
    A.Output == F.Output, A.Failure == F.Failure,
    A.Output == G.Output, A.Failure == G.Failure
  {
    public typealias Output = A.Output
    public typealias Failure = A.Failure

    /// The first upstream publisher.
    public let a: A
    /// The second upstream publisher.
    public let b: B
    /// The third upstream publisher.
    public let c: C
    /// The fourth upstream publisher.
    public let d: D
    /// The fifth upstream publisher.
    public let e: E
    /// The sixth upstream publisher.
    public let f: F
    /// The seventh upstream publisher.
    public let g: G

    /// Creates a publisher that merges these upstreams.
    public init(_ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G) {
      self.a = a
      self.b = b
      self.c = c
      self.d = d
      self.e = e
      self.f = f
      self.g = g
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      MergeCore<Output, Failure, S>.merge(into: subscriber) {
        $0.subscribe(a); $0.subscribe(b); $0.subscribe(c); $0.subscribe(d); $0.subscribe(e);
        $0.subscribe(f); $0.subscribe(g)
      }
    }
  }

  /// A publisher that merges 8 upstreams of the same output and failure, as Combine's
  /// `Merge8`: see ``MergeMany`` for its demand, ordering and cancellation.
  ///
  /// ![Marble diagram: first.merge(with: second, third)](merge-three)
  public struct Merge8<
    A: Publisher, B: Publisher, C: Publisher, D: Publisher, E: Publisher, F: Publisher,
    G: Publisher, H: Publisher
  >: Publisher
  where
    A.Output == B.Output, A.Failure == B.Failure,
    A.Output == C.Output, A.Failure == C.Failure,
    A.Output == D.Output, A.Failure == D.Failure,
    A.Output == E.Output, A.Failure == E.Failure,
    A.Output == F.Output, A.Failure == F.Failure,
    A.Output == G.Output, A.Failure == G.Failure,
    A.Output == H.Output, A.Failure == H.Failure
  {
    public typealias Output = A.Output
    public typealias Failure = A.Failure

    /// The first upstream publisher.
    public let a: A
    /// The second upstream publisher.
    public let b: B
    /// The third upstream publisher.
    public let c: C
    /// The fourth upstream publisher.
    public let d: D
    /// The fifth upstream publisher.
    public let e: E
    /// The sixth upstream publisher.
    public let f: F
    /// The seventh upstream publisher.
    public let g: G
    /// The eighth upstream publisher.
    public let h: H

    /// Creates a publisher that merges these upstreams.
    public init(_ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G, _ h: H) {
      self.a = a
      self.b = b
      self.c = c
      self.d = d
      self.e = e
      self.f = f
      self.g = g
      self.h = h
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      MergeCore<Output, Failure, S>.merge(into: subscriber) {
        $0.subscribe(a); $0.subscribe(b); $0.subscribe(c); $0.subscribe(d); $0.subscribe(e);
        $0.subscribe(f); $0.subscribe(g); $0.subscribe(h)
      }
    }
  }

}

extension Publisher {
  /// Merges this publisher with 1 other of the same output and failure.
  ///
  /// ![Marble diagram: first.merge(with: second)](merge)
  public func merge<B: Publisher>(with other: B) -> Publishers.Merge<Self, B>
  where Failure == B.Failure, Output == B.Output {
    Publishers.Merge(self, other)
  }

  /// Merges this publisher with 2 others of the same output and failure.
  ///
  /// ![Marble diagram: first.merge(with: second, third)](merge-three)
  public func merge<B: Publisher, C: Publisher>(with b: B, _ c: C) -> Publishers.Merge3<Self, B, C>
  where Failure == B.Failure, Output == B.Output, Failure == C.Failure, Output == C.Output {
    Publishers.Merge3(self, b, c)
  }

  /// Merges this publisher with 3 others of the same output and failure.
  ///
  /// ![Marble diagram: first.merge(with: second, third)](merge-three)
  public func merge<B: Publisher, C: Publisher, D: Publisher>(with b: B, _ c: C, _ d: D)
    -> Publishers.Merge4<Self, B, C, D>
  where
    Failure == B.Failure, Output == B.Output, Failure == C.Failure, Output == C.Output,
    Failure == D.Failure, Output == D.Output
  {
    Publishers.Merge4(self, b, c, d)
  }

  /// Merges this publisher with 4 others of the same output and failure.
  ///
  /// ![Marble diagram: first.merge(with: second, third)](merge-three)
  public func merge<B: Publisher, C: Publisher, D: Publisher, E: Publisher>(
    with b: B, _ c: C, _ d: D, _ e: E
  ) -> Publishers.Merge5<Self, B, C, D, E>
  where
    Failure == B.Failure, Output == B.Output, Failure == C.Failure, Output == C.Output,
    Failure == D.Failure, Output == D.Output, Failure == E.Failure, Output == E.Output
  {
    Publishers.Merge5(self, b, c, d, e)
  }

  /// Merges this publisher with 5 others of the same output and failure.
  ///
  /// ![Marble diagram: first.merge(with: second, third)](merge-three)
  public func merge<B: Publisher, C: Publisher, D: Publisher, E: Publisher, F: Publisher>(
    with b: B, _ c: C, _ d: D, _ e: E, _ f: F
  ) -> Publishers.Merge6<Self, B, C, D, E, F>
  where
    Failure == B.Failure, Output == B.Output, Failure == C.Failure, Output == C.Output,
    Failure == D.Failure, Output == D.Output, Failure == E.Failure, Output == E.Output,
    Failure == F.Failure, Output == F.Output
  {
    Publishers.Merge6(self, b, c, d, e, f)
  }

  /// Merges this publisher with 6 others of the same output and failure.
  ///
  /// ![Marble diagram: first.merge(with: second, third)](merge-three)
  public func merge<
    B: Publisher, C: Publisher, D: Publisher, E: Publisher, F: Publisher, G: Publisher
  >(with b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G) -> Publishers.Merge7<Self, B, C, D, E, F, G>
  where
    Failure == B.Failure, Output == B.Output, Failure == C.Failure, Output == C.Output,
    Failure == D.Failure, Output == D.Output, Failure == E.Failure, Output == E.Output,
    Failure == F.Failure, Output == F.Output, Failure == G.Failure, Output == G.Output
  {
    Publishers.Merge7(self, b, c, d, e, f, g)
  }

  /// Merges this publisher with 7 others of the same output and failure.
  ///
  /// ![Marble diagram: first.merge(with: second, third)](merge-three)
  public func merge<
    B: Publisher, C: Publisher, D: Publisher, E: Publisher, F: Publisher, G: Publisher, H: Publisher
  >(with b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G, _ h: H)
    -> Publishers.Merge8<Self, B, C, D, E, F, G, H>
  where
    Failure == B.Failure, Output == B.Output, Failure == C.Failure, Output == C.Output,
    Failure == D.Failure, Output == D.Output, Failure == E.Failure, Output == E.Output,
    Failure == F.Failure, Output == F.Output, Failure == G.Failure, Output == G.Output,
    Failure == H.Failure, Output == H.Output
  {
    Publishers.Merge8(self, b, c, d, e, f, g, h)
  }

}
