// swift-tools-version: 6.1
// Differential conformance: seeded random pipelines run on Sluice and on OpenCombine (whose
// behaviour is tested against Apple's Combine), comparing what the source and the subscriber
// see. A package of its own so that the main package stays dependency-free.
import Foundation
import PackageDescription

/// The main package is the parent directory; a path dependency's identity is its folder name,
/// which depends on where it was cloned.
let sluice = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().lastPathComponent

let package = Package(
  name: "SluiceConformance",
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(path: ".."),
    .package(url: "https://github.com/OpenCombine/OpenCombine", exact: "0.14.0"),
  ],
  targets: [
    .target(name: "ScenarioKit"),
    // The two sides compile the same driver (`SluiceSide/Driver.swift`; the other side's file
    // is a symbolic link to it) against two implementations of Combine's API.
    .target(
      name: "SluiceSide",
      dependencies: ["ScenarioKit", .product(name: "SluiceCore", package: sluice)],
      swiftSettings: [.define("SLUICE_SIDE")]),
    .target(
      name: "OpenCombineSide",
      dependencies: ["ScenarioKit", .product(name: "OpenCombine", package: "OpenCombine")]),
    .executableTarget(
      name: "sluice-conformance",
      dependencies: ["ScenarioKit", "SluiceSide", "OpenCombineSide"]),
  ],
  swiftLanguageModes: [.v6]
)
