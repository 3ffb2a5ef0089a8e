/// A type-erasing cancellable that cancels when it is deinitialised, as in Combine.
///
/// Keep the `AnyCancellable` a subscription returns (in a property or a `Set`) for as long as
/// the subscription should live. `cancel()` runs the cancellation closure at most once, however
/// many threads call it, and then releases it.
public final class AnyCancellable: Cancellable, Hashable {
  /// What to do on cancel: a closure, or a cancellable kept as is (no closure to allocate).
  @usableFromInline
  enum Action {
    case closure(() -> Void)
    case cancellable(any Cancellable)
  }

  @usableFromInline let action: Lock<Action?>

  /// Creates a cancellable that runs `cancel` when cancelled or deinitialised.
  public init(_ cancel: @escaping () -> Void) {
    action = Lock(.closure(cancel))
  }

  /// Creates a cancellable that cancels `canceller` when cancelled or deinitialised.
  @inlinable
  public init<C: Cancellable>(_ canceller: C) {
    action = Lock(.cancellable(canceller))
  }

  deinit { cancel() }

  public func cancel() {
    let taken = action.withLock { $0.take() }  // moved out: no copy, no destroy
    switch consume taken {  // consumed: the existential is moved, not copied
    case .closure(let cancel): cancel()
    case .cancellable(let cancellable): cancellable.cancel()
    case nil: break
    }
  }

  /// Stores this cancellable in `collection`.
  public func store<C: RangeReplaceableCollection>(in collection: inout C)
  where C.Element == AnyCancellable {
    collection.append(self)
  }

  /// Stores this cancellable in `set`.
  public func store(in set: inout Set<AnyCancellable>) {
    set.insert(self)
  }

  public static func == (lhs: AnyCancellable, rhs: AnyCancellable) -> Bool { lhs === rhs }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(ObjectIdentifier(self))
  }
}
