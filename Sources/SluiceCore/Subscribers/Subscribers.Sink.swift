public import Synchronization

extension Subscribers {
  /// A simple subscriber that requests an unlimited number of values upon subscription, as in
  /// Combine.
  ///
  /// **Demand**: `.unlimited`, once, when it receives its subscription; a second subscription is
  /// cancelled. (`Just`, `Optional.Publisher` and `Result.Publisher` send a sink their value and
  /// completion without a subscription object, as if it had asked: the same signals, one
  /// allocation less.) **Ordering**: closures run on the publisher's thread, in the order signals
  /// arrive. **Cancellation**: `cancel()` cancels the upstream and releases both closures; so does
  /// completion. A `Sink` does not cancel when deinitialised; the `AnyCancellable` from
  /// `sink(receiveCompletion:receiveValue:)` does.
  public final class Sink<Input, Failure: Error>: Subscriber, Cancellable, CustomStringConvertible,
    CustomReflectable, CustomPlaygroundDisplayConvertible, @unchecked Sendable
  {
    // Safety: the lifecycle (subscription, completion, cancellation) lives in `box`, a
    // lock-protected state machine whose actions run after unlocking. The closures are stored
    // inline, each with one writer after `init`: `valueHandler` is called inside `gate`, or
    // without it by the subject conduit that `releaseOwner` names (its deliveries are serial
    // and it closes the gate only after its last one), and replaced by a no-op once, by whoever
    // the gate elects to release it (nothing in flight then, nothing admitted after);
    // `completionHandler` is read and replaced only by the one caller the lifecycle lets end
    // the subscription (the completion or the first cancel).

    /// The lifecycle. It holds no payload: the closures are fields of their own, so the sink is
    /// one allocation and its (unspecialised) `deinit` needs no generic metadata lookups.
    @usableFromInline let box = LifecycleBox<Void>(())
    /// Admits values until the end (completion or cancel): as in Combine, a value that arrives
    /// before the subscription reaches `receiveValue` too.
    @usableFromInline let gate = DeliveryGate(open: true)
    /// `receiveValue`, until the gate lets go of it.
    @usableFromInline @exclusivity(unchecked) var valueHandler: (Input) -> Void
    /// `receiveCompletion`, until the subscription ends.
    @usableFromInline @exclusivity(unchecked) var completionHandler:
      (Subscribers.Completion<Failure>) -> Void
    /// `cancel()` as compiled where the sink was made (specialized); `AnyCancellable` calls
    /// `cancel()` through `any Cancellable`, whose generic implementation forwards here.
    @usableFromInline let specializedCancel: (Sink) -> Void
    /// ``releaseValueHandler()`` as compiled where the sink was made (specialised): an engine
    /// that ends the closure's life from unspecialised code (a merge's `cancel()` reached
    /// through `any Subscription`) would otherwise store the no-op closure with a context for
    /// its generic type — an allocation.
    @usableFromInline let specializedRelease: (Sink) -> Void
    /// Who ends `receiveValue`'s life (see ``releaseOwner``): 0 not decided yet, 1 the sink's
    /// own gate, otherwise the address of the subject's conduit the sink is subscribed to.
    ///
    /// A subject's conduit already knows whether it is delivering (its fast-path word), so when
    /// it is the sink's subscription it calls `receiveValue` without the gate (two atomic
    /// operations less per value) and, when it ends, closes the gate and releases the closure
    /// itself, after its last delivery. The word changes once, by compare-and-swap from 0: to
    /// the conduit when it receives the sink's first request (which the sink makes only on the
    /// subscription it accepted, before any value), or to 1 by whoever needs a decision first (a
    /// cancel, a completion), so exactly one of them releases the closure.
    @usableFromInline let releaseOwner = Atomic<UInt>(0)

    /// Creates a sink with the closures to call on each value and on completion.
    @inlinable
    public init(
      receiveCompletion: @escaping (Subscribers.Completion<Failure>) -> Void,
      receiveValue: @escaping (Input) -> Void
    ) {
      valueHandler = receiveValue
      completionHandler = receiveCompletion
      specializedCancel = { $0.cancelSpecialized() }
      specializedRelease = { $0.releaseValueHandler() }
    }

    @inlinable
    public func receive(subscription: any Subscription) {
      guard box.receive(subscription: subscription, requesting: .none) else { return }
      gate.open()
      subscription.request(.unlimited)
    }

    /// `value`, then `.finished`, from a publisher of one value (`Just`, `Optional.Publisher`,
    /// `Result.Publisher`): what the sink receives through the subscription such a publisher
    /// would give it, without the subscription — the sink would accept it, ask for
    /// `.unlimited`, and be sent the value and the completion at once. Nothing when the sink
    /// already has a subscription or is done: it would cancel that one before its request. A
    /// cancel meanwhile (another thread holding the sink, or `receiveValue` itself) suppresses
    /// the completion, as it does through the subscription.
    @inlinable
    func receiveSingleValue(_ value: Input) {
      guard box.acceptImmediateDelivery() else { return }
      _ = receive(value)  // (the gate is open from the start)
      receive(completion: .finished)
    }

    /// `result` as a publisher of one result delivers it through a subscription the sink would
    /// accept (a fulfilled `Future`): a success as ``receiveSingleValue(_:)`` does; a failure,
    /// which needs no demand, as that publisher's only signal.
    @inlinable
    func receiveImmediately(_ result: Result<Input, Failure>) {
      switch result {
      case .success(let value):
        receiveSingleValue(value)
      case .failure(let error):
        guard box.acceptImmediateDelivery() else { return }
        receive(completion: .failure(error))
      }
    }

    /// The release owner, deciding for the sink's gate if nobody has yet.
    @inlinable func decidedReleaseOwner() -> UInt {
      let (exchanged, original) = releaseOwner.compareExchange(
        expected: 0, desired: 1, ordering: .acquiringAndReleasing)
      return exchanged ? 1 : original
    }

    /// A value from the conduit that owns the release (see ``releaseOwner``): no gate.
    @inlinable @inline(__always)
    func receiveFromOwner(_ value: Input) {
      Self.call(&valueHandler, with: value)
    }

    /// Closes the gate; releases `receiveValue` if nothing is in flight (else the last delivery
    /// to leave does). By the release owner only: the sink's own end, or the owning conduit
    /// after its last delivery.
    @inlinable
    func closeGate() {
      if gate.close() { specializedRelease(self) }
    }

    @inlinable
    public func receive(_ value: Input) -> Subscribers.Demand {
      gate.pass(
        { Self.call(&valueHandler, with: value) }, releasing: { specializedRelease(self) })
      return .none
    }

    /// Calls `handler` in place: an `inout` access lasts through the call, so the closure's
    /// context is neither retained nor released per value (a read of the property would copy it).
    @inlinable @inline(__always)
    static func call(_ handler: inout (Input) -> Void, with value: Input) {
      handler(value)
    }

    /// Drops `receiveValue` (its captures are released here); only the gate's elected releaser.
    @inlinable
    func releaseValueHandler() {
      valueHandler = { _ in }
    }

    @inlinable
    public func receive(completion: Subscribers.Completion<Failure>) {
      guard box.payloadForCompletion() != nil else { return }
      if decidedReleaseOwner() == 1 { closeGate() }
      let handler = completionHandler
      completionHandler = { _ in }
      handler(completion)
    }

    @inlinable
    public func cancel() { specializedCancel(self) }

    @inlinable
    func cancelSpecialized() {
      box.cancel(whenLive: { completionHandler = { _ in } })
      if decidedReleaseOwner() == 1 { closeGate() }
    }

    public var description: String { "Sink" }
    public var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
    public var playgroundDescription: Any { description }
  }
}

extension Publisher {
  /// Attaches a subscriber with closure-based behaviour; it requests `.unlimited`.
  ///
  /// ![Marble diagram: input.sink(receiveCompletion: …, receiveValue: …)](sink)
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
  ///
  /// ![Marble diagram: input.sink(receiveCompletion: …, receiveValue: …)](sink)
  @inlinable
  public func sink(receiveValue: @escaping (Output) -> Void) -> AnyCancellable {
    sink(receiveCompletion: { _ in }, receiveValue: receiveValue)
  }
}
