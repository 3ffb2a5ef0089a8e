import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// A `URLProtocol` that answers `stub://` requests from a table instead of the network, and
/// counts the loads it started and stopped: the tests see real `URLSession` tasks without a
/// server.
///
/// `stub://host/ok/<text>` answers 200 with `<text>` as the body; `stub://host/fail/offline` fails
/// with `URLError(.notConnectedToInternet)`, any other `fail/…` with `.unknown`;
/// `stub://host/hang` never answers until the task is cancelled.
final class StubProtocol: URLProtocol {
  struct Counts: Equatable {
    var started = 0
    var stopped = 0
  }

  /// The counts by URL, behind an `NSLock` (a pthread mutex, which the thread sanitizer
  /// models; it reported the accesses inside a `Mutex` here as races).
  final class Table: @unchecked Sendable {
    // Safety: `counts` is only touched inside `lock`.
    private let lock = NSLock()
    private var counts: [String: Counts] = [:]

    func withLock<R>(_ body: (inout [String: Counts]) -> R) -> R {
      lock.lock()
      defer { lock.unlock() }
      return body(&counts)
    }
  }

  static let table = Table()

  /// The loads started and stopped for `url` (each test uses URLs of its own).
  static func counts(for url: URL) -> Counts {
    table.withLock { $0[url.absoluteString] ?? Counts() }
  }

  /// A session whose only protocol is this one.
  static func session() -> URLSession {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.protocolClasses = [StubProtocol.self]
    return URLSession(configuration: configuration)
  }

  override class func canInit(with request: URLRequest) -> Bool {
    request.url?.scheme == "stub"
  }

  override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

  override func startLoading() {
    guard let url = request.url else { return }
    StubProtocol.table.withLock { $0[url.absoluteString, default: Counts()].started += 1 }
    let parts = url.pathComponents.filter { $0 != "/" }
    switch parts.first {
    case "ok":
      let response = HTTPURLResponse(
        url: url, statusCode: 200, httpVersion: "HTTP/1.1",
        headerFields: ["Content-Type": "text/plain"])!
      client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
      client?.urlProtocol(self, didLoad: Data(parts.dropFirst().joined(separator: "/").utf8))
      client?.urlProtocolDidFinishLoading(self)
    case "fail":
      let code: URLError.Code =
        parts.dropFirst().first == "offline" ? .notConnectedToInternet : .unknown
      client?.urlProtocol(self, didFailWithError: URLError(code))
    default:
      break  // "hang": answered by nothing but cancellation
    }
  }

  override func stopLoading() {
    guard let url = request.url else { return }
    StubProtocol.table.withLock { $0[url.absoluteString, default: Counts()].stopped += 1 }
  }
}
