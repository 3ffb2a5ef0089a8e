// URLSession's publisher from async code, in a target of its own so that the main tour never links
// FoundationNetworking. The session answers from a stub `URLProtocol` (canned JSON), as an app's
// tests would, so the example runs without a network.
import Sluice
import SluiceNetworking

#if canImport(FoundationNetworking)
  import Foundation
  public import FoundationNetworking
#else
  public import Foundation
#endif

/// A forecast as the stub service returns it.
public struct Forecast: Decodable, Sendable, Equatable {
  public let city: String
  public let celsius: Double
}

/// A client an app would write: an actor owning its session, each call a pipeline
/// `dataTaskPublisher → tryMap(status) → decode → retry` awaited with `firstValue()`.
public actor WeatherClient {
  private let session: URLSession

  public init(session: URLSession = StubWeatherService.session()) {
    self.session = session
  }

  /// The forecast for `city`: a failed load is retried once; an unknown city is an error.
  public func forecast(for city: String) async throws -> Forecast {
    let url = URL(string: "stub://weather/\(city)")!
    return try await session.dataTaskPublisher(for: url)
      .tryMap { data, response in
        guard (response as? HTTPURLResponse)?.statusCode == 200 else {
          throw URLError(.fileDoesNotExist)
        }
        return data
      }
      .decode(type: Forecast.self, decoder: JSONDecoder())
      .retry(1)
      .firstValue()
  }

  /// Forecasts for several cities, loaded at most two at a time, in the order asked.
  public func forecasts(for cities: [String]) async throws -> [Forecast] {
    try await cities.publisher
      .flatMap(maxPublishers: .max(2)) { [session] city in
        // `session.sluice` names Sluice's publisher where Foundation has Combine's own.
        session.sluice.dataTaskPublisher(for: URL(string: "stub://weather/\(city)")!)
          .map(\.data)
          .decode(type: Forecast.self, decoder: JSONDecoder())
      }
      .collect()
      .map { found in cities.compactMap { city in found.first { $0.city == city } } }
      .firstValue()
  }
}

/// Serves `stub://weather/<city>` from a table: a JSON forecast, or 404 for an unknown city.
public final class StubWeatherService: URLProtocol {
  static let table: [String: String] = [
    "oslo": #"{"city": "oslo", "celsius": -3.5}"#,
    "lima": #"{"city": "lima", "celsius": 19}"#,
    "cairo": #"{"city": "cairo", "celsius": 31}"#,
  ]

  /// An ephemeral session whose only protocol is this stub.
  public static func session() -> URLSession {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.protocolClasses = [StubWeatherService.self]
    return URLSession(configuration: configuration)
  }

  override public class func canInit(with request: URLRequest) -> Bool {
    request.url?.scheme == "stub"
  }

  override public class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

  override public func startLoading() {
    guard let url = request.url else { return }
    let body = Self.table[url.lastPathComponent]
    let response = HTTPURLResponse(
      url: url, statusCode: body == nil ? 404 : 200, httpVersion: "HTTP/1.1", headerFields: nil)!
    client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
    client?.urlProtocol(self, didLoad: Data((body ?? "").utf8))
    client?.urlProtocolDidFinishLoading(self)
  }

  override public func stopLoading() {}
}

/// What the URLSession example prints.
public func urlSessionTour() async -> [String] {
  var lines: [String] = []
  let client = WeatherClient()
  if let oslo = try? await client.forecast(for: "oslo") {
    lines.append("dataTaskPublisher → decode → firstValue(): \(oslo.city) \(oslo.celsius)°C")
  }
  do {
    _ = try await client.forecast(for: "atlantis")
  } catch {
    lines.append("an unknown city fails after one retry: \(error is URLError ? "URLError" : "?")")
  }
  let many = (try? await client.forecasts(for: ["lima", "cairo", "oslo"])) ?? []
  lines.append("flatMap(maxPublishers: .max(2)) over sluice.dataTaskPublisher: \(many.map(\.city))")
  return lines
}
