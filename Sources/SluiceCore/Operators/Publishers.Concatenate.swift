extension Publishers {
  /// A publisher that publishes every value of `prefix`, then, once it finishes, every value of
  /// `suffix` — Combine's `Concatenate`, behind `append` and `prepend`.
  ///
  /// ![Marble diagram: append(second)](append)
  ///
  /// **Demand**: the downstream's requests go to the publisher being delivered; `suffix` is
  /// subscribed only when `prefix` finishes, and asked at once for the demand still outstanding.
  /// **Ordering**: `prefix`'s values, then `suffix`'s. **Completion**: `suffix`'s completion;
  /// a failure of `prefix` fails at once and `suffix` is never subscribed.
  /// **Cancellation** cancels the publisher being delivered; `suffix` is released (also when
  /// `prefix` failed). As Combine's, a value beyond the outstanding demand, a value `prefix`
  /// sends after it finished and a second completion are ignored.
  public struct Concatenate<Prefix: Publisher, Suffix: Publisher>: Publisher
  where Prefix.Failure == Suffix.Failure, Prefix.Output == Suffix.Output {
    public typealias Output = Suffix.Output
    public typealias Failure = Suffix.Failure

    /// The publisher delivered first.
    public let prefix: Prefix
    /// The publisher delivered once `prefix` finishes.
    public let suffix: Suffix

    /// Creates a publisher that delivers `prefix`, then `suffix`.
    @inlinable
    public init(prefix: Prefix, suffix: Suffix) {
      self.prefix = prefix
      self.suffix = suffix
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let suffix = self.suffix
      RelaySubscription<Prefix, Suffix, S>(
        "Concatenate", downstream: subscriber, movesOnFailure: false, lenient: true,
        mapTailFailure: { $0 },
        next: { completion in
          switch completion {
          case .finished: .subscribe(suffix)
          case .failure(let error): .end(.failure(error))
          }
        }
      ).subscribe(to: prefix)
    }
  }
}

extension Publishers.Concatenate: Equatable where Prefix: Equatable, Suffix: Equatable {}

extension Publisher {
  /// Publishes `elements` first, then this publisher's values.
  ///
  /// ![Marble diagram: prepend("x", "y")](prepend)
  @inlinable
  public func prepend(_ elements: Output...)
    -> Publishers.Concatenate<Publishers.Sequence<[Output], Failure>, Self>
  {
    prepend(elements)
  }

  /// Publishes the elements of `elements` first, then this publisher's values.
  ///
  /// ![Marble diagram: prepend("x", "y")](prepend)
  @inlinable
  public func prepend<S: Sequence>(_ elements: S)
    -> Publishers.Concatenate<Publishers.Sequence<S, Failure>, Self>
  where Output == S.Element {
    prepend(Publishers.Sequence(sequence: elements))
  }

  /// Publishes `publisher`'s values first and, once it finishes, this publisher's.
  ///
  /// ![Marble diagram: prepend("x", "y")](prepend)
  @inlinable
  public func prepend<P: Publisher>(_ publisher: P) -> Publishers.Concatenate<P, Self>
  where Failure == P.Failure, Output == P.Output {
    Publishers.Concatenate(prefix: publisher, suffix: self)
  }

  /// Publishes this publisher's values and, once it finishes, `elements`.
  ///
  /// ![Marble diagram: append(second)](append)
  @inlinable
  public func append(_ elements: Output...)
    -> Publishers.Concatenate<Self, Publishers.Sequence<[Output], Failure>>
  {
    append(elements)
  }

  /// Publishes this publisher's values and, once it finishes, the elements of `elements`.
  ///
  /// ![Marble diagram: append(second)](append)
  @inlinable
  public func append<S: Sequence>(_ elements: S)
    -> Publishers.Concatenate<Self, Publishers.Sequence<S, Failure>>
  where Output == S.Element {
    append(Publishers.Sequence(sequence: elements))
  }

  /// Publishes this publisher's values and, once it finishes, `publisher`'s.
  ///
  /// ![Marble diagram: append(second)](append)
  @inlinable
  public func append<P: Publisher>(_ publisher: P) -> Publishers.Concatenate<Self, P>
  where Failure == P.Failure, Output == P.Output {
    Publishers.Concatenate(prefix: self, suffix: publisher)
  }
}
