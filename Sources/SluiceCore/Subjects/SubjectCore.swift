import Synchronization

/// The machinery every subject shares: the list of subscriptions, the completion replayed to
/// late subscribers, the upstream subscriptions it was given and, for subjects that have one,
/// the current value.
///
/// **Ordering**: a `send` reaches every subscriber that is attached when it starts, in attachment
/// order; each subscriber receives values serially (see ``Conduit``). A send (or completion)
/// racing another thread's send is handed to that thread, which delivers it next, before its own
/// `send` returns (see ``SharedSubscriberList``): nothing waits, every subscriber receives the
/// values in one order, each thread's in the order sent, nothing demanded is lost and nothing
/// duplicated. A send from inside a delivery reaches each subscriber after the value it is
/// receiving. **Completion**: delivered once to each attached subscriber and replayed to later
/// ones (after `Subscriptions.empty`); values after completion are ignored.
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
    let (completion, garbage) = state.withLock {
      state -> (Subscribers.Completion<Failure>?, SharedSubscriberList<Output, Failure>.Garbage) in
      if let completion = state.completion { return (completion, .init()) }
      return (nil, subscribers.update(&state.subscribers) { $0.append(conduit) }.1)
    }
    garbage.dispose()
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
  /// ``SharedSubscriberList``); a sender of another thread hands its value to it, and a send
  /// from inside a delivery copies the list under the lock. After completion the list is empty.
  @inlinable
  func send(_ value: Output, storingAfterCompletion: Bool = false) {
    let thread = currentThreadIdentity()
    if !replaysCurrentValue {
      // (Pattern matching, not `==`: the derived `==` of `Claim` is a call.)
      switch subscribers.claim(by: thread) {
      case .nobody:
        return
      case .claimed(let address):
        subscribers.forEach(inStorageAt: address) { $0.receiveInPlace(value) }
        leave(thread: thread)
        return
      case .claimedBehind(let address):
        runHandedOver()
        subscribers.forEach(inStorageAt: address) { $0.receiveInPlace(value) }
        leave(thread: thread)
        return
      case .stale:
        leave(thread: thread)
      case .busy, .nested, .draining:
        break
      }
    }
    sendLocked(value, by: thread, storing: storingAfterCompletion)
  }

  /// `send` through the lock: another thread's sender holds the list (the value is handed
  /// over), this thread's does (a nested send), or the subject has a current value to store.
  @inlinable
  func sendLocked(_ value: Output, by thread: UInt, storing storingAfterCompletion: Bool) {
    // (The nested list stays here: a `SlotArray` variable on the fast path would cost a
    // release of its empty storage per send.)
    let (claim, nested) = claimOrHandOff(value, by: thread, storing: storingAfterCompletion)
    switch claim {
    case .nobody, .busy, .stale, .claimedBehind:
      return  // nobody to send to, or handed over
    case .nested:
      nested.forEach { $0.receiveFromSubject(value) }
    case .claimed(let address):
      subscribers.forEach(inStorageAt: address) { $0.receiveInPlace(value) }
      leave(thread: thread)
    case .draining:
      leave(thread: thread)  // runs the queue first
    }
  }

  /// Under the lock: ``SharedSubscriberList/claimOrHandOff(by:_:_:)``, and, if this thread is
  /// the sender already (a send from inside a delivery), the subscribers to send to through
  /// their conduits' locks. For a subject with a current value, the value is stored in the same
  /// lock round, so that a subscriber attaching meanwhile receives it once, replayed or sent.
  @inlinable
  func claimOrHandOff(_ value: Output, by thread: UInt, storing storingAfterCompletion: Bool)
    -> (SharedSubscriberList<Output, Failure>.Claim, SlotArray<AnyConduit<Output, Failure>>)
  {
    state.withLock { state in
      let claim = subscribers.claimOrHandOff(by: thread, &state.subscribers) {
        .value(value, $0)
      }
      // Combine: `send(_:)` after completion leaves `value` as it was; setting `value` stores.
      if replaysCurrentValue, state.completion == nil || storingAfterCompletion {
        state.currentValue = value
      }
      return (claim, claim == .nested ? state.subscribers.list.slots : SlotArray())
    }
  }

  /// Gives back the list this thread holds (as a sender or as
  /// ``SharedSubscriberList/draining``), after running what other threads handed over (and, if
  /// more comes as it leaves and no other sender has taken the list since, that too).
  @inlinable @inline(__always)
  func leave(thread: UInt) {
    while true {
      switch subscribers.leave() {
      case .left:
        return
      case .kept:
        runHandedOver()
      case .raced:
        guard state.withLock({ subscribers.claimToDrain(&$0.subscribers, by: thread) }) else {
          return  // another sender holds the list: it runs the work as it leaves
        }
      }
    }
  }

  /// Runs what other threads handed to this sender (it holds the list), oldest first, until
  /// the queue is empty. (Inlinable so that it is specialised: generic, it looked up the
  /// metadata of `HandedOver` per item.)
  @inlinable
  func runHandedOver() {
    while let work = state.withLock({ subscribers.nextHandedOver(&$0.subscribers) }) {
      switch work {
      case .value(let value, let conduits):
        withExtendedLifetime(conduits) {
          subscribers.forEach(inStorageAt: conduits.storageAddress) { $0.receiveInPlace(value) }
        }
      case .completion(let completion, let conduits):
        conduits.forEach { $0.receiveFromSubject(completion: completion) }
      case .release(let conduit):
        conduit.releaseAfterSenders()
      }
    }
  }

  @inlinable
  func send(completion: Subscribers.Completion<Failure>) {
    let thread = currentThreadIdentity()
    let (conduits, garbage, claim) = state.withLock {
      state -> (
        SlotArray<AnyConduit<Output, Failure>>, SharedSubscriberList<Output, Failure>.Garbage,
        SharedSubscriberList<Output, Failure>.Claim
      ) in
      guard state.completion == nil else { return (SlotArray(), .init(), .busy) }
      state.completion = completion
      let (conduits, garbage) = subscribers.update(&state.subscribers) { $0.removeAll() }
      // A sender of another thread reads, or values handed over wait: the completion is
      // delivered after them.
      let claim = subscribers.handOffToReader(
        .completion(completion, conduits), inOrder: true, &state.subscribers, by: thread)
      return (claim == .nested ? conduits : SlotArray(), garbage, claim)
    }
    garbage.dispose()
    conduits.forEach { $0.receiveFromSubject(completion: completion) }
    if claim == .draining { leave(thread: thread) }  // runs the queue first
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
  func detach(_ conduit: AnyConduit<Output, Failure>) {
    _ = detach(conduit, deferringRelease: false)
  }

  /// Forgets `conduit`; `deferringRelease`: it was cancelled while a sender of another thread
  /// may have been delivering to it. Returns `true` if that sender still reads the list: it
  /// then has the conduit release its subscriber as it leaves (see ``SharedSubscriberList``).
  @inlinable
  func detach(_ conduit: AnyConduit<Output, Failure>, deferringRelease: Bool) -> Bool {
    let thread = deferringRelease ? currentThreadIdentity() : 0
    let (claim, garbage) = state.withLock { state in
      let (_, garbage) = subscribers.update(&state.subscribers) { $0.remove(conduit) }
      guard deferringRelease, !garbage.exclusive else {
        return (SharedSubscriberList<Output, Failure>.Claim.nested, garbage)
      }
      return (
        subscribers.handOffToReader(
          .release(conduit), inOrder: false, &state.subscribers, by: thread), garbage
      )
    }
    garbage.dispose()
    if claim == .draining { leave(thread: thread) }  // runs the queue first
    return claim != .nested
  }

  var subscriberCount: Int { state.withLock { $0.subscribers.list.count } }
}
