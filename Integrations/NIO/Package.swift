// swift-tools-version: 6.2
// SluiceNIO: Sluice pipelines across processes, over SwiftNIO. A server subscribes to a
// pipeline for each connection and writes its values as length-prefixed frames, asking for more
// only while the connection takes them; a client publisher reads the frames back, its
// subscriber's demand reaching TCP flow control. A package of its own, so that the main package
// stays dependency-free; users add it by path or URL and depend on the `SluiceNIO` product.
import Foundation
import PackageDescription

/// The main package is two folders up; a path dependency's identity is its folder name, which
/// depends on where it was cloned.
let sluice = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

/// Every target: Swift 6 language mode (complete strict concurrency) and zero warnings.
let strict: [SwiftSetting] = [
  .treatAllWarnings(as: .error),
  .enableUpcomingFeature("ExistentialAny"),
  .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
  name: "SluiceNIO",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "SluiceNIO", targets: ["SluiceNIO"]),
    // A server process serving counting, string, byte or raw-byte pipelines (the tests and the
    // tools start it).
    .executable(name: "pipeline-server", targets: ["pipeline-server"]),
    // Values per second over loopback: the Sluice path against a plain NIOAsyncChannel loop.
    .executable(name: "pipeline-bench", targets: ["pipeline-bench"]),
    // Server memory per client that never reads, and the time to a first value meanwhile.
    .executable(name: "pipeline-flood", targets: ["pipeline-flood"]),
  ],
  dependencies: [
    .package(path: "../.."),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
  ],
  targets: [
    .target(
      name: "SluiceNIO",
      dependencies: [
        .product(name: "Sluice", package: sluice),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),
    .executableTarget(
      name: "pipeline-server",
      dependencies: [
        "SluiceNIO",
        .product(name: "Sluice", package: sluice),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),
    .executableTarget(
      name: "pipeline-bench",
      dependencies: [
        "SluiceNIO",
        .product(name: "Sluice", package: sluice),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),
    .executableTarget(
      name: "pipeline-flood",
      dependencies: [
        "SluiceNIO",
        .product(name: "Sluice", package: sluice),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
      ],
      swiftSettings: strict),
    .testTarget(
      name: "SluiceNIOTests",
      dependencies: [
        "SluiceNIO", "pipeline-server",
        .product(name: "Sluice", package: sluice),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOEmbedded", package: "swift-nio"),
      ],
      swiftSettings: strict),
  ],
  swiftLanguageModes: [.v6]
)
