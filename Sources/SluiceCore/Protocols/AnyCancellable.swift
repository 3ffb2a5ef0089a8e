public import Synchronization

/// A type-erasing cancellable that cancels when it is deinitialised, as in Combine.
///
/// Keep the `AnyCancellable` a subscription returns (in a property or a `Set`) for as long as
/// the subscription should live. `cancel()` runs the cancellation closure at most once, however
/// many threads call it, and then releases it.
public final class AnyCancellable: Cancellable, Hashable {
  // Safety (`@exclusivity(unchecked)` on `action`): `action` is written by `init`, then only by
  // the one `cancel()` whose exchange of `cancelled` won, or read by `deinit`, which runs when
  // no other reference exists (and so after any `cancel()` has returned).

  /// What to do on cancel: a closure, or a cancellable kept as is (no closure to allocate).
  @usableFromInline
  enum Action {
    case closure(() -> Void)
    case cancellable(any Cancellable)
  }

  /// The action, until the cancel that runs it takes it.
  @usableFromInline @exclusivity(unchecked) var action: Action?
  /// Set by the first `cancel()`: the one that runs and releases the action.
  @usableFromInline let cancelled = Atomic<Bool>(false)

  /// Creates a cancellable that runs `cancel` when cancelled or deinitialised.
  public init(_ cancel: @escaping () -> Void) {
    action = .closure(cancel)
  }

  /// Creates a cancellable that cancels `canceller` when cancelled or deinitialised.
  @inlinable
  public init<C: Cancellable>(_ canceller: C) {
    action = .cancellable(canceller)
  }

  deinit {
    // The last reference is gone, so no `cancel()` runs now: a plain load decides (the usual
    // end of a subscription kept only by its cancellable costs no read-modify-write here).
    guard !cancelled.load(ordering: .acquiring) else { return }
    Self.run(action.take())
  }

  public func cancel() {
    guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
    Self.run(action.take())  // moved out: no copy, no destroy
  }

  /// Runs `action`, consumed (the existential is moved, not copied).
  static func run(_ action: consuming Action?) {
    switch consume action {
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
