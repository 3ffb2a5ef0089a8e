extension AnyCancellable {
  /// A cancellable that cancels `task`, so a task can be kept, and cancelled, with a pipeline's
  /// other cancellables (when this is cancelled or deinitialised).
  public convenience init<Success, Failure>(_ task: Task<Success, Failure>) {
    self.init { task.cancel() }
  }
}

extension Task {
  /// Stores this task in `set`, type-erased as an `AnyCancellable` that cancels it.
  ///
  /// ```swift
  /// Task { await refresh() }.store(in: &cancellables)   // cancelled with the others
  /// ```
  public func store(in set: inout Set<AnyCancellable>) {
    AnyCancellable(self).store(in: &set)
  }

  /// Stores this task in `collection`, type-erased as an `AnyCancellable` that cancels it.
  public func store<C: RangeReplaceableCollection>(in collection: inout C)
  where C.Element == AnyCancellable {
    AnyCancellable(self).store(in: &collection)
  }
}
