import GRPCCore
import GRPCNIOTransportHTTP2Posix
import GRPCPipelines
import Sluice
import Testing

@testable import SluiceGRPC

/// A server cancels an RPC at its deadline, which it times from when the call arrived, so after
/// the client's; a Sluice server then ends the RPC with `.cancelled`. Under load that status can
/// reach the client before grpc-swift's own deadline task has run (once in about 1,200 calls
/// with both cores busy), and the subscriber failed with `.cancelled`, not `.deadlineExceeded`.
/// Here the race is made certain: the call has no gRPC timeout, the server ends it with
/// `.cancelled` after 300 ms, and the publisher is given a 100 ms timeout.
@Suite("A call's deadline, whoever notices it first")
struct DeadlineStatusTests {
  /// `Count` answers nothing for 300 ms, then ends with the status a Sluice server sends for an
  /// RPC cancelled at its deadline.
  struct LateCancellingService: Sluice_Pipelines_Pipelines.ServiceProtocol {
    func count(request: ServerRequest<CountRequest>, context: ServerContext) async throws
      -> StreamingServerResponse<Tick>
    {
      try await Task.sleep(for: .milliseconds(300))
      throw RPCError(code: .cancelled, message: "The RPC was cancelled before the pipeline ended.")
    }

    func sum(request: StreamingServerRequest<Tick>, context: ServerContext) async throws
      -> ServerResponse<Total>
    {
      throw RPCError(code: .unimplemented, message: "not in this test")
    }

    func square(request: StreamingServerRequest<Tick>, context: ServerContext) async throws
      -> StreamingServerResponse<Tick>
    {
      throw RPCError(code: .unimplemented, message: "not in this test")
    }
  }

  /// The failure code of one `Count` call whose publisher has `timeout` (the call itself none).
  func failure(timeout: Duration?) async throws -> RPCError? {
    var ended: RPCError?
    try await withServerInThisProcess(serving: LateCancellingService()) { client in
      let pipelines = Sluice_Pipelines_Pipelines.Client(wrapping: client)
      let subscriber = TestSubscriber<Tick>()
      RPCResponsePublisher(timeout: timeout) { onResponse in
        try await pipelines.count(
          request: ClientRequest(message: CountRequest()), onResponse: onResponse)
      }.subscribe(subscriber)
      #expect(await subscriber.waitForCompletion(timeout: .seconds(30)))
      if case .failure(let error)? = subscriber.completion { ended = error }
    }
    return ended
  }

  @Test func aCancelledStatusAfterTheDeadlineIsTheDeadline() async throws {
    let error = try #require(try await failure(timeout: .milliseconds(100)))
    #expect(error.code == .deadlineExceeded)
    #expect(error.message.contains("The RPC was cancelled before the pipeline ended."))
    #expect((error.cause as? RPCError)?.code == .cancelled)
  }

  @Test func aCancelledStatusBeforeTheDeadlineStaysCancelled() async throws {
    #expect(try await failure(timeout: .seconds(20))?.code == .cancelled)
    #expect(try await failure(timeout: nil)?.code == .cancelled)
  }

  @Test func onlyACancelledStatusIsMapped() {
    let late = Duration.seconds(2)
    for code in [RPCError.Code.unavailable, .internalError, .deadlineExceeded, .unknown] {
      let error = RPCError(code: code, message: "m")
      #expect(RPCErrorMapping.endedAtItsDeadline(error, timeout: .seconds(1), elapsed: late) == nil)
    }
    let cancelled = RPCError(code: .cancelled, message: "m")
    #expect(RPCErrorMapping.endedAtItsDeadline(cancelled, timeout: nil, elapsed: late) == nil)
    #expect(
      RPCErrorMapping.endedAtItsDeadline(cancelled, timeout: .seconds(3), elapsed: late) == nil)
    #expect(
      RPCErrorMapping.endedAtItsDeadline(cancelled, timeout: .seconds(1), elapsed: late)?.code
        == .deadlineExceeded)
  }
}
