extension Publishers {
  /// A publisher that merges any number of upstreams of one type, as Combine's `MergeMany`.
  ///
  /// ![Marble diagram: first.merge(with: second, third)](merge-three)
  ///
  /// **Demand**: each upstream is asked for one value at a time (all it has, once the
  /// downstream's demand is unlimited); a value beyond the downstream's demand waits, at most one
  /// per upstream, and is delivered first when the downstream requests. So under a limited
  /// demand (a `buffer`, `values`, `flatMap(maxPublishers:)` downstream), a subject merged here
  /// drops what its senders send while its one value waits, as in Combine (six subjects sent
  /// from six threads into a `buffer` of 2^24: about 10 % arrived): buffer each subject before
  /// merging them, or merge with unlimited demand. **Ordering**: values from
  /// one upstream keep their order; signals reach the downstream one at a time, whatever threads
  /// the upstreams send from. Finishes when every upstream has finished; the first failure
  /// cancels the others and fails. **Cancellation**: cancels every upstream and releases the
  /// downstream.
  public struct MergeMany<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publishers this publisher merges.
    public let publishers: [Upstream]

    /// Creates a publisher that merges these upstreams.
    public init(_ upstream: Upstream...) { publishers = upstream }

    /// Creates a publisher that merges the upstreams of a sequence.
    public init<S: Swift.Sequence>(_ upstream: S) where S.Element == Upstream {
      publishers = Array(upstream)
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      MergeCore<Output, Failure, S>.merge(into: subscriber) { core in
        for publisher in publishers { core.subscribe(publisher) }
      }
    }

    /// This merge with one more upstream.
    public func merge(with other: Upstream) -> MergeMany<Upstream> {
      MergeMany(publishers + [other])
    }
  }
}
