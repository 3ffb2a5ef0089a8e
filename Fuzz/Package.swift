// swift-tools-version: 6.2
// Coverage-guided fuzz targets (libFuzzer) for the parts of Sluice that take input: the marble
// diagram parser, `Subscribers.Demand` arithmetic, operator pipelines driven by scripts decoded
// from the fuzzer's bytes and checked by SluiceTesting's rule fuzzer, and SluiceNIO's frame
// decoder and value codecs. A package of its own: the main package's products never link it,
// and it is only built with the fuzzer sanitizer (`run.sh`, which CI runs; README.md):
//
//     swift build --package-path Fuzz -c release -Xswiftc -sanitize=fuzzer,address
import Foundation
import PackageDescription

/// The main package is the parent directory; a path dependency's identity is its folder name,
/// which depends on where it was cloned (so the clone must not be named `fuzz` or `nio`).
let sluice = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().lastPathComponent

let strict: [SwiftSetting] = [
  .treatAllWarnings(as: .error),
  .enableUpcomingFeature("ExistentialAny"),
  .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
  name: "SluiceFuzz",
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(path: ".."),
    .package(path: "../Integrations/NIO"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
  ],
  targets: [
    // libFuzzer's driver, declared for Swift.
    .target(name: "CLibFuzzer"),
    // Running libFuzzer, reading its input and reporting a broken property, for every target.
    .target(name: "FuzzDriver", dependencies: ["CLibFuzzer"], swiftSettings: strict),
    .executableTarget(
      name: "MarbleFuzzer",
      dependencies: ["FuzzDriver", .product(name: "SluiceTesting", package: sluice)],
      swiftSettings: strict),
    .executableTarget(
      name: "DemandFuzzer",
      dependencies: ["FuzzDriver", .product(name: "SluiceCore", package: sluice)],
      swiftSettings: strict),
    .executableTarget(
      name: "PipelineFuzzer",
      dependencies: [
        "FuzzDriver", .product(name: "SluiceCore", package: sluice),
        .product(name: "SluiceTesting", package: sluice),
      ],
      swiftSettings: strict),
    .executableTarget(
      name: "FrameFuzzer",
      dependencies: [
        "FuzzDriver", .product(name: "SluiceNIO", package: "NIO"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOEmbedded", package: "swift-nio"),
      ],
      swiftSettings: strict),
  ],
  swiftLanguageModes: [.v6]
)
