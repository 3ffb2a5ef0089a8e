extension Publishers {
  /// When `buffer` asks its upstream for values.
  public enum PrefetchStrategy: Sendable, Equatable {
    /// Asks for `size` values at once, and for one more each time a value is delivered: the
    /// buffer stays full.
    case keepFull
    /// Asks for `.unlimited` at once.
    case byRequest
  }

  /// What `buffer` does with a value that arrives when it is full.
  public enum BufferingStrategy<Failure: Error> {
    /// Drops the value that arrived.
    case dropNewest
    /// Drops the oldest buffered value to make room.
    case dropOldest
    /// Fails with this error (and cancels the upstream).
    case customError(() -> Failure)
  }

  /// A publisher that holds up to `size` values its downstream has not requested yet —
  /// Combine's `Buffer`.
  ///
  /// ![Marble diagram: buffer(size: 2, prefetch: .keepFull, whenFull: .dropNewest)](buffer)
  ///
  /// **Demand**: asks the upstream for `size` values and then one per delivered value
  /// (`.keepFull`), or for `.unlimited` (`.byRequest`); the downstream gets values as it
  /// requests them, oldest first. **When full**: `whenFull` decides; `.customError` cancels the
  /// upstream and fails the next time the downstream requests, as Combine's does: it delivers
  /// buffered values while that demand lasts, then the failure, dropping what is left (a
  /// subscriber that requests `.max(3)` of a full buffer of 5 gets 3 values and the failure).
  /// Nothing is asked of the upstream it cancelled (Combine's `.keepFull` still sends it the
  /// refill). **Completion**: a finish waits until the buffer is drained and the downstream has
  /// demand; the upstream's failure is delivered at once and drops what is buffered, as in
  /// Combine. A completion after the first is ignored. **Cancellation** cancels the upstream and
  /// drops the buffer.
  public struct Buffer<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher whose values are buffered.
    public let upstream: Upstream
    /// The most values held.
    public let size: Int
    /// When the upstream is asked for values.
    public let prefetch: PrefetchStrategy
    /// What happens to a value that arrives when the buffer is full.
    public let whenFull: BufferingStrategy<Failure>

    /// Creates a buffer of `size` values in front of `upstream`.
    public init(
      upstream: Upstream, size: Int, prefetch: PrefetchStrategy,
      whenFull: BufferingStrategy<Failure>
    ) {
      self.upstream = upstream
      self.size = size
      self.prefetch = prefetch
      self.whenFull = whenFull
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: BufferSubscription<Upstream, S>(
          size: size, prefetch: prefetch, whenFull: whenFull, downstream: subscriber))
    }
  }
}

extension Publisher {
  /// Holds up to `size` values the downstream has not requested yet; see
  /// ``Publishers/Buffer``.
  ///
  /// ![Marble diagram: buffer(size: 2, prefetch: .keepFull, whenFull: .dropNewest)](buffer)
  /// ![Marble diagram of buffer-byRequest, drawn from a run](buffer-byRequest)
  public func buffer(
    size: Int, prefetch: Publishers.PrefetchStrategy,
    whenFull: Publishers.BufferingStrategy<Failure>
  ) -> Publishers.Buffer<Self> {
    Publishers.Buffer(upstream: self, size: size, prefetch: prefetch, whenFull: whenFull)
  }
}

/// States: `awaitingSubscription` → `subscribed` → `terminal`; while subscribed, one thread at
/// a time may be `delivering`.
/// | event | subscribed, idle | subscribed, delivering | terminal |
/// |---|---|---|---|
/// | value, room | buffer it; drain | buffer it | drop |
/// | value, full | dropNewest: drop it; dropOldest: drop the oldest, buffer it; customError: remember the failure, cancel the upstream (drain only if there is demand) | same (the deliverer drains) | drop |
/// | finish | remember it; drain | remember it | drop |
/// | failure | drop the buffer; deliver it | the deliverer delivers it | drop |
/// | a completion after one was remembered | ignore | ignore | drop |
/// | drain | a remembered failure once the values or the demand run out (what is left is dropped); else while demand and values: deliver the oldest; then, once empty, a remembered finish when demand > 0 | — | — |
/// | `request(n)` | demand +n; drain; keepFull: ask the upstream for one per value delivered | demand +n | ignore |
/// | `cancel()` | terminal; drop the buffer; cancel the upstream | same | nothing |
@usableFromInline
final class BufferSubscription<Upstream: Publisher, Downstream: Subscriber>: Subscriber,
  Subscription, CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
where Upstream.Output == Downstream.Input, Upstream.Failure == Downstream.Failure {
  // Safety: all mutable state is in `state`'s lock; the upstream and the downstream are called
  // after unlocking, the downstream only by the one thread the state lets deliver.
  @usableFromInline
  typealias Input = Upstream.Output
  @usableFromInline
  typealias Failure = Upstream.Failure

  @usableFromInline
  struct State {
    @usableFromInline
    var upstream: (any Subscription)?
    @usableFromInline
    var subscribed = false
    @usableFromInline
    var terminal = false
    @usableFromInline
    var downstream: Downstream?
    @usableFromInline
    var values = RingBuffer<Input>()
    @usableFromInline
    var demand = Subscribers.Demand.none
    @usableFromInline
    var completion: Subscribers.Completion<Failure>?
    @usableFromInline
    var delivering = false
    /// Values delivered that the upstream has not been asked to replace yet (keepFull).
    @usableFromInline
    var refill = 0

    @inlinable
    init(downstream: Downstream) { self.downstream = downstream }
  }

  @usableFromInline
  enum Arrival {
    case drain
    /// The buffer overflowed with `.customError`: cancel the upstream, and drain if this
    /// thread may deliver.
    case overflowed((any Subscription)?, drain: Bool)
    case none
  }

  @usableFromInline
  enum Step {
    case deliver(Input, Downstream)
    case complete(Subscribers.Completion<Failure>, Downstream)
    case stop(refill: Int, upstream: (any Subscription)?)
  }

  @usableFromInline
  let size: Int
  @usableFromInline
  let prefetch: Publishers.PrefetchStrategy
  @usableFromInline
  let whenFull: Publishers.BufferingStrategy<Failure>
  @usableFromInline
  let state: Lock<State>

  @inlinable
  init(
    size: Int, prefetch: Publishers.PrefetchStrategy,
    whenFull: Publishers.BufferingStrategy<Failure>, downstream: Downstream
  ) {
    if size < 1 { Violation.nonPositiveCount(size, operator: "buffer(size:)") }
    self.size = size
    self.prefetch = prefetch
    self.whenFull = whenFull
    state = Lock(State(downstream: downstream))
  }

  @inlinable
  func receive(subscription: any Subscription) {
    let downstream = state.withLock { state -> Downstream? in
      guard !state.subscribed, !state.terminal else { return nil }
      state.subscribed = true
      state.upstream = subscription
      return state.downstream
    }
    guard let downstream else { return subscription.cancel() }
    subscription.request(prefetch == .keepFull ? .max(size) : .unlimited)
    downstream.receive(subscription: self)
  }

  @inlinable
  func receive(_ input: Input) -> Subscribers.Demand {
    // Values dropped are released after unlocking: a `deinit` may send here, or cancel.
    var dropped: Input?
    defer { withExtendedLifetime(dropped) {} }
    let arrival = state.withLock { state -> Arrival in
      guard !state.terminal, state.completion == nil, state.subscribed else { return .none }
      if state.values.count >= size {
        switch whenFull {
        case .dropNewest: return .none
        case .dropOldest: dropped = state.values.popFirst()
        case .customError(let makeError):
          state.completion = .failure(makeError())
          let upstream = state.upstream.take()
          // As Combine's, the failure waits for demand to run out in a drain: the next request
          // (or the deliverer's current run) delivers what it covers, then the failure.
          guard !state.delivering, state.demand > 0 else {
            return .overflowed(upstream, drain: false)
          }
          state.delivering = true
          return .overflowed(upstream, drain: true)
        }
      }
      state.values.append(input)
      guard !state.delivering else { return .none }
      state.delivering = true
      return .drain
    }
    switch arrival {
    case .none: return .none
    case .overflowed(let upstream, let drains):
      upstream?.cancel()
      if drains { _ = drain() }
      return .none
    case .drain:
      // The refill for values delivered here goes back as this call's result.
      let (refill, _) = drain()
      return .max(refill)
    }
  }

  @inlinable
  func receive(completion: Subscribers.Completion<Failure>) {
    if case .failure = completion { return fail(completion) }
    let drains = state.withLock { state -> Bool in
      guard !state.terminal, state.completion == nil, state.subscribed else { return false }
      state.completion = completion
      state.upstream = nil
      guard !state.delivering else { return false }
      state.delivering = true
      return true
    }
    if drains { _ = drain() }
  }

  /// The upstream's failure: delivered at once (the buffer dropped), or by the thread
  /// delivering.
  @inlinable
  func fail(_ completion: Subscribers.Completion<Failure>) {
    var dropped = RingBuffer<Input>()
    defer { withExtendedLifetime(dropped) {} }
    let downstream = state.withLock { state -> Downstream? in
      guard !state.terminal, state.completion == nil, state.subscribed else { return nil }
      swap(&dropped, &state.values)
      state.upstream = nil
      state.completion = completion
      guard !state.delivering else { return nil }
      state.terminal = true
      defer { state.downstream = nil }
      return state.downstream
    }
    downstream?.receive(completion: completion)
  }

  @inlinable
  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    let drains = state.withLock { state -> Bool in
      guard !state.terminal else { return false }
      state.demand += demand
      guard !state.delivering else { return false }
      state.delivering = true
      return true
    }
    guard drains else { return }
    let (refill, upstream) = drain()
    if refill > 0 { upstream?.request(.max(refill)) }
  }

  @inlinable
  func cancel() {
    // The values kept are released after unlocking: a `deinit` may send here.
    var dropped = RingBuffer<Input>()
    let (upstream, released) = state.withLock { state -> ((any Subscription)?, Downstream?) in
      state.terminal = true
      swap(&dropped, &state.values)
      return (state.upstream.take(), state.downstream.take())
    }
    withExtendedLifetime(dropped) {}
    upstream.cancelIfPresent()
    withExtendedLifetime(released) {}
  }

  /// Delivers while there is demand; only the thread that set `delivering`. Returns how many
  /// values the upstream should be asked for to refill (keepFull) and whom to ask.
  @inlinable
  func drain() -> (Int, (any Subscription)?) {
    while true {
      var dropped = RingBuffer<Input>()  // released after unlocking
      let step = state.withLock { state -> Step in
        guard !state.terminal, let downstream = state.downstream else {
          state.delivering = false
          return .stop(refill: 0, upstream: nil)
        }
        if case .failure = state.completion, state.values.isEmpty || state.demand == 0 {
          swap(&dropped, &state.values)
          state.terminal = true
          state.delivering = false
          state.downstream = nil
          return .complete(state.completion!, downstream)
        }
        if state.demand > 0 {
          if let value = state.values.popFirst() {
            if state.demand != .unlimited { state.demand -= 1 }
            if prefetch == .keepFull { state.refill += 1 }
            return .deliver(value, downstream)
          }
          if let completion = state.completion {
            state.terminal = true
            state.delivering = false
            state.downstream = nil
            return .complete(completion, downstream)
          }
        }
        state.delivering = false
        defer { state.refill = 0 }
        return .stop(refill: state.refill, upstream: state.upstream)
      }
      withExtendedLifetime(dropped) {}
      switch step {
      case .deliver(let value, let downstream):
        let more = downstream.receive(value)
        if more > 0 { state.withLock { $0.demand += more } }
      case .complete(let completion, let downstream):
        downstream.receive(completion: completion)
        return (0, nil)
      case .stop(let refill, let upstream):
        return (refill, upstream)
      }
    }
  }

  @inlinable
  var description: String { "Buffer" }
  @inlinable
  var customMirror: Mirror {
    let (values, phase, demand, completion) = state.withLock {
      state -> ([Input], String, Subscribers.Demand, Subscribers.Completion<Failure>?) in
      var copy = state.values
      var all: [Input] = []
      while let value = copy.popFirst() { all.append(value) }
      let phase =
        state.terminal ? "complete" : state.subscribed ? "subscribed" : "awaitingSubscription"
      return (all, phase, state.demand, state.completion)
    }
    return Mirror(
      self,
      children: [
        ("values", values), ("state", phase), ("downstreamDemand", demand),
        ("terminal", completion as Any),
      ])
  }
  @inlinable
  var playgroundDescription: Any { description }
}
