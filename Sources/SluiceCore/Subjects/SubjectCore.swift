import Synchronization

/// The machinery every subject shares: the list of subscriptions, the completion replayed to
/// late subscribers, the upstream subscriptions it was given and, for subjects that have one,
/// the current value.
///
/// **Ordering**: a `send` reaches every subscriber that is attached when it starts, in attachment
/// order; each subscriber receives values serially (see ``Conduit``). Sends racing from several
/// threads are delivered to each subscriber in one order, with nothing lost that was demanded and
/// nothing duplicated. **Completion**: delivered once to each attached subscriber and replayed to
/// later ones (after `Subscriptions.empty`); values after completion are ignored.
/// **Cost**: attaching and detaching a subscriber take constant amortised time, however many
/// there are (see ``SubscriberList``).
/// **Upstreams**: each subscription given through `send(subscription:)` is kept, asked for
/// `.unlimited` (at once, or — PassthroughSubject, as in Combine — once any subscriber has made a
/// request) and cancelled when the core is released.
@usableFromInline
final class SubjectCore<Output, Failure: Error>: CustomStringConvertible, @unchecked Sendable {
  // Safety: all mutable state is in `state`'s lock; conduits and upstreams are called after
  // unlocking.
  @usableFromInline
  struct State {
    /// The subscriptions in attachment order (see ``SubjectCore/subscribers``).
    @usableFromInline var subscribers = SharedSubscriberList<Output, Failure>.Guarded()
    @usableFromInline var completion: Subscribers.Completion<Failure>?
    @usableFromInline var upstreams: [any Subscription] = []
    @usableFromInline var currentValue: Output?
    /// Whether kept upstreams have been (and new ones are at once) asked for `.unlimited`.
    @usableFromInline var upstreamsOpen: Bool

    @inlinable init(currentValue: Output?, upstreamsOpen: Bool) {
      self.currentValue = currentValue
      self.upstreamsOpen = upstreamsOpen
    }
  }

  /// The `description` of this subject's subscriptions, as Combine names them.
  @usableFromInline let name: String
  /// Whether subscribers receive the current value first (CurrentValueSubject, Published).
  @usableFromInline let replaysCurrentValue: Bool
  /// Whether a subscriber's demand is on/off: after its first request it receives every value
  /// (ObservableObjectPublisher, as in Combine).
  @usableFromInline let demandIsOnOff: Bool
  @usableFromInline let state: Lock<State>
  /// The subscriptions in attachment order: changed under `state`'s lock (the list is in
  /// `State.subscribers`), read by one sender at a time without it.
  @usableFromInline let subscribers = SharedSubscriberList<Output, Failure>()
  /// A subscriber has made a request (PassthroughSubject: kept upstreams are then asked for
  /// `.unlimited`). With ``keptUpstreams`` it lets the first request skip the lock when there
  /// is no upstream to open: each side writes its flag, then reads the other's, sequentially
  /// consistent, so at least one of them sees both and opens the upstreams.
  let downstreamHadDemand = Atomic<Bool>(false)
  /// How many upstream subscriptions were kept (see ``downstreamHadDemand``).
  let keptUpstreams = Atomic<Int>(0)

  /// `requestsUpstreamsOnDemand`: upstreams are asked for `.unlimited` only once a subscriber
  /// has demand (PassthroughSubject), not as soon as they arrive. `demandIsOnOff`: see
  /// ``demandIsOnOff``.
  @inlinable
  init(
    name: String, currentValue: Output?, requestsUpstreamsOnDemand: Bool = false,
    demandIsOnOff: Bool = false
  ) {
    self.name = name
    replaysCurrentValue = currentValue != nil
    self.demandIsOnOff = demandIsOnOff
    state = Lock(State(currentValue: currentValue, upstreamsOpen: !requestsUpstreamsOnDemand))
  }

  /// The subject's name: what a conduit's `parent` and `subject` children show.
  @usableFromInline var description: String { name }

  deinit {
    for upstream in state.withLock({ $0.upstreams }) { upstream.cancel() }
  }

  @inlinable
  var currentValue: Output? {
    get { state.withLock { $0.currentValue } }
  }

  /// Attaches `downstream`; its subscription keeps `subject` (the object this core belongs to)
  /// alive until it ends, as a subscription to a Combine subject does.
  @inlinable
  func subscribe<Downstream: Subscriber>(_ downstream: Downstream, subject: AnyObject? = nil)
  where Downstream.Input == Output, Downstream.Failure == Failure {
    let conduit = Conduit<Downstream, ConduitState<Downstream, SubjectCore>, Downstream?>(
      parent: self,
      state: ConduitState(
        downstream: downstream, parent: self, subject: subject,
        replaysCurrentValue: replaysCurrentValue),
      fastDownstream: downstream)
    let (completion, freed) = state.withLock {
      state -> (Subscribers.Completion<Failure>?, [SharedSubscriberList<Output, Failure>.Storage])
      in
      if let completion = state.completion { return (completion, []) }
      return (nil, subscribers.update(&state.subscribers) { $0.append(conduit) }.1)
    }
    withExtendedLifetime(freed) {}
    if let completion {
      downstream.receive(subscription: Subscriptions.empty)
      downstream.receive(completion: completion)
    } else {
      downstream.receive(subscription: conduit)
    }
  }

  /// Sends `value` to every attached subscriber with demand; for a subject with a current
  /// value, also makes it the current value (after completion only when
  /// `storingAfterCompletion`: setting `CurrentValueSubject.value` stores, `send(_:)` does not).
  ///
  /// One sender at a time reads the subscriber list in place, without the lock (see
  /// ``SharedSubscriberList``); a sender that overlaps another (or sends from inside a
  /// subscriber) copies the list under the lock. After completion the list is empty.
  @inlinable
  func send(_ value: Output, storingAfterCompletion: Bool = false) {
    if replaysCurrentValue {
      // The value is stored and the subscribers are read in one lock round, so a subscriber
      // attaching meanwhile receives it once: replayed, or sent.
      let (claimed, copied) = state.withLock {
        state -> (UInt?, SlotArray<AnyConduit<Output, Failure>>) in
        // Combine: `send(_:)` after completion leaves `value` as it was; setting `value` stores.
        if state.completion == nil || storingAfterCompletion { state.currentValue = value }
        if let claimed = subscribers.claimUnderLock() { return (claimed, SlotArray()) }
        return (nil, state.subscribers.list.slots)
      }
      if let claimed {
        subscribers.forEach(reading: claimed) { $0.receiveFromSubject(value) }
      } else {
        copied.forEach { $0.receiveFromSubject(value) }
      }
      return
    }
    if subscribers.forEachInPlace({ $0.receiveFromSubject(value) }) { return }
    let conduits = state.withLock { $0.subscribers.list.slots }
    conduits.forEach { $0.receiveFromSubject(value) }
  }

  @inlinable
  func send(completion: Subscribers.Completion<Failure>) {
    let (conduits, freed) = state.withLock {
      state -> (
        SlotArray<AnyConduit<Output, Failure>>, [SharedSubscriberList<Output, Failure>.Storage]
      ) in
      guard state.completion == nil else { return (SlotArray(), []) }
      state.completion = completion
      return subscribers.update(&state.subscribers) { $0.removeAll() }
    }
    withExtendedLifetime(freed) {}
    conduits.forEach { $0.receiveFromSubject(completion: completion) }
  }

  @usableFromInline
  func send(subscription: any Subscription) {
    let open = state.withLock { state in
      state.upstreams.append(subscription)
      keptUpstreams.add(1, ordering: .sequentiallyConsistent)
      if !state.upstreamsOpen, downstreamHadDemand.load(ordering: .sequentiallyConsistent) {
        state.upstreamsOpen = true
        return (true, state.upstreams)
      }
      return (state.upstreamsOpen, [subscription])
    }
    if open.0 { for upstream in open.1 { upstream.request(.unlimited) } }
  }

  /// A subscriber made its first request: kept upstreams waiting for demand are asked for
  /// `.unlimited` now (once). Without kept upstreams it costs two atomic operations, no lock.
  @usableFromInline
  func downstreamRequested() {
    if downstreamHadDemand.load(ordering: .relaxed) { return }
    downstreamHadDemand.store(true, ordering: .sequentiallyConsistent)
    guard keptUpstreams.load(ordering: .sequentiallyConsistent) > 0 else { return }
    let waiting = state.withLock { state -> [any Subscription] in
      if state.upstreamsOpen { return [] }
      state.upstreamsOpen = true
      return state.upstreams
    }
    for upstream in waiting { upstream.request(.unlimited) }
  }

  /// Forgets `conduit` (it was cancelled or has completed).
  @inlinable
  func detach(_ conduit: AnyObject) {
    let removed = state.withLock { state in
      subscribers.update(&state.subscribers) { $0.remove(conduit) }
    }
    withExtendedLifetime(removed) {}
  }

  var subscriberCount: Int { state.withLock { $0.subscribers.list.count } }
}
