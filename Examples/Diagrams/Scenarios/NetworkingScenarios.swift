import Dispatch
import Foundation
import Sluice
import SluiceNetworking
import SluiceTesting

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// Answers `stub://diagram/ok/<text>` with 200 and the text, `stub://diagram/fail` with
/// `URLError(.notConnectedToInternet)`: real URLSession tasks without a network.
final class DiagramStubProtocol: URLProtocol {
  override class func canInit(with request: URLRequest) -> Bool { request.url?.scheme == "stub" }
  override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

  override func startLoading() {
    guard let url = request.url else { return }
    let parts = url.pathComponents.filter { $0 != "/" }
    if parts.first == "ok" {
      let response = HTTPURLResponse(
        url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: nil)!
      client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
      client?.urlProtocol(self, didLoad: Data(parts.dropFirst().joined(separator: "/").utf8))
      client?.urlProtocolDidFinishLoading(self)
    } else {
      client?.urlProtocol(self, didFailWithError: URLError(.notConnectedToInternet))
    }
  }

  override func stopLoading() {}
}

/// Records a real-time run in order: the subscription and request at tick 0, whatever the task
/// delivers at tick 1 (real time is not to scale).
final class AnswerRecorder<Input, Failure: Error>: Subscriber, @unchecked Sendable {
  // Safety: the row is thread-safe; `done` is a semaphore.
  let row: Lab.Manual
  let describe: (Input) -> String
  let done = DispatchSemaphore(value: 0)

  init(row: Lab.Manual, describe: @escaping (Input) -> String) {
    self.row = row
    self.describe = describe
  }

  func receive(subscription: any Subscription) {
    row.record(.subscribed, at: 0)
    row.record(.requested(.unlimited), at: 0)
    subscription.request(.unlimited)
  }

  func receive(_ input: Input) -> Subscribers.Demand {
    row.record(.value(describe(input)), at: 1)
    return .none
  }

  func receive(completion: Subscribers.Completion<Failure>) {
    switch completion {
    case .finished: row.record(.finished, at: 1)
    case .failure(let error): row.record(.failed(String(describing: error)), at: 1)
    }
    done.signal()
  }
}

extension DiagramScenario {
  static let networking: [DiagramScenario] = [
    DiagramScenario(
      "dataTaskPublisher", .networking, family: "URLSession",
      covers: ["dataTaskPublisher(for:)", "DataTaskPublisher"],
      title: "session.dataTaskPublisher(for: url)",
      caption: "Drawn from real runs of URLSession tasks against a stub protocol (real time not "
        + "to scale: tick 1 is when the task answered). One (data, response) value and "
        + "finished, or the task's URLError; the task starts at the first demand and cancel() "
        + "cancels it.", endTick: 3
    ) { lab in
      let configuration = URLSessionConfiguration.ephemeral
      configuration.protocolClasses = [DiagramStubProtocol.self]
      let session = URLSession(configuration: configuration)
      for (label, url) in [("ok", "stub://diagram/ok/hello"), ("offline", "stub://diagram/fail")] {
        let recorder = AnswerRecorder<(data: Data, response: URLResponse), URLError>(
          row: lab.outputRow(label)
        ) { "(\($0.data.count) bytes, \(($0.response as? HTTPURLResponse)?.statusCode ?? 0))" }
        session.dataTaskPublisher(for: URL(string: url)!).subscribe(recorder)
        guard recorder.done.wait(timeout: .now() + 60) == .success else {
          throw URLError(.timedOut)
        }
      }
      session.invalidateAndCancel()
    }
  ]
}
