import GRPCCore
import Sluice

/// A pipeline handed over to be written once through an RPC's writer, reached through an
/// existential: the `@Sendable` producer gRPC calls holds an `any HandedOverPipeline<Output>`,
/// so it does not capture the publisher's type (a closure that runs in another task may not
/// capture a metatype that is not `SendableMetatype`; the call through the existential needs
/// none).
@usableFromInline
protocol HandedOverPipeline<Output>: Sendable {
  associatedtype Output: Sendable

  /// Writes the pipeline (see `PipelineWriting.write`): how it completed, or `nil` if cancelled
  /// first; throws the writer's errors and a write stall's. A second call throws
  /// `.internalError`: a pipeline is subscribed to once.
  func write(to writer: RPCWriter<Output>) async throws -> Subscribers.Completion<any Error>?
}

/// The one implementation of ``HandedOverPipeline``.
@usableFromInline
final class OneShotPipeline<P: Publisher>: HandedOverPipeline where P.Output: Sendable {
  @usableFromInline let publisher: OneShot<P>
  @usableFromInline let prefetch: Int
  @usableFromInline let writeStallTimeout: Duration?

  @inlinable
  init(_ publisher: sending P, prefetch: Int, writeStallTimeout: Duration? = nil) {
    self.publisher = OneShot(publisher)
    self.prefetch = prefetch
    self.writeStallTimeout = writeStallTimeout
  }

  @inlinable
  func write(to writer: RPCWriter<P.Output>) async throws -> Subscribers.Completion<any Error>? {
    guard let publisher = publisher.take() else { throw Self.writtenTwice() }
    switch try await PipelineWriting.write(
      publisher, prefetch: prefetch, writeStallTimeout: writeStallTimeout, to: writer)
    {
    case .finished?: return .finished
    case .failure(let failure)?: return .failure(failure)
    case nil: return nil
    }
  }

  @usableFromInline
  static func writtenTwice() -> RPCError {
    RPCError(
      code: .internalError,
      message: """
        A pipeline handed to a gRPC request or response is written once; this one was already \
        written: make a request or response for each call.
        """)
  }
}

/// Makes a fresh pipeline for each call, reached through an existential for the same reason as
/// ``HandedOverPipeline``.
@usableFromInline
protocol PipelineFactory<Output>: Sendable {
  associatedtype Output: Sendable
  func make() -> any HandedOverPipeline<Output>
}

/// The one implementation of ``PipelineFactory``.
@usableFromInline
struct ClosurePipelineFactory<P: Publisher>: PipelineFactory where P.Output: Sendable {
  @usableFromInline let makePublisher: @Sendable () -> P
  @usableFromInline let prefetch: Int

  @inlinable
  init(makePublisher: @escaping @Sendable () -> P, prefetch: Int) {
    self.makePublisher = makePublisher
    self.prefetch = prefetch
  }

  @inlinable
  func make() -> any HandedOverPipeline<P.Output> {
    OneShotPipeline(makePublisher(), prefetch: prefetch)
  }
}
