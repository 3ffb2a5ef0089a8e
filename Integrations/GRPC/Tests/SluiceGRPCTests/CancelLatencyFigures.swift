import Foundation
import GRPCCore
import GRPCPipelines
import Sluice
import SluiceGRPC
import Testing

extension AcrossProcesses {
  /// The figure the README gives for the time a subscriber's `cancel()` takes to reach the
  /// server's source, against its anchor (the same RPC served by a plain grpc-swift loop), in
  /// alternating rounds of one run. Opt-in, as it takes minutes:
  ///
  ///     SLUICE_GRPC_FIGURES=1 swift test --package-path Integrations/GRPC \
  ///       --filter CancelLatencyFigures
  ///
  /// `SLUICE_GRPC_WINDOW` sets the client's HTTP/2 window (64 KiB unless set; 0 keeps
  /// grpc-swift's 8 MiB). No timing is asserted: only that the cancel arrives.
  @Suite(
    "CancelLatencyFigures",
    .enabled(if: ProcessInfo.processInfo.environment["SLUICE_GRPC_FIGURES"] != nil))
  struct CancelLatencyFigures {
    @Test func cancelLatencyAgainstAPlainGRPCLoop() async throws {
      let environment = ProcessInfo.processInfo.environment
      let window = environment["SLUICE_GRPC_WINDOW"].flatMap(Int.init) ?? 65_535
      var figures: [Bool: [(latency: Double, produced: Int)]] = [:]
      for round in 0..<3 {
        for plain in round.isMultiple(of: 2) ? [false, true] : [true, false] {
          let figure = try await Self.cancel(plain: plain, window: window == 0 ? nil : window)
          print(
            "round \(round) \(plain ? "plain" : "sluice"): \(figure.latency) ms, \(figure.produced) produced"
          )
          figures[plain, default: []].append(figure)
        }
      }
      for plain in [false, true] {
        let rounds = figures[plain] ?? []
        let median = rounds.map(\.latency).sorted()[rounds.count / 2]
        let produced = rounds.map(\.produced).sorted()[rounds.count / 2]
        print(
          "\(plain ? "plain grpc-swift loop" : "Sluice adapter"), window \(window): median cancel latency \(median) ms, median produced \(produced)"
        )
      }
    }

    /// One `Count` stream read by a slow subscriber, cancelled after 10 values: the time until
    /// the server reports the cancellation, and the values its source produced by then.
    static func cancel(plain: Bool, window: Int?) async throws -> (latency: Double, produced: Int) {
      let server = try await ServerProcess(
        plain ? ["--report-ms", "100", "--plain"] : ["--report-ms", "100"])
      let subscriber = TestSubscriber<Int64>(initial: .max(1), pace: .milliseconds(5))
      return try await withClient(port: server.port, settings: TransportSettings(window: window)) {
        client in
        client.count(countRequest()).map(\.value).subscribe(subscriber)
        #expect(await subscriber.wait(forCount: 10))
        let cancelledAt = monotonicNanoseconds()
        subscriber.cancel()
        #expect(await server.wait(timeout: .seconds(600)) { !$0.cancellations.isEmpty })
        try await Task.sleep(for: .milliseconds(300))  // the last `produced` report
        let latency = Double((server.cancellations.first ?? cancelledAt) - cancelledAt) / 1e6
        return (latency, server.produced)
      }
    }
  }
}
