extension Subscribers {
  /// A simple subscriber that assigns received elements to a property indicated by a key path,
  /// as in Combine.
  ///
  /// **Demand**: `.unlimited` on subscription. **Ordering**: each value is assigned on the
  /// publisher's thread as it arrives. **Cancellation**: `cancel()` or completion cancels or ends
  /// the subscription and releases `object`, which the subscriber holds strongly until then. A
  /// completion that arrives before any subscription is ignored, as in Combine (the object is
  /// kept and a later subscription is accepted); a `cancel()` before it is honoured (Combine
  /// ignores that too): the object is released and a later subscription cancelled.
  public final class Assign<Root, Input>: Subscriber, Cancellable, CustomStringConvertible,
    CustomReflectable, CustomPlaygroundDisplayConvertible, @unchecked Sendable
  {
    // Safety: `object` is held in the lock-protected lifecycle; assignments run after unlocking
    // on the delivering thread, which the publisher rules keep serial.
    public typealias Failure = Never

    @usableFromInline struct Target {
      @usableFromInline let object: Root
      @usableFromInline let keyPath: ReferenceWritableKeyPath<Root, Input>

      @inlinable init(object: Root, keyPath: ReferenceWritableKeyPath<Root, Input>) {
        self.object = object
        self.keyPath = keyPath
      }
    }

    @usableFromInline let box: LifecycleBox<Target>

    /// The key path to assign to.
    public let keyPath: ReferenceWritableKeyPath<Root, Input>

    /// The object that contains the property, until the subscriber completes or is cancelled.
    public var object: Root? { box.payload?.object }

    /// Creates a subscriber that assigns each value to `object[keyPath: keyPath]`.
    ///
    /// Its subscription and values are handled in code specialised where it is made (generic,
    /// each value went through runtime metadata lookups).
    @inlinable
    public init(object: Root, keyPath: ReferenceWritableKeyPath<Root, Input>) {
      self.keyPath = keyPath
      box = LifecycleBox(Target(object: object, keyPath: keyPath))
    }

    @inlinable
    public func receive(subscription: any Subscription) {
      box.receive(subscription: subscription, requesting: .unlimited)
    }

    @inlinable
    public func receive(_ value: Input) -> Subscribers.Demand {
      // Only the object is copied out of the lock (one retain, not two): the key path is this
      // subscriber's own, immutable.
      if let object = box.projectPayloadForValue({ $0?.object }) {
        object[keyPath: keyPath] = value
      }
      return .none
    }

    @inlinable
    public func receive(completion: Subscribers.Completion<Never>) {
      withExtendedLifetime(box.payloadForCompletion(beforeSubscription: false)) {}
    }

    @inlinable
    public func cancel() { box.cancel() }

    public var description: String { "Assign \(Root.self)." }
    /// Combine's children: the object (nil once done), the key path and the status.
    public var customMirror: Mirror {
      let status: String
      if object == nil {
        status = "terminal"
      } else if let subscription = box.subscription {
        status = "subscribed(\(subscription))"
      } else {
        status = "awaitingSubscription"
      }
      return Mirror(
        self, children: ["object": object as Any, "keyPath": keyPath, "status": status])
    }
    public var playgroundDescription: Any { description }
  }
}

extension Publisher where Failure == Never {
  /// Assigns each element to a property on `object`, which is held strongly until the
  /// subscription completes or is cancelled.
  ///
  /// ![Marble diagram: input.assign(to: .text, on: label)](assign)
  @inlinable
  public func assign<Root>(
    to keyPath: ReferenceWritableKeyPath<Root, Output>, on object: Root
  ) -> AnyCancellable {
    let assign = Subscribers.Assign(object: object, keyPath: keyPath)
    subscribe(assign)
    return AnyCancellable(assign)
  }
}
