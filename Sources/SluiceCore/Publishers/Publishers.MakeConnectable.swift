extension Publishers {
  /// A connectable publisher that shares one upstream subscription through a
  /// `PassthroughSubject`, as in Combine.
  ///
  /// ![Marble diagram: input.makeConnectable()](makeConnectable)
  public struct MakeConnectable<Upstream: Publisher>: ConnectablePublisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    @usableFromInline let inner: Multicast<Upstream, PassthroughSubject<Output, Failure>>

    /// Creates a connectable publisher that shares `upstream`.
    @inlinable
    public init(upstream: Upstream) {
      inner = Multicast(upstream: upstream) { PassthroughSubject() }
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where S.Input == Output, S.Failure == Failure {
      inner.receive(subscriber: subscriber)
    }

    @inlinable
    public func connect() -> any Cancellable { inner.connect() }
  }

}

extension Publisher where Failure == Never {
  /// Creates a connectable wrapper around this publisher.
  ///
  /// ![Marble diagram: input.makeConnectable()](makeConnectable)
  @inlinable
  public func makeConnectable() -> Publishers.MakeConnectable<Self> {
    Publishers.MakeConnectable(upstream: self)
  }
}
