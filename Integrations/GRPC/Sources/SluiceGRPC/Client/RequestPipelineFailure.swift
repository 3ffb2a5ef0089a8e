import GRPCCore
import Synchronization

/// Where a request pipeline (`StreamingClientRequest(publishing:)`) records its failure, so that
/// an ``RPCResponsePublisher``'s subscriber fails with it: gRPC answers a failed request
/// producer by resetting the stream, and reports the reset, not the reason.
///
/// The publisher's task binds ``current``; gRPC runs the request producer in a child task of
/// that task, which inherits the binding. Outside a publisher's call nothing is recorded.
@usableFromInline
final class RequestPipelineFailure: Sendable {
  @TaskLocal static var current: RequestPipelineFailure?

  /// Runs `operation` with `self` bound as ``current``.
  @usableFromInline
  func bound(_ operation: () async throws -> Void) async throws {
    try await Self.$current.withValue(self) { try await operation() }
  }

  private let failure = Mutex<RPCError?>(nil)

  @usableFromInline init() {}

  /// Keeps the first failure recorded.
  @usableFromInline func record(_ error: RPCError) {
    failure.withLock { if $0 == nil { $0 = error } }
  }

  @usableFromInline var recorded: RPCError? { failure.withLock { $0 } }
}
