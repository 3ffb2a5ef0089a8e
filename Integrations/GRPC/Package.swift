// swift-tools-version: 6.1
// Sluice pipelines on both ends of gRPC streams (grpc-swift 2 over its HTTP/2 transport): a
// server-streaming response written from a publisher, a request stream received as a publisher,
// a call's responses as a publisher whose subscriber's demand reaches HTTP/2 flow control. A
// package of its own, so that the main package stays dependency-free.
import Foundation
import PackageDescription

/// The main package is two folders up; a path dependency's identity is its folder name, which
/// depends on where it was cloned.
let sluice = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

// SwiftPM names a path dependency after its folder, and this package's folder (GRPC) already
// names it "grpc": in a clone of Sluice whose folder is called grpc the two would clash.
precondition(
  sluice.lowercased() != "grpc",
  """
  Integrations/GRPC: Sluice's folder is named '\(sluice)', which is also this package's name to \
  SwiftPM; clone (or mount) Sluice into a folder of another name.
  """)

/// What the example's executables and the tests use.
let pipelineTargets: [Target.Dependency] = [
  "GRPCPipelines", "SluiceGRPC",
  .product(name: "Sluice", package: sluice),
  .product(name: "GRPCCore", package: "grpc-swift-2"),
  .product(name: "GRPCNIOTransportHTTP2Posix", package: "grpc-swift-nio-transport"),
  .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
  .product(name: "SwiftProtobuf", package: "swift-protobuf"),
]

let package = Package(
  name: "SluiceGRPC",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "SluiceGRPC", targets: ["SluiceGRPC"])
  ],
  dependencies: [
    .package(path: "../.."),
    .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.3"),
    .package(url: "https://github.com/grpc/grpc-swift-nio-transport", from: "2.9.2"),
    .package(url: "https://github.com/grpc/grpc-swift-protobuf", from: "2.4.1"),
    .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
  ],
  targets: [
    // The adapters: publishers on both ends of gRPC's streaming RPCs. Depends on GRPCCore only
    // (any transport, any serializer).
    .target(
      name: "SluiceGRPC",
      dependencies: [
        .product(name: "Sluice", package: sluice),
        .product(name: "GRPCCore", package: "grpc-swift-2"),
      ]),
    // The example service: protobuf messages and the generated stubs (checked in, from
    // Protos/pipelines.proto; regenerate with Scripts/generate.sh), its implementation on
    // SluiceGRPC, the transports' settings.
    .target(
      name: "GRPCPipelines",
      dependencies: [
        "SluiceGRPC",
        .product(name: "Sluice", package: sluice),
        .product(name: "GRPCCore", package: "grpc-swift-2"),
        .product(name: "GRPCNIOTransportHTTP2Posix", package: "grpc-swift-nio-transport"),
        .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
        .product(name: "SwiftProtobuf", package: "swift-protobuf"),
      ]),
    // The server process the tests start: serves the example service, reports on stdout.
    .executableTarget(name: "pipeline-grpc-server", dependencies: pipelineTargets),
    // A client of the example service.
    .executableTarget(name: "pipeline-grpc-client", dependencies: pipelineTargets),
    // Messages per second through the adapters against plain grpc-swift loops; memory per
    // idle stream.
    .executableTarget(name: "pipeline-grpc-bench", dependencies: pipelineTargets),
    .testTarget(
      name: "SluiceGRPCTests",
      dependencies: pipelineTargets + ["pipeline-grpc-server", "pipeline-grpc-client"]),
  ],
  swiftLanguageModes: [.v6]
)
