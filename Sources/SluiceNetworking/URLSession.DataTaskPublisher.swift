public import Foundation
public import SluiceCore

#if canImport(FoundationNetworking)
  public import FoundationNetworking
#endif

extension URLSession {
  /// Sluice's networking publishers, under a name of their own so that they never clash with
  /// Foundation's on platforms where Foundation has Combine's (write
  /// `session.sluice.dataTaskPublisher(for: url)` there). Where Combine does not exist (Linux),
  /// `URLSession.DataTaskPublisher` and `session.dataTaskPublisher(for:)` name them directly, as in
  /// Combine.
  public struct Sluice: Sendable {
    /// The session the publishers run their tasks on.
    public let session: URLSession

    /// Sluice's publishers for `session`.
    public init(_ session: URLSession) { self.session = session }

    /// A publisher of one data task's result: the body and response when the task completes,
    /// then `.finished`; or the task's `URLError` — Combine's `URLSession.DataTaskPublisher`.
    ///
    /// ![Marble diagram: session.dataTaskPublisher(for: url)](dataTaskPublisher)
    ///
    /// **Demand**: each subscription creates and resumes its own task on the subscriber's first
    /// request (so a subscriber that never requests costs no network traffic), and publishes one
    /// value. **Ordering**: the value and the completion come on the session's delegate queue,
    /// one after the other. **Cancellation** cancels the task if it runs, and releases the
    /// subscriber at once; nothing is delivered afterwards, not even the task's
    /// `.cancelled` error.
    ///
    /// A body-less response publishes empty `Data`. An error that is not a `URLError` fails with
    /// `URLError(.unknown)` whose `NSUnderlyingErrorKey` holds it.
    public struct DataTaskPublisher: SluiceCore.Publisher, Sendable {
      public typealias Output = (data: Data, response: URLResponse)
      public typealias Failure = URLError

      /// The request each subscription's task loads.
      public let request: URLRequest
      /// The session that runs the tasks.
      public let session: URLSession

      /// A publisher that loads `request` on `session`, once per subscription.
      public init(request: URLRequest, session: URLSession) {
        self.request = request
        self.session = session
      }

      public func receive<S: Subscriber>(subscriber: S)
      where S.Input == Output, S.Failure == URLError {
        let subscription = DataTaskSubscription(parent: self, downstream: subscriber)
        subscriber.receive(subscription: subscription)
        subscription.attached()
      }
    }

    /// A publisher of the result of loading `url`; see ``DataTaskPublisher``.
    ///
    /// ![Marble diagram: session.dataTaskPublisher(for: url)](dataTaskPublisher)
    public func dataTaskPublisher(for url: URL) -> DataTaskPublisher {
      dataTaskPublisher(for: URLRequest(url: url))
    }

    /// A publisher of the result of loading `request`; see ``DataTaskPublisher``.
    ///
    /// ![Marble diagram: session.dataTaskPublisher(for: url)](dataTaskPublisher)
    public func dataTaskPublisher(for request: URLRequest) -> DataTaskPublisher {
      DataTaskPublisher(request: request, session: session)
    }
  }

  /// Sluice's publishers for this session (the only way to name them where Foundation has
  /// Combine's own).
  public var sluice: Sluice { Sluice(self) }

  // Where Foundation has no Combine publishers of its own (not Apple platforms). Not
  // `canImport(Combine)`: off Apple platforms this package has a `Combine` module of its own.
  #if !canImport(Darwin)
    /// Combine's name for ``URLSession/Sluice/DataTaskPublisher``.
    ///
    /// ![Marble diagram: session.dataTaskPublisher(for: url)](dataTaskPublisher)
    public typealias DataTaskPublisher = Sluice.DataTaskPublisher

    /// A publisher of the result of loading `url`: one `(data, response)` value and
    /// `.finished`, or a `URLError`; see ``URLSession/Sluice/DataTaskPublisher``.
    ///
    /// ![Marble diagram: session.dataTaskPublisher(for: url)](dataTaskPublisher)
    public func dataTaskPublisher(for url: URL) -> DataTaskPublisher {
      sluice.dataTaskPublisher(for: url)
    }

    /// A publisher of the result of loading `request`: one `(data, response)` value and
    /// `.finished`, or a `URLError`; see ``URLSession/Sluice/DataTaskPublisher``.
    ///
    /// ![Marble diagram: session.dataTaskPublisher(for: url)](dataTaskPublisher)
    public func dataTaskPublisher(for request: URLRequest) -> DataTaskPublisher {
      sluice.dataTaskPublisher(for: request)
    }
  #endif
}

/// One subscriber's data task: `"DataTaskPublisher"`, mirror `task, downstream, parent, demand`.
///
/// States: `idle(parent, downstream)` → `starting` → `running(task)` → `ended`.
/// | event | idle | starting | running | ended |
/// |---|---|---|---|---|
/// | `request(n)` | starting: create and resume the task (unlocked), then running | add demand | add demand | nothing |
/// | the task completes | — | keep the result (`running` delivers it) | ended: deliver the value and `.finished`, or the failure | ignored |
/// | `cancel()` | ended | ended: the requesting thread cancels the task it resumed | ended: cancel the task | nothing |
///
/// The task is resumed before `cancel()` can see it, so every task this subscription cancels was
/// resumed first (cancelling a task before its `resume()` makes FoundationNetworking stop a
/// load it never started), and a task created while a cancel came is cancelled by the thread
/// that created it instead of being left suspended (a session keeps a task it never ran, with
/// its completion handler and this subscription, for as long as the session lives).
private final class DataTaskSubscription<Downstream: Subscriber>: Subscription,
  CustomStringConvertible, CustomReflectable, CustomPlaygroundDisplayConvertible,
  @unchecked Sendable
where Downstream.Input == (data: Data, response: URLResponse), Downstream.Failure == URLError {
  // Safety: all mutable state is in `state`'s lock; the session, the task and the downstream are
  // called after unlocking. The downstream receives signals only once the state ended, from the
  // task's one completion handler or — when the task finished while the subscriber was still in
  // `receive(subscription:)` (it requests from inside it, and the session answers on another
  // thread) — from the subscribing thread right after that call returns: serial, and once.
  typealias Parent = URLSession.Sluice.DataTaskPublisher
  /// What the session's completion handler is given.
  typealias Outcome = (data: Data?, response: URLResponse?, error: (any Error)?)

  enum Phase {
    case idle
    case starting
    case running(URLSessionDataTask)
    case ended
  }

  struct State {
    var phase = Phase.idle
    var parent: Parent?
    var downstream: Downstream?
    var demand = Subscribers.Demand.none
    /// The subscriber is still in `receive(subscription:)`: a result that arrives meanwhile waits.
    var attaching = true
    /// The task's result, waiting for `receive(subscription:)` to return.
    var pending: Outcome?

    /// Ends the subscription and hands back what it held, to be released after unlocking.
    mutating func end() -> (Downstream?, URLSessionDataTask?) {
      defer {
        phase = .ended
        parent = nil
        downstream = nil
        demand = .none
        pending = nil
      }
      if case .running(let task) = phase { return (downstream, task) }
      return (downstream, nil)
    }
  }

  let state: Lock<State>

  init(parent: Parent, downstream: Downstream) {
    state = Lock(State(parent: parent, downstream: downstream))
  }

  func request(_ demand: Subscribers.Demand) {
    demand.assertNonZero(for: description)
    let parent = state.withLock { state -> Parent? in
      guard let parent = state.parent else { return nil }
      state.demand += demand
      guard case .idle = state.phase else { return nil }
      state.phase = .starting
      return parent
    }
    guard let parent else { return }
    // The task keeps this subscription until it completes (and its handler is released).
    // Safety: `completed` is thread-safe; the handler is wrapped only because the subscription's
    // generic metatype is not `Sendable`.
    let handler = UncheckedSendable<(Data?, URLResponse?, (any Error)?) -> Void>(completed)
    let task = parent.session.dataTask(with: parent.request) { data, response, error in
      handler.value(data, response, error)
    }
    task.resume()
    let (cancelled, outcome, ended) = state.withLock {
      state -> (Bool, Outcome?, (Downstream?, URLSessionDataTask?)) in
      guard case .starting = state.phase else { return (true, nil, (nil, nil)) }
      state.phase = .running(task)
      // A result that came while starting is delivered now, unless the subscriber is still in
      // `receive(subscription:)` (`attached()` delivers it then).
      guard !state.attaching, let outcome = state.pending else { return (false, nil, (nil, nil)) }
      return (false, outcome, state.end())
    }
    if cancelled {
      // Cancelled while the task was being created: it was resumed, so this stops it (unless
      // it already completed: see `cancel()`).
      if task.state != .completed { task.cancel() }
    } else if let outcome, let downstream = ended.0 {
      deliver(outcome, to: downstream)
    }
  }

  /// The subscriber's `receive(subscription:)` returned: a result that came meanwhile is
  /// delivered now, on this thread.
  func attached() {
    let (outcome, ended) = state.withLock {
      state -> (Outcome?, (Downstream?, URLSessionDataTask?)) in
      state.attaching = false
      guard case .running = state.phase, let outcome = state.pending else {
        return (nil, (nil, nil))
      }
      return (outcome, state.end())
    }
    // The finished task is released here, after unlocking.
    if let outcome, let downstream = ended.0 { deliver(outcome, to: downstream) }
  }

  private func completed(data: Data?, response: URLResponse?, error: (any Error)?) {
    let ended = state.withLock { state -> (Downstream?, URLSessionDataTask?) in
      switch state.phase {
      case .starting:
        // Completed before `request` saw its `resume()` return: it delivers the result.
        state.pending = (data, response, error)
        return (nil, nil)
      case .running: break
      case .idle, .ended: return (nil, nil)
      }
      if state.attaching {
        state.pending = (data, response, error)
        return (nil, nil)
      }
      return state.end()
    }
    guard let downstream = ended.0 else { return }
    deliver((data, response, error), to: downstream)
  }

  private func deliver(_ outcome: Outcome, to downstream: Downstream) {
    let (data, response, error) = outcome
    switch (response, error) {
    case (let response?, nil):
      _ = downstream.receive((data ?? Data(), response))
      downstream.receive(completion: .finished)
    case (_, let error as URLError):
      downstream.receive(completion: .failure(error))
    case (_, let error?):
      downstream.receive(
        completion: .failure(URLError(.unknown, userInfo: [NSUnderlyingErrorKey: error])))
    case (nil, nil):
      downstream.receive(completion: .failure(URLError(.unknown)))
    }
  }

  func cancel() {
    let (downstream, task) = state.withLock { $0.end() }
    // FoundationNetworking (Linux) can trap when a task that has already completed is
    // cancelled; one that says so is left alone (its handler then finds this subscription ended).
    if let task, task.state != .completed { task.cancel() }
    withExtendedLifetime(downstream) {}
  }

  var description: String { "DataTaskPublisher" }
  var customMirror: Mirror {
    let (phase, parent, downstream, demand) = state.withLock {
      ($0.phase, $0.parent, $0.downstream, $0.demand)
    }
    var task: URLSessionDataTask?
    if case .running(let running) = phase { task = running }
    return Mirror(
      self,
      children: [
        ("task", task as Any), ("downstream", downstream as Any), ("parent", parent as Any),
        ("demand", demand),
      ])
  }
  var playgroundDescription: Any { description }
}
