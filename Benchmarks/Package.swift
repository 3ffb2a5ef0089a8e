// swift-tools-version: 6.1
// Sluice's benchmarks, in a package of their own so that the main package stays dependency-free.
// Each scenario runs for Sluice and for its anchor (OpenCombine, AsyncStream,
// swift-async-algorithms, hand-written code) in the same process; `compare.sh` prints the ratios.
import Foundation
import PackageDescription

/// The main package is the parent directory; a path dependency's identity is its folder name,
/// which depends on where it was cloned.
let sluice = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().lastPathComponent

let package = Package(
  name: "SluiceBenchmarks",
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(path: ".."),
    .package(url: "https://github.com/OpenCombine/OpenCombine", exact: "0.14.0"),
    .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.0.0"),
    .package(
      url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1",
      traits: ["MallocInterposer"]),
  ],
  targets: [
    .target(name: "AppCode", path: "Benchmarks/AppCode"),
    .target(name: "MallocCount", path: "Benchmarks/MallocCount"),
    // The rows that wait for queues, timers and actors, measured by a plain executable (see its
    // main.swift for why not by package-benchmark).
    .executableTarget(
      name: "RealTime",
      dependencies: [
        "MallocCount",
        .product(name: "Sluice", package: sluice),
        .product(name: "OpenCombine", package: "OpenCombine"),
        .product(name: "OpenCombineDispatch", package: "OpenCombine"),
        .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
      ],
      path: "Benchmarks/RealTime"
    ),
    // The shapes apps write (erased, shared, merged, many senders) against OpenCombine, in one
    // process, alternately (issue 38).
    .executableTarget(
      name: "Shapes",
      dependencies: [
        .product(name: "Sluice", package: sluice),
        .product(name: "OpenCombine", package: "OpenCombine"),
      ],
      path: "Benchmarks/Shapes"
    ),
    // A second thread's call latency while another thread sends without pause (issue 29).
    .executableTarget(
      name: "Liveness",
      dependencies: [
        .product(name: "Sluice", package: sluice),
        .product(name: "OpenCombine", package: "OpenCombine"),
      ],
      path: "Probes/Liveness"
    ),
    // Allocation counts, checked in CI against Thresholds/ (exact: they do not move with load).
    .executableTarget(
      name: "SluiceAllocations",
      dependencies: [
        .product(name: "Sluice", package: sluice),
        .product(name: "Benchmark", package: "package-benchmark"),
      ],
      path: "Benchmarks/SluiceAllocations",
      plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
    ),
    .executableTarget(
      name: "SluiceBenchmarks",
      dependencies: [
        "AppCode",
        .product(name: "Sluice", package: sluice),
        .product(name: "OpenCombine", package: "OpenCombine"),
        .product(name: "OpenCombineDispatch", package: "OpenCombine"),
        .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
        .product(name: "Benchmark", package: "package-benchmark"),
      ],
      path: "Benchmarks/SluiceBenchmarks",
      plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
    ),
  ],
  swiftLanguageModes: [.v6]
)
