/// A type that publishes a property marked with an attribute, as in Combine.
///
/// `$property` is a publisher that emits the current value on subscription (on the first
/// demand) and then every new value. As in Combine, values are published in the property's
/// `willSet`: a subscriber reading the property while receiving sees the old value. When the
/// enclosing class is an ``ObservableObject``, its `objectWillChange` fires first.
///
/// `@Published` is only available on properties of classes.
///
/// ```swift
/// final class Weather { @Published var temperature = 20 }
/// let weather = Weather()
/// let c = weather.$temperature.sink { print($0) }   // prints "20"
/// weather.temperature = 25                           // prints "25"
/// ```
@propertyWrapper
public struct Published<Value> {
  @usableFromInline let storage: PublishedStorage<Value>

  /// Creates the published instance with an initial value.
  @inlinable
  public init(wrappedValue: Value) {
    storage = PublishedStorage(wrappedValue)
  }

  /// Creates the published instance with an initial value.
  @inlinable
  public init(initialValue: Value) {
    self.init(wrappedValue: initialValue)
  }

  @available(*, unavailable, message: "@Published is only available on properties of classes")
  public var wrappedValue: Value {
    get { fatalError("@Published is only available on properties of classes") }
    set { fatalError("@Published is only available on properties of classes") }
  }

  /// The property for which this instance exposes a publisher.
  public var projectedValue: Publisher {
    @inlinable mutating get { Publisher(storage) }
    set {}  // The publisher always belongs to this property; `assign(to:)` needs `inout`.
  }

  @inlinable
  public static subscript<EnclosingSelf: AnyObject>(
    _enclosingInstance object: EnclosingSelf,
    wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
    storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Published<Value>>
  ) -> Value {
    get { object[keyPath: storageKeyPath].storage.value }
    set { object[keyPath: storageKeyPath].storage.set(newValue) }
  }

  /// A publisher for properties marked with the `@Published` attribute.
  ///
  /// **Demand**: the current value on the first demand, then each new value against demand; a
  /// subscriber that had no demand when a value was set receives the latest value on its next
  /// request. Never completes.
  public struct Publisher: SluiceCore.Publisher {
    public typealias Output = Value
    public typealias Failure = Never

    @usableFromInline let storage: PublishedStorage<Value>

    @inlinable init(_ storage: PublishedStorage<Value>) {
      self.storage = storage
    }

    /// Specialised where it is called, as the subjects' own `receive` is: the subscription it
    /// makes delivers each value in code compiled for the subscriber's type.
    @inlinable
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Value, S.Failure == Never {
      storage.subject.subscribe(subscriber)
    }
  }
}

extension Publisher where Failure == Never {
  /// Republishes elements received from this publisher to a property marked with `@Published`.
  ///
  /// The subscription lives as long as the property's owner: there is no cancellable to keep.
  ///
  /// ```swift
  /// (1...3).publisher.assign(to: &model.$count)
  /// ```
  @inlinable
  public func assign(to published: inout Published<Output>.Publisher) {
    let storage = published.storage
    let sink = Subscribers.Sink<Output, Never>(
      receiveCompletion: { _ in }, receiveValue: { [weak storage] in storage?.set($0) })
    storage.keep(AnyCancellable(sink))
    subscribe(sink)
  }
}

/// Lets `ObservableObject` find `@Published` properties by reflection.
protocol PublishedStorageProvider {
  var publishedStorage: any PublishedStorageProtocol { get }
}

protocol PublishedStorageProtocol: AnyObject {
  func objectWillChangeInstallingIfAbsent(_ make: () -> ObservableObjectPublisher)
    -> ObservableObjectPublisher
  func install(objectWillChange: ObservableObjectPublisher)
}

extension Published: PublishedStorageProvider {
  var publishedStorage: any PublishedStorageProtocol { storage }
}

/// The reference storage behind a `@Published` property, shared by every copy of the wrapper.
///
/// Its setter and subject are reached from code specialised for the property's type (the
/// wrapper's subscript is inlinable): generic, each value set went through runtime metadata
/// lookups (a `$property.sink` cost three times OpenCombine's).
@usableFromInline
final class PublishedStorage<Value>: PublishedStorageProtocol, @unchecked Sendable {
  // Safety: mutable state is in `state`'s lock; publishers are called after unlocking.
  @usableFromInline struct State {
    @usableFromInline var value: Value
    @usableFromInline var objectWillChange: ObservableObjectPublisher?
    @usableFromInline var assignments: [AnyCancellable] = []

    @inlinable init(value: Value) { self.value = value }
  }

  @usableFromInline let state: Lock<State>
  @usableFromInline let subject: SubjectCore<Value, Never>

  @inlinable
  init(_ value: Value) {
    state = Lock(State(value: value))
    subject = SubjectCore(name: "PublishedSubject", currentValue: value)
  }

  @inlinable var value: Value { state.withLock { $0.value } }

  /// `objectWillChange` first, then the new value to `$property`'s subscribers, then the store.
  /// The value replaced is released after unlocking: its `deinit` may use the object (send
  /// `objectWillChange`, read the property).
  @inlinable
  func set(_ newValue: Value) {
    state.withLock { $0.objectWillChange }?.send()
    subject.send(newValue)
    let replaced = state.withLock { state in
      defer { state.value = newValue }
      return state.value
    }
    withExtendedLifetime(replaced) {}
  }

  @usableFromInline
  func keep(_ assignment: AnyCancellable) {
    state.withLock { $0.assignments.append(assignment) }
  }

  func objectWillChangeInstallingIfAbsent(_ make: () -> ObservableObjectPublisher)
    -> ObservableObjectPublisher
  {
    if let existing = state.withLock({ $0.objectWillChange }) { return existing }
    let made = make()
    return state.withLock { state in
      if let existing = state.objectWillChange { return existing }
      state.objectWillChange = made
      return made
    }
  }

  func install(objectWillChange: ObservableObjectPublisher) {
    state.withLock { state in
      if state.objectWillChange == nil { state.objectWillChange = objectWillChange }
    }
  }
}
