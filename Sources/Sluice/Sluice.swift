// The umbrella module: `import Sluice` where code said `import Combine` gives the library's
// production API (SluiceCore and SluiceAsync). Test tools (`TestScheduler`, `DispatchQueue.test`,
// recording subscribers, the rule checker) stay in `import SluiceTesting`, for test targets only,
// so they never collide with an app's own testing libraries.
@_exported public import SluiceAsync
@_exported public import SluiceCore
