import SluiceCore

/// The engine of ``SluiceCore/Publishers/AsyncMap``, ``SluiceCore/Publishers/TryAsyncMap`` and
/// ``SluiceCore/Publishers/AsyncFilter``: runs an `async` step per upstream value in a task of its own, up to
/// `maxConcurrent` at a time, and delivers the results in upstream order.
///
/// **Demand**: values asked of the upstream and not yet delivered (in flight, or requested and
/// not arrived) never exceed `maxConcurrent`, nor the downstream's outstanding demand; a value
/// the step drops (`asyncFilter`) frees its place without using demand. **Ordering**: results
/// are delivered in the order the values arrived, one at a time, whichever task finishes first.
/// **Completion**: the upstream's finish waits for the values in flight; a failure (the
/// upstream's, or a step's, in its place in the order) cancels the running tasks and fails.
/// **Cancellation** cancels the running tasks at once, and the upstream.
///
/// States: `awaitingSubscription` → `subscribed(upstream)` → `terminal`; while subscribed, one
/// thread at a time may be `delivering`.
/// | event | subscribed, idle | subscribed, delivering | terminal |
/// |---|---|---|---|
/// | subscription (awaiting) | — | subscribed and delivering while handing self down; then drain | cancel it |
/// | value `v` | index it; start a task running the step on it | same | drop |
/// | a step finishes | keep its result; drain | keep its result (the deliverer drains it) | drop |
/// | drain | while the next result in order is here: dropped → skip; value and demand → deliver (after 32 deliveries: a new task drains the rest, still delivering); failure → terminal, cancel all, fail; then top up the upstream; all done after a finish → finish | — | — |
/// | upstream finished | remember it; drain | remember it | drop |
/// | upstream failed | terminal; cancel the tasks; fail (the deliverer fails, if one is delivering) | same | drop |
/// | `request(n)` | demand +n; drain; top up the upstream | demand +n | ignore |
/// | `cancel()` | terminal; cancel the tasks and the upstream; release the downstream and the waiting results (after unlocking) | same | nothing |
final class AsyncStepSubscription<Input, Downstream: Subscriber>: Subscriber, Subscription,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
{
  // Safety: all mutable state is in `state`'s lock; the upstream, the downstream and the tasks
  // are called after unlocking, the downstream only by the one thread the state lets deliver.
  // A value is handed to exactly one task and a result to the downstream once (`UncheckedSendable`
  // marks those transfers).
  typealias Output = Downstream.Input
  typealias Failure = Downstream.Failure
  typealias Step = @Sendable (sending Input) async -> Result<Output?, Failure>

  struct State {
    var upstream: (any Subscription)?
    var subscribed = false
    var terminal = false
    var downstream: Downstream?
    var demand = Subscribers.Demand.none
    /// Values asked of the upstream that have not arrived.
    var requested = 0
    var nextIndex = 0
    var nextToDeliver = 0
    var results: [Int: Result<Output?, Failure>] = [:]
    var tasks: [Int: Task<Void, Never>] = [:]
    var upstreamFinished = false
    var delivering = false
    /// The upstream's failure, when it came while another thread was delivering.
    var pendingFailure: Failure?

    var inFlight: Int { nextIndex - nextToDeliver }

    /// How many more values to ask of the upstream.
    mutating func topUp(limit: Int) -> Int {
      guard !terminal, !upstreamFinished, upstream != nil else { return 0 }
      let room = demand == .unlimited ? limit : min(limit, demand.max ?? 0)
      let more = room - inFlight - requested
      guard more > 0 else { return 0 }
      requested += more
      return more
    }

    /// Ends the subscription; what it held is handed back to be released after unlocking (a
    /// result waiting for demand is a value whose `deinit` may call back into this
    /// subscription: cancel it again, request).
    mutating func end() -> Ended {
      terminal = true
      defer {
        upstream = nil
        tasks = [:]
        results = [:]
      }
      return Ended(upstream: upstream, tasks: Array(tasks.values), results: results)
    }
  }

  /// What an ended subscription held: the upstream and the tasks to cancel, and the results
  /// that were waiting, to release after unlocking.
  struct Ended {
    let upstream: (any Subscription)?
    let tasks: [Task<Void, Never>]
    let results: [Int: Result<Output?, Failure>]

    /// Cancels the tasks and the upstream.
    func cancelAll() {
      for task in tasks { task.cancel() }
      upstream?.cancel()
    }
  }

  enum Next {
    case deliver(Output, Downstream)
    case fail(Failure, Downstream, Ended)
    case finish(Downstream)
    case idle(topUp: Int, upstream: (any Subscription)?)
  }

  let name: String
  let combineIdentifier = CombineIdentifier()
  let maxConcurrent: Int
  let priority: TaskPriority?
  let step: Step
  let state: Lock<State>

  init(
    name: String, maxConcurrent: Int, priority: TaskPriority?, downstream: Downstream,
    step: @escaping Step
  ) {
    if maxConcurrent < 1 {
      // Named as called: "AsyncMap" → "asyncMap".
      let call = name.prefix(1).lowercased() + name.dropFirst()
      AsyncViolation.maxConcurrent(maxConcurrent, operator: call)
    }
    self.name = name
    self.maxConcurrent = maxConcurrent
    self.priority = priority
    self.step = step
    state = Lock(State(downstream: downstream))
  }

  // MARK: Upstream

  func receive(subscription: any Subscription) {
    let downstream = state.withLock { state -> Downstream? in
      guard !state.subscribed, !state.terminal else { return nil }
      state.subscribed = true
      state.upstream = subscription
      // Results of values the downstream's first request brings (a step can finish on another
      // thread at once) wait until `receive(subscription:)` has returned: signals stay serial.
      state.delivering = true
      return state.downstream
    }
    guard let downstream else {
      subscription.cancel()
      return
    }
    downstream.receive(subscription: self)
    drain()
  }

  func receive(_ input: Input) -> Subscribers.Demand {
    let index = state.withLock { state -> Int? in
      guard !state.terminal, state.upstream != nil else { return nil }
      state.requested = max(0, state.requested - 1)
      defer { state.nextIndex += 1 }
      return state.nextIndex
    }
    guard let index else { return .none }
    // Safety: the value is handed to this task only and not used here again; the result goes
    // to `completed` once. (Wrapped because the subscription's generic types are not Sendable.)
    let value = UncheckedSendable(input)
    let run = UncheckedSendable<(Int, UncheckedSendable<Input>) async -> Void> {
      [step = self.step, self] index, value in
      self.completed(index, await step(value.value))
    }
    let task = Task(priority: priority) { await run.value(index, value) }
    let stale = state.withLock { state -> Bool in
      guard !state.terminal else { return true }
      if state.results[index] == nil, index >= state.nextToDeliver { state.tasks[index] = task }
      return false
    }
    if stale { task.cancel() }
    return .none
  }

  func receive(completion: Subscribers.Completion<Failure>) {
    switch completion {
    case .finished:
      let drains = state.withLock { state -> Bool in
        guard !state.terminal else { return false }
        state.upstreamFinished = true
        state.upstream = nil
        guard !state.delivering else { return false }
        state.delivering = true
        return true
      }
      if drains { drain() }
    case .failure(let failure):
      let failing = state.withLock { state -> (Downstream, Ended)? in
        guard !state.terminal, let downstream = state.downstream else { return nil }
        state.upstream = nil
        if state.delivering {
          state.pendingFailure = failure
          return nil
        }
        let ended = state.end()
        state.downstream = nil
        return (downstream, ended)
      }
      guard let (downstream, ended) = failing else { return }
      ended.cancelAll()
      downstream.receive(completion: .failure(failure))
    }
  }

  private func completed(_ index: Int, _ result: Result<Output?, Failure>) {
    let drains = state.withLock { state -> Bool in
      guard !state.terminal else { return false }
      state.tasks[index] = nil
      state.results[index] = result
      guard !state.delivering else { return false }
      state.delivering = true
      return true
    }
    if drains { drain() }
  }

  // MARK: Downstream

  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: name)
    let (drains, upstream, more) = state.withLock {
      state -> (Bool, (any Subscription)?, Int) in
      guard !state.terminal else { return (false, nil, 0) }
      state.demand += demand
      if !state.delivering, state.results[state.nextToDeliver] != nil {
        state.delivering = true
        return (true, nil, 0)
      }
      return (false, state.upstream, state.topUp(limit: maxConcurrent))
    }
    if drains { drain() }
    if more > 0 { upstream?.request(.max(more)) }
  }

  func cancel() {
    let (ended, downstream) = state.withLock { state -> (Ended?, Downstream?) in
      guard !state.terminal else { return (nil, nil) }
      defer { state.downstream = nil }
      return (state.end(), state.downstream)
    }
    guard let ended else { return }
    ended.cancelAll()
    withExtendedLifetime(downstream) {}
  }

  // MARK: Delivery

  /// Delivers results in order while there is demand; only the thread that set `delivering`.
  /// After ``batch`` deliveries it leaves the rest to a task of its own (still `delivering`), so
  /// that a caller's `request`, or a step's task, is not kept delivering for as long as other
  /// threads keep requesting and steps keep finishing.
  private func drain() {
    var delivered = 0
    while true {
      if delivered == Self.batch {
        // Safety: the subscription is `@unchecked Sendable`; wrapped because its generic
        // parameters' metatypes are not.
        let rest = UncheckedSendable { self.drain() }
        Task(priority: priority) { rest.value() }
        return
      }
      let next = state.withLock { state -> Next in
        if let failure = state.pendingFailure, let downstream = state.downstream {
          let ended = state.end()
          state.downstream = nil
          return .fail(failure, downstream, ended)
        }
        scan: while !state.terminal, let downstream = state.downstream,
          let result = state.results[state.nextToDeliver]
        {
          switch result {
          case .success(nil):  // dropped by the step: its place frees without using demand
            state.results[state.nextToDeliver] = nil
            state.nextToDeliver += 1
          case .success(let value?):
            guard state.demand > 0 else { break scan }
            state.results[state.nextToDeliver] = nil
            state.nextToDeliver += 1
            if state.demand != .unlimited { state.demand -= 1 }
            return .deliver(value, downstream)
          case .failure(let failure):
            let ended = state.end()
            state.downstream = nil
            return .fail(failure, downstream, ended)
          }
        }
        if !state.terminal, state.upstreamFinished, state.inFlight == 0,
          let downstream = state.downstream
        {
          state.terminal = true
          state.downstream = nil
          return .finish(downstream)
        }
        state.delivering = false
        return .idle(topUp: state.topUp(limit: maxConcurrent), upstream: state.upstream)
      }
      switch next {
      case .deliver(let value, let downstream):
        delivered += 1
        let more = downstream.receive(value)
        if more > 0 { state.withLock { $0.demand += more } }
      case .fail(let failure, let downstream, let ended):
        ended.cancelAll()
        downstream.receive(completion: .failure(failure))
        return
      case .finish(let downstream):
        downstream.receive(completion: .finished)
        return
      case .idle(let more, let upstream):
        if more > 0 { upstream?.request(.max(more)) }
        return
      }
    }
  }

  /// Results one drain delivers before it hands the rest to a task.
  static var batch: Int { 32 }

  var description: String { name }
  var customMirror: Mirror {
    let (demand, inFlight) = state.withLock { ($0.demand, $0.inFlight) }
    let children: [(label: String?, value: Any)] = [
      ("maxConcurrent", maxConcurrent), ("inFlight", inFlight), ("demand", demand),
    ]
    return Mirror(self, children: children)
  }
  var playgroundDescription: Any { description }
}
