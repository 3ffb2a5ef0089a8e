// The umbrella module: `import Sluice` gives the whole library.
@_exported public import SluiceAsync
@_exported public import SluiceCore
@_exported public import SluiceTesting
