// swift-tools-version: 6.2
// Sluice: Combine's reactive-streams model, and bridges to Swift structured concurrency.
// No dependencies beyond the toolchain (Foundation, Dispatch, Synchronization).
import PackageDescription

/// Every target: Swift 6 language mode (complete strict concurrency) and zero warnings.
let strict: [SwiftSetting] = [
  .treatAllWarnings(as: .error),
  .enableUpcomingFeature("ExistentialAny"),
  .enableUpcomingFeature("InternalImportsByDefault"),
]

/// Platforms without Apple's Combine, where the `Combine` product is Sluice.
let withoutAppleCombine: [Platform] = [.linux, .windows, .android, .wasi, .openbsd]

/// The module behind the `Combine` product. On a host with Apple's Combine (the manifest is
/// evaluated on the host) it is not named `Combine`, so building this package there never makes a
/// module that shadows Apple's framework; clients name the product with the platform condition
/// `.when(platforms: [.linux, .windows, .android, .wasi, .openbsd])` (see the migration article).
#if canImport(Darwin)
  let combineModule = "SluiceCombine"
#else
  let combineModule = "Combine"
#endif

let package = Package(
  name: "Sluice",
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .library(name: "Sluice", targets: ["Sluice"]),
    .library(name: "SluiceCore", targets: ["SluiceCore"]),
    .library(name: "SluiceAsync", targets: ["SluiceAsync"]),
    .library(name: "SluiceTesting", targets: ["SluiceTesting"]),
    // `import Combine` on platforms without Apple's Combine: code written for Combine builds
    // unchanged, `#if canImport(Combine)` included.
    .library(name: "Combine", targets: [combineModule]),
    // URLSession's publishers: a product of their own, so that the others never link
    // FoundationNetworking.
    .library(name: "SluiceNetworking", targets: ["SluiceNetworking"]),
    .executable(name: "sluice-tour", targets: ["SluiceTour"]),
    .executable(name: "sluice-diagrams", targets: ["SluiceDiagramsTool"]),
  ],
  targets: [
    .target(name: "SluiceCore", swiftSettings: strict),
    .target(name: "SluiceAsync", dependencies: ["SluiceCore"], swiftSettings: strict),
    .target(name: "SluiceTesting", dependencies: ["SluiceCore"], swiftSettings: strict),
    .target(name: "SluiceNetworking", dependencies: ["SluiceCore"], swiftSettings: strict),
    .target(
      name: "Sluice", dependencies: ["SluiceCore", "SluiceAsync"], swiftSettings: strict),
    .target(
      name: combineModule, dependencies: ["Sluice"], path: "Sources/Combine",
      swiftSettings: strict),
    // An app-shaped example (view model, actor, for-await), built like any app target.
    .target(
      name: "SearchApp", dependencies: ["Sluice"], path: "Examples/SearchApp",
      swiftSettings: strict),
    .target(
      name: "SluiceExamples", dependencies: ["Sluice", "SluiceTesting", "SearchApp"],
      path: "Examples/SluiceExamples",
      swiftSettings: strict),
    // URLSession's publisher from async code (its own target: the tour never links
    // FoundationNetworking).
    .target(
      name: "URLSessionExamples", dependencies: ["Sluice", "SluiceNetworking"],
      path: "Examples/URLSessionExamples", swiftSettings: strict),
    .executableTarget(
      name: "SluiceTour", dependencies: ["SluiceExamples"], path: "Examples/Tour",
      swiftSettings: strict),
    // Every operator's and publisher's marble diagram, drawn from a run on virtual time
    // (`swift run sluice-diagrams` writes them into the DocC catalogs).
    .target(
      name: "SluiceDiagrams", dependencies: ["Sluice", "SluiceTesting", "SluiceNetworking"],
      path: "Examples/Diagrams/Scenarios", swiftSettings: strict),
    .executableTarget(
      name: "SluiceDiagramsTool", dependencies: ["SluiceDiagrams"], path: "Examples/Diagrams/Tool",
      swiftSettings: strict),
    // Helpers shared by the test targets (not a product): racing producers, threads of their own.
    .target(
      name: "SluiceTestSupport", dependencies: ["SluiceHeapStats"], path: "Tests/SluiceTestSupport",
      swiftSettings: strict),
    // The heap bytes alive in the process, from its allocator (memory tests count what is still
    // allocated, not resident pages, so they hold under the sanitizers too).
    .target(name: "SluiceHeapStats", path: "Tests/SluiceHeapStats"),
    .testTarget(
      name: "SluiceCoreTests", dependencies: ["SluiceCore", "SluiceTesting", "SluiceTestSupport"],
      swiftSettings: strict),
    .testTarget(
      name: "SluiceAsyncTests",
      dependencies: ["SluiceAsync", "SluiceTesting", "SluiceTestSupport"],
      swiftSettings: strict),
    .testTarget(
      name: "SluiceNetworkingTests",
      dependencies: [
        "Sluice", "SluiceNetworking", "SluiceTesting", "SluiceTestSupport", "URLSessionExamples",
      ],
      swiftSettings: strict),
    .testTarget(
      name: "SluiceExamplesTests",
      dependencies: [
        "Sluice", "SluiceExamples", "SearchApp", "SluiceTesting", "SluiceTestSupport",
        "SluiceDiagrams",
      ],
      swiftSettings: strict),
    // Written as a client of Apple's Combine: `import Combine`, qualified names. On Apple
    // platforms it runs against Apple's Combine, elsewhere against the `Combine` product.
    .testTarget(
      name: "CombineDropInTests",
      dependencies: [
        .target(name: combineModule, condition: .when(platforms: withoutAppleCombine)),
        "SluiceTestSupport",
      ],
      swiftSettings: strict),
    .testTarget(
      name: "SluiceTestingTests",
      dependencies: ["SluiceCore", "SluiceTesting", "SluiceTestSupport"],
      swiftSettings: strict),
  ],
  swiftLanguageModes: [.v6]
)
