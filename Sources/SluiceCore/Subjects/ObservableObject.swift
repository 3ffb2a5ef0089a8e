/// A type of object with a publisher that emits before the object has changed, as in Combine.
///
/// By default an `ObservableObject` synthesises an `objectWillChange` publisher that emits
/// before any of its `@Published` properties changes (found by reflection, including in
/// superclasses). A class with no `@Published` property gets a new, silent publisher on each
/// access; give it a stored `objectWillChange` of its own if it must announce changes.
///
/// ```swift
/// final class Counter: ObservableObject {
///   @Published var count = 0
/// }
/// let counter = Counter()
/// let c = counter.objectWillChange.sink { print("will change from \(counter.count)") }
/// counter.count += 1   // prints "will change from 0"
/// ```
public protocol ObservableObject: AnyObject {
  /// The type of publisher that emits before the object has changed.
  associatedtype ObjectWillChangePublisher: Publisher = ObservableObjectPublisher
  where ObjectWillChangePublisher.Failure == Never

  /// A publisher that emits before the object has changed.
  var objectWillChange: ObjectWillChangePublisher { get }
}

extension ObservableObject where ObjectWillChangePublisher == ObservableObjectPublisher {
  /// A publisher that emits before any `@Published` property of this object changes.
  public var objectWillChange: ObservableObjectPublisher {
    var storages: [any PublishedStorageProtocol] = []
    var mirror: Mirror? = Mirror(reflecting: self)
    while let current = mirror {
      for child in current.children {
        if let published = child.value as? any PublishedStorageProvider {
          storages.append(published.publishedStorage)
        }
      }
      mirror = current.superclassMirror
    }
    guard let first = storages.first else { return ObservableObjectPublisher() }
    let publisher = first.objectWillChangeInstallingIfAbsent(ObservableObjectPublisher.init)
    for storage in storages.dropFirst() { storage.install(objectWillChange: publisher) }
    return publisher
  }
}

/// A publisher that publishes changes from observable objects, as in Combine.
///
/// **Demand**: on/off, as in Combine: once a subscriber has made any request it receives a
/// `Void` for every later `send()`; a `send()` before its first request is not kept for it.
/// **Ordering** and **Cancellation**: as ``PassthroughSubject``. `send()` is thread-safe.
public final class ObservableObjectPublisher: Publisher, @unchecked Sendable {
  // Safety: all state is in `core`, which is thread-safe.
  public typealias Output = Void
  public typealias Failure = Never

  @usableFromInline let core = SubjectCore<Void, Never>(
    name: "ObservableObjectPublisher", currentValue: nil, demandIsOnOff: true)

  /// Creates an observable object publisher.
  public init() {}

  /// Specialised where it is called, as the subjects' own `receive` is.
  @inlinable
  public func receive<S: Subscriber>(subscriber: S) where S.Input == Void, S.Failure == Never {
    core.subscribe(subscriber, subject: self)
  }

  /// Sends the changed value to the downstream subscribers.
  @inlinable public func send() { core.send(()) }
}
