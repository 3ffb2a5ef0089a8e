/// A protocol indicating that an activity or action supports cancellation, as in Combine.
///
/// Calling `cancel()` frees up any allocated resources and stops side effects such as timers,
/// network access or disk I/O. Implementations make `cancel()` idempotent and thread-safe.
public protocol Cancellable {
  /// Cancels the activity.
  func cancel()
}

extension Cancellable {
  /// Stores this cancellable, type-erased, in `collection`.
  public func store<C: RangeReplaceableCollection>(in collection: inout C)
  where C.Element == AnyCancellable {
    AnyCancellable(self).store(in: &collection)
  }

  /// Stores this cancellable, type-erased, in `set`.
  public func store(in set: inout Set<AnyCancellable>) {
    AnyCancellable(self).store(in: &set)
  }
}
