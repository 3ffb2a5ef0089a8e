extension Subscribers {
  /// A simple subscriber that requests an unlimited number of values upon subscription, as in
  /// Combine.
  ///
  /// **Demand**: `.unlimited`, once, when it receives its subscription; a second subscription is
  /// cancelled. **Ordering**: closures run on the publisher's thread, in the order signals
  /// arrive. **Cancellation**: `cancel()` cancels the upstream and releases both closures; so does
  /// completion. A `Sink` does not cancel when deinitialised; the `AnyCancellable` from
  /// `sink(receiveCompletion:receiveValue:)` does.
  public final class Sink<Input, Failure: Error>: Subscriber, Cancellable, CustomStringConvertible,
    CustomReflectable, CustomPlaygroundDisplayConvertible, @unchecked Sendable
  {
    // Safety: the lifecycle (subscription, completion, cancellation) lives in `box`, a
    // lock-protected state machine whose actions run after unlocking. Values take the lock-free
    // path: `gate` admits them while subscribed, and `valueClosures` (a +1 reference, immutable)
    // is released exactly once, by whoever the gate says.
    /// A class, so that reading the closures for a value retains one reference, not two.
    @usableFromInline
    final class Closures {
      @usableFromInline let receiveValue: (Input) -> Void
      @usableFromInline let receiveCompletion: (Subscribers.Completion<Failure>) -> Void

      @inlinable
      init(
        receiveValue: @escaping (Input) -> Void,
        receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void
      ) {
        self.receiveValue = receiveValue
        self.receiveCompletion = receiveCompletion
      }
    }

    /// The lifecycle, holding the ``Closures`` object until the end. Its type does not depend
    /// on `Input` or `Failure`, so the (unspecialised) deinitialiser destroys it without looking
    /// up generic metadata.
    @usableFromInline let box: LifecycleBox<AnyObject>
    /// Admits values until the end (completion or cancel): as in Combine, a value that arrives
    /// before the subscription reaches `receiveValue` too.
    @usableFromInline let gate = DeliveryGate(open: true)
    /// The closures for values, retained until the gate lets go of them.
    @usableFromInline let valueClosures: Unmanaged<Closures>
    /// `cancel()` as compiled where the sink was made (specialized); `AnyCancellable` calls
    /// `cancel()` through `any Cancellable`, whose generic implementation forwards here.
    @usableFromInline let specializedCancel: (Sink) -> Void

    /// Creates a sink with the closures to call on each value and on completion.
    @inlinable
    public init(
      receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void,
      receiveValue: @escaping (Input) -> Void
    ) {
      let closures = Closures(receiveValue: receiveValue, receiveCompletion: receiveCompletion)
      box = LifecycleBox(closures)
      valueClosures = Unmanaged.passRetained(closures)
      specializedCancel = { $0.cancelSpecialized() }
    }

    deinit {
      if gate.close() { valueClosures.release() }
    }

    @inlinable
    public func receive(subscription: any Subscription) {
      guard box.receive(subscription: subscription, requesting: .none) else { return }
      gate.open()
      subscription.request(.unlimited)
    }

    @inlinable
    public func receive(_ value: Input) -> Subscribers.Demand {
      gate.pass(
        { valueClosures._withUnsafeGuaranteedRef { $0.receiveValue(value) } },
        releasing: { valueClosures.release() })
      return .none
    }

    @inlinable
    public func receive(completion: Subscribers.Completion<Failure>) {
      guard let closures = box.payloadForCompletion() else { return }
      if gate.close() { valueClosures.release() }
      unsafeDowncast(closures, to: Closures.self).receiveCompletion(completion)
    }

    @inlinable
    public func cancel() { specializedCancel(self) }

    @inlinable
    func cancelSpecialized() {
      box.cancel()
      if gate.close() { valueClosures.release() }
    }

    public var description: String { "Sink" }
    public var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
    public var playgroundDescription: Any { description }
  }
}

extension Publisher {
  /// Attaches a subscriber with closure-based behaviour; it requests `.unlimited`.
  ///
  /// - Returns: a cancellable that cancels the subscription when cancelled or deinitialised.
  @inlinable
  public func sink(
    receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void,
    receiveValue: @escaping (Output) -> Void
  ) -> AnyCancellable {
    let sink = Subscribers.Sink<Output, Failure>(
      receiveCompletion: receiveCompletion, receiveValue: receiveValue)
    subscribe(sink)
    return AnyCancellable(sink)
  }
}

extension Publisher where Failure == Never {
  /// Attaches a subscriber that calls `receiveValue` for each value of a publisher that cannot
  /// fail; it requests `.unlimited`.
  @inlinable
  public func sink(receiveValue: @escaping (Output) -> Void) -> AnyCancellable {
    sink(receiveCompletion: { _ in }, receiveValue: receiveValue)
  }
}
