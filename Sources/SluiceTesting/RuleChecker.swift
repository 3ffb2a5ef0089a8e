public import SluiceCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// A rule of the publisher–subscriber contract that a publisher broke.
public struct RuleViolation: Equatable, Sendable, CustomStringConvertible {
  /// The rules the checker watches.
  public enum Rule: String, Sendable, CaseIterable {
    /// A value or completion arrived before the subscription.
    case signalBeforeSubscription = "signal before subscription"
    /// A second subscription arrived.
    case subscribedTwice = "subscription received twice"
    /// More values arrived than the subscriber had demanded.
    case moreValuesThanDemanded = "more values than demanded"
    /// A value or completion arrived after the completion.
    case signalAfterCompletion = "signal after completion"
    /// A value or completion after `cancel()` returned, on the thread that cancelled, or a
    /// second one on any thread. (One signal that another thread had already decided to send
    /// when `cancel()` was called may still arrive: the contract only says signals stop
    /// eventually, and no publisher can recall a delivery already under way.)
    case signalAfterCancel = "signal after cancel"
    /// Two signals were delivered at the same time on different threads.
    case concurrentSignals = "concurrent signals"
  }

  /// The rule that was broken.
  public let rule: Rule
  /// What happened, in words.
  public let detail: String

  public var description: String { "Rule broken (\(rule.rawValue)): \(detail)" }
}

/// Watches publishers for broken rules of the publisher–subscriber contract.
///
/// Wrap a publisher with `publisher.checkingRules(checker)`; subscribe to the result as usual.
/// The checker sits between the publisher and the subscriber, passes every signal through, and
/// records a ``RuleViolation`` naming the rule when the publisher:
/// - delivers more values than the subscriber demanded (requests plus demand returned from
///   `receive(_:)`),
/// - signals before its subscription or after its completion,
/// - signals after `cancel()` returned on the cancelling thread, or twice on any thread (one
///   delivery already under way on another thread when `cancel()` is called is allowed),
/// - completes twice, sends a second subscription,
/// - or signals on two threads at once (re-entrant signals on the same thread are allowed).
///
/// ```swift
/// let checker = RuleChecker()
/// let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(2))
/// [1, 2, 3].publisher.checkingRules(checker).subscribe(recorder)
/// checker.violations   // []
/// ```
public final class RuleChecker: Sendable {
  private let recorded = Lock<[RuleViolation]>([])
  private let onViolation: (@Sendable (RuleViolation) -> Void)?

  /// Creates a checker; `onViolation`, if given, is also called for each violation as it
  /// happens (for example to record a test issue).
  public init(onViolation: (@Sendable (RuleViolation) -> Void)? = nil) {
    self.onViolation = onViolation
  }

  /// Every violation seen so far, in order.
  public var violations: [RuleViolation] { recorded.withLock { $0 } }

  func report(_ rule: RuleViolation.Rule, _ detail: String) {
    let violation = RuleViolation(rule: rule, detail: detail)
    recorded.withLock { $0.append(violation) }
    onViolation?(violation)
  }
}

extension Publisher {
  /// This publisher, with every subscription watched by `checker`.
  public func checkingRules(_ checker: RuleChecker) -> RuleCheckedPublisher<Self> {
    RuleCheckedPublisher(upstream: self, checker: checker)
  }
}

/// A publisher whose subscriptions are watched by a ``RuleChecker``.
public struct RuleCheckedPublisher<Upstream: Publisher>: Publisher {
  public typealias Output = Upstream.Output
  public typealias Failure = Upstream.Failure

  /// The publisher this publisher receives values from.
  public let upstream: Upstream
  /// The checker every subscription reports to.
  public let checker: RuleChecker

  public func receive<S: Subscriber>(subscriber: S)
  where Upstream.Output == S.Input, Upstream.Failure == S.Failure {
    upstream.receive(subscriber: RuleCheckingSubscriber(downstream: subscriber, checker: checker))
  }
}

/// Sits between a publisher and its subscriber, checking each signal against the rules.
private final class RuleCheckingSubscriber<Downstream: Subscriber>: Subscriber, Subscription,
  CustomStringConvertible, @unchecked Sendable
{
  // Safety: `state` is lock-protected; signal tracking is atomic; the subscriber and the
  // upstream subscription are called after unlocking.
  typealias Input = Downstream.Input
  typealias Failure = Downstream.Failure

  private struct State {
    var upstream: (any Subscription)?
    var subscriptionCount = 0
    var demanded = Subscribers.Demand.none
    var delivered = 0
    var completed = false
    /// The thread that called `cancel()`, once it returned.
    var cancellingThread: UInt?
    var signalsAfterCancel = 0

    /// Whether a signal arriving now on `thread` breaks the "nothing after cancel" rule.
    mutating func signalAfterCancelIsViolation(on thread: UInt) -> Bool {
      guard let cancellingThread else { return false }
      signalsAfterCancel += 1
      return thread == cancellingThread || signalsAfterCancel > 1
    }
  }

  private let downstream: Downstream
  private let checker: RuleChecker
  private let state = Lock(State())
  /// The thread currently signalling (0 when none), and its re-entrancy depth.
  private let signallingThread = Atomic<UInt>(0)
  private let depth = Atomic<Int>(0)

  init(downstream: Downstream, checker: RuleChecker) {
    self.downstream = downstream
    self.checker = checker
  }

  /// The checked subscription's own description: the checker is transparent.
  var description: String {
    state.withLock { $0.upstream }.map { String(describing: $0) } ?? "RuleChecker"
  }

  // MARK: Signals from upstream

  func receive(subscription: any Subscription) {
    let count = state.withLock { state in
      state.subscriptionCount += 1
      if state.subscriptionCount == 1 { state.upstream = subscription }
      return state.subscriptionCount
    }
    guard count == 1 else {
      checker.report(.subscribedTwice, "received subscription #\(count): \(subscription)")
      subscription.cancel()
      return
    }
    signalling { downstream.receive(subscription: self) }
  }

  func receive(_ input: Input) -> Subscribers.Demand {
    let problem = state.withLock { state -> (RuleViolation.Rule, String)? in
      if state.subscriptionCount == 0 {
        return (.signalBeforeSubscription, "value \(input) before any subscription")
      }
      if state.completed { return (.signalAfterCompletion, "value \(input) after completion") }
      if state.signalAfterCancelIsViolation(on: currentThreadID()) {
        return (.signalAfterCancel, "value \(input) after cancel()")
      }
      state.delivered += 1
      if state.demanded < state.delivered {
        return (
          .moreValuesThanDemanded,
          "value #\(state.delivered) (\(input)) with only \(state.demanded) demanded"
        )
      }
      return nil
    }
    if let (rule, detail) = problem { checker.report(rule, detail) }
    let more = signalling { downstream.receive(input) }
    if more > 0 { state.withLock { $0.demanded += more } }
    return more
  }

  func receive(completion: Subscribers.Completion<Failure>) {
    let problem = state.withLock { state -> (RuleViolation.Rule, String)? in
      defer {
        state.completed = true
        state.upstream = nil
      }
      if state.subscriptionCount == 0 {
        return (.signalBeforeSubscription, "completion \(completion) before any subscription")
      }
      if state.completed { return (.signalAfterCompletion, "second completion: \(completion)") }
      if state.signalAfterCancelIsViolation(on: currentThreadID()) {
        return (.signalAfterCancel, "completion \(completion) after cancel()")
      }
      return nil
    }
    if let (rule, detail) = problem { checker.report(rule, detail) }
    signalling { downstream.receive(completion: completion) }
  }

  // MARK: Demand and cancellation from downstream

  func request(_ demand: Subscribers.Demand) {
    let upstream = state.withLock { state in
      state.demanded += demand
      return state.upstream
    }
    upstream?.request(demand)
  }

  func cancel() {
    let upstream = state.withLock { state in
      defer { state.upstream = nil }
      return state.upstream
    }
    upstream?.cancel()
    let thread = currentThreadID()
    state.withLock { state in
      if state.cancellingThread == nil { state.cancellingThread = thread }
    }
  }

  // MARK: Serial signals

  private func signalling<R>(_ body: () -> R) -> R {
    let me = currentThreadID()
    let (exchanged, owner) = signallingThread.compareExchange(
      expected: 0, desired: me, ordering: .acquiringAndReleasing)
    let owns = exchanged || owner == me
    if owns {
      depth.wrappingAdd(1, ordering: .relaxed)
    } else {
      checker.report(.concurrentSignals, "a signal started while another thread was signalling")
    }
    defer {
      if owns, depth.wrappingSubtract(1, ordering: .relaxed).newValue == 0 {
        signallingThread.store(0, ordering: .releasing)
      }
    }
    return body()
  }
}

/// A non-zero identifier of the calling thread.
private func currentThreadID() -> UInt {
  #if canImport(Darwin)
    UInt(bitPattern: pthread_self())
  #else
    UInt(pthread_self())
  #endif
}
