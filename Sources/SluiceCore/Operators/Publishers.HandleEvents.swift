extension Publishers {
  /// Calls closures on every event of a subscription, then passes the event on, as Combine's
  /// `handleEvents`.
  ///
  /// ![Marble diagram: handleEvents(receiveOutput: { log($0) })](handleEvents)
  ///
  /// **Demand**: passed upstream unchanged; `receiveRequest` sees each request, and, as in
  /// Combine, the demand a subscriber returns from `receive(_:)` when it is not zero.
  /// **Ordering**: each closure runs just before its event is passed on, on the thread of the
  /// event. **Cancellation**: `receiveCancel` runs, then the upstream is cancelled.
  public struct HandleEvents<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The closure called on each subscription, if any.
    public var receiveSubscription: ((any Subscription) -> Void)?
    /// The closure called on each value, if any.
    public var receiveOutput: ((Upstream.Output) -> Void)?
    /// The closure called on the completion, if any.
    public var receiveCompletion: ((Subscribers.Completion<Upstream.Failure>) -> Void)?
    /// The closure called on a cancel, if any.
    public var receiveCancel: (() -> Void)?
    /// The closure called on each request, if any.
    public var receiveRequest: ((Subscribers.Demand) -> Void)?

    /// Creates the publisher over `upstream`, with its `receiveSubscription`, `receiveOutput`,
    /// `receiveCompletion`, `receiveCancel`, `receiveRequest`, as the operator method does.
    @inlinable
    public init(
      upstream: Upstream, receiveSubscription: ((any Subscription) -> Void)? = nil,
      receiveOutput: ((Upstream.Output) -> Void)? = nil,
      receiveCompletion: ((Subscribers.Completion<Upstream.Failure>) -> Void)? = nil,
      receiveCancel: (() -> Void)? = nil, receiveRequest: ((Subscribers.Demand) -> Void)? = nil
    ) {
      self.upstream = upstream
      self.receiveSubscription = receiveSubscription
      self.receiveOutput = receiveOutput
      self.receiveCompletion = receiveCompletion
      self.receiveCancel = receiveCancel
      self.receiveRequest = receiveRequest
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: HookedSubscription(
          "HandleEvents", downstream: subscriber,
          hooks: EventHooks(
            subscription: receiveSubscription, value: receiveOutput,
            returnedDemand: receiveRequest, completion: receiveCompletion, cancel: receiveCancel,
            request: receiveRequest)))
    }
  }
}

/// What ``HookedSubscription`` calls on each event (`handleEvents`, `print`).
@usableFromInline
struct EventHooks<Input, Failure: Error> {
  @usableFromInline let subscription: ((any Subscription) -> Void)?
  @usableFromInline let value: ((Input) -> Void)?
  /// Called with the demand the downstream returned for a value.
  @usableFromInline let returnedDemand: ((Subscribers.Demand) -> Void)?
  @usableFromInline let completion: ((Subscribers.Completion<Failure>) -> Void)?
  @usableFromInline let cancel: (() -> Void)?
  @usableFromInline let request: ((Subscribers.Demand) -> Void)?

  @inlinable init(
    subscription: ((any Subscription) -> Void)?, value: ((Input) -> Void)?,
    returnedDemand: ((Subscribers.Demand) -> Void)?,
    completion: ((Subscribers.Completion<Failure>) -> Void)?, cancel: (() -> Void)?,
    request: ((Subscribers.Demand) -> Void)?
  ) {
    self.subscription = subscription
    self.value = value
    self.returnedDemand = returnedDemand
    self.completion = completion
    self.cancel = cancel
    self.request = request
  }
}

/// A subscription that calls hooks on every event and otherwise passes everything through.
///
/// **Demand**: passed upstream unchanged. **Ordering**: hooks run before the event is passed
/// on. **Cancellation**: idempotent; the cancel hook runs once (`print`'s on every `cancel()`,
/// as Combine's prints each one, also after the completion), then the upstream is cancelled
/// and released; nothing is passed on after it. As in Combine, a value or completion that arrives
/// before the upstream subscription is handled as if subscribed.
@usableFromInline
final class HookedSubscription<Downstream: Subscriber>: Subscriber, Subscription,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
{
  // Safety: the upstream and the terminal flag are in `lifecycle`'s lock; hooks and the
  // downstream are immutable and called after unlocking.
  @usableFromInline typealias Input = Downstream.Input
  @usableFromInline typealias Failure = Downstream.Failure

  @usableFromInline let name: StaticString
  @usableFromInline let hooks: EventHooks<Input, Failure>
  /// The cancel hook runs on every `cancel()`, not only the one that ends the subscription.
  @usableFromInline let hooksEveryCancel: Bool
  /// The downstream is the payload: released on completion and on cancel.
  @usableFromInline let lifecycle: LifecycleBox<Downstream>

  @inlinable init(
    _ name: StaticString, downstream: Downstream, hooks: EventHooks<Input, Failure>,
    hooksEveryCancel: Bool = false
  ) {
    self.name = name
    self.hooks = hooks
    self.hooksEveryCancel = hooksEveryCancel
    lifecycle = LifecycleBox(downstream)
  }

  @inlinable func receive(subscription: any Subscription) {
    hooks.subscription?(subscription)
    if lifecycle.receive(subscription: subscription, requesting: .none),
      let downstream = lifecycle.payload
    {
      downstream.receive(subscription: self)
    }
  }

  @inlinable func receive(_ input: Input) -> Subscribers.Demand {
    // As in Combine, a value before the subscription is handled as if subscribed.
    guard let downstream = lifecycle.payloadForValue(beforeSubscription: true) else {
      return .none
    }
    hooks.value?(input)
    let more = downstream.receive(input)
    if more > 0 { hooks.returnedDemand?(more) }
    return more
  }

  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    guard let downstream = lifecycle.payloadForCompletion() else { return }
    hooks.completion?(completion)
    downstream.receive(completion: completion)
  }

  @inlinable func request(_ demand: Subscribers.Demand) {
    hooks.request?(demand)
    lifecycle.subscription?.request(demand)
  }

  @inlinable func cancel() {
    if hooksEveryCancel {
      hooks.cancel?()
      lifecycle.cancel()
    } else {
      lifecycle.cancel(whenLive: { hooks.cancel?() })
    }
  }

  @usableFromInline var description: String { "\(name)" }
  @usableFromInline var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @usableFromInline var playgroundDescription: Any { description }
}

extension Publisher {
  /// Calls the given closures on the events of each subscription (debugging, side effects).
  ///
  /// ![Marble diagram: handleEvents(receiveOutput: { log($0) })](handleEvents)
  ///
  /// ```swift
  /// publisher.handleEvents(receiveOutput: { print("got", $0) })
  /// ```
  @inlinable
  public func handleEvents(
    receiveSubscription: ((any Subscription) -> Void)? = nil,
    receiveOutput: ((Output) -> Void)? = nil,
    receiveCompletion: ((Subscribers.Completion<Failure>) -> Void)? = nil,
    receiveCancel: (() -> Void)? = nil, receiveRequest: ((Subscribers.Demand) -> Void)? = nil
  ) -> Publishers.HandleEvents<Self> {
    Publishers.HandleEvents(
      upstream: self, receiveSubscription: receiveSubscription, receiveOutput: receiveOutput,
      receiveCompletion: receiveCompletion, receiveCancel: receiveCancel,
      receiveRequest: receiveRequest)
  }
}
