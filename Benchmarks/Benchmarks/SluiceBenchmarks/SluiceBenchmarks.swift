import Benchmark

/// Every benchmark processes `elements` values per iteration; `compare.sh` divides by it to
/// report per-element costs. Names are "<scenario> | <implementation>": rows with the same
/// scenario are compared with the `Sluice` row.
let elements = 1_000

let benchmarks: @Sendable () -> Void = {
  Benchmark.defaultConfiguration = .init(
    metrics: [.throughput, .wallClock, .mallocCountTotal],
    maxDuration: .seconds(1),
    maxIterations: 2_000
  )
  coreBenchmarks()
  bridgeBenchmarks()
  operatorBenchmarks()
}

/// Registers `body` under "<scenario> | <implementation>".
func measure(
  _ scenario: String, _ implementation: String, _ body: @escaping @Sendable () -> Void
) {
  Benchmark("\(scenario) | \(implementation)") { benchmark in
    for _ in benchmark.scaledIterations { body() }
  }
}

/// Registers the async `body` under "<scenario> | <implementation>".
func measureAsync(
  _ scenario: String, _ implementation: String, _ body: @escaping @Sendable () async -> Void
) {
  Benchmark("\(scenario) | \(implementation)") { benchmark in
    for _ in benchmark.scaledIterations { await body() }
  }
}

/// The share of values a lossy scenario delivered, in per mille (reported as its own column).
let delivered = BenchmarkMetric.custom(
  "delivered ‰", polarity: .prefersLarger, useScalingFactor: false)

/// Marks the implementations registered with ``measureDelivery(_:_:_:)``: package-benchmark
/// reports a stale custom metric for every other benchmark, so `compare.sh` reads it only here.
let mayDrop = " (may drop)"

/// Registers the async `body`, which returns how many of `elements` values it delivered, under
/// "<scenario> | <implementation> (may drop)", with the delivered share as a metric: for implementations
/// that may drop values by design (a dropping buffer, OpenCombine's `values` on a subject).
func measureDelivery(
  _ scenario: String, _ implementation: String, _ body: @escaping @Sendable () async -> Int
) {
  let configuration = Benchmark.Configuration(
    metrics: Benchmark.defaultConfiguration.metrics + [delivered])
  Benchmark("\(scenario) | \(implementation)\(mayDrop)", configuration: configuration) {
    benchmark in
    for _ in benchmark.scaledIterations {
      benchmark.measurement(delivered, await body() * 1_000 / elements)
    }
  }
}

/// Stops a benchmark that lost or duplicated values: a lossless scenario that is not lossless
/// is a bug, not a result.
func check(_ delivered: Int, _ expected: Int = elements, _ scenario: String) {
  if delivered != expected {
    fatalError("\(scenario): delivered \(delivered) values, expected \(expected)")
  }
}
