// SluiceAsync: the bridges between publishers and Swift concurrency.
//
// Its features arrive with the bridges issue; the module exists now so that the package's
// products, and code that imports `Sluice`, are stable from the start.
@_exported public import SluiceCore
