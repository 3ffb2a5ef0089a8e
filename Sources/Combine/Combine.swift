// `import Combine` where Apple's Combine does not exist (Linux, Windows, Android, WASI, OpenBSD):
// this module re-exports what `import Sluice` gives (SluiceCore and SluiceAsync), so code written
// for Combine, qualified names included (`Combine.Subscription`, `Combine.Publishers.Map`), builds
// unchanged — the convention of the toolchain, whose Foundation, Dispatch and XCTest are open
// implementations under Apple's module names.
//
// On a host with Apple's Combine the manifest names this target `SluiceCombine` instead, so the
// package never builds a module that could shadow Apple's framework; there it re-exports Apple's
// Combine (a client that forgot the platform condition still gets the real thing).
#if canImport(Darwin)
  @_exported public import Combine
#else
  @_exported public import Sluice
#endif
