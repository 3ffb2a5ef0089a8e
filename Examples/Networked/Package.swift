// swift-tools-version: 6.1
// Sluice pipelines across processes, over SwiftNIO channels: a server writes a pipeline's values
// through a `NIOAsyncChannel`'s outbound writer, a client turns the channel's inbound sequence
// into a publisher, and the subscriber's demand reaches TCP flow control. A package of its own,
// so that the main package stays dependency-free.
import Foundation
import PackageDescription

/// The main package is two folders up; a path dependency's identity is its folder name, which
/// depends on where it was cloned.
let sluice = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
  name: "SluiceNetworked",
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(path: "../.."),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
  ],
  targets: [
    .target(
      name: "NetworkedPipelines",
      dependencies: [
        .product(name: "Sluice", package: sluice),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
      ]),
    // A server process: serves a counting pipeline to every client (the tests start it).
    .executableTarget(name: "pipeline-server", dependencies: ["NetworkedPipelines"]),
    // Values per second over loopback: the Sluice pipeline against a plain NIOAsyncChannel loop.
    .executableTarget(name: "pipeline-bench", dependencies: ["NetworkedPipelines"]),
    .testTarget(
      name: "NetworkedPipelinesTests",
      dependencies: ["NetworkedPipelines", "pipeline-server"]),
  ],
  swiftLanguageModes: [.v6]
)
