// SluiceAsync: the bridges between publishers and Swift concurrency. It re-exports SluiceCore,
// so `import SluiceAsync` is enough to use publishers with `async`/`await`.
@_exported public import SluiceCore
