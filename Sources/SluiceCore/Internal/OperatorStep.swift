/// What one operator does to the values and completion of its upstream, without any concern
/// for threads, demand bookkeeping or cancellation: ``StepSubscription`` runs it.
///
/// A step is mutated only by the upstream's signals, which arrive serially, so it needs no lock.
/// Filtering operators (filter, compactMap, removeDuplicates, prefix/drop(while:), output, scan,
/// …) and reducing ones (reduce, collect, count, min/max, first/last, contains, allSatisfy,
/// ignoreOutput, …) are each one small step; a try-variant is the same step with a closure that
/// can fail.
@usableFromInline
protocol OperatorStep {
  associatedtype Input
  associatedtype UpstreamFailure: Error
  associatedtype Output
  associatedtype Failure: Error

  /// The subscription's `description`, as Combine names it ("Filter", "TryScan", …).
  var name: StaticString { get }

  /// How the operator asks its upstream for values.
  var upstreamDemand: UpstreamDemand { get }

  /// Whether the step may end with a final value after values passed through (replaceError,
  /// collect(n)), so the subscription must count what it delivered to know the downstream's
  /// remaining demand.
  var countsDeliveries: Bool { get }

  /// Whether a value arriving with no outstanding demand traps (replaceError, as Combine does);
  /// only for steps that count deliveries.
  var trapsUnrequestedValues: Bool { get }

  /// What the operator does with a value, completion or request that arrives before its
  /// upstream subscription.
  var earlySignals: EarlySignals { get }

  /// The mirror's children (Combine's, operator by operator), given what the subscription knows.
  func children(_ reflection: StepReflection) -> [Mirror.Child]

  /// Handles one upstream value.
  mutating func receive(_ input: Input) -> StepAction<Output, Failure>

  /// Handles the upstream's completion.
  mutating func receive(
    completion: Subscribers.Completion<UpstreamFailure>
  ) -> StepCompletion<Output, Failure>
}

/// What a ``StepSubscription`` does with signals that arrive before its upstream subscription.
/// Combine is not uniform here, and code observes it, so each operator says which it is.
@usableFromInline
enum EarlySignals: Sendable, Equatable {
  /// Dropped (the reducing family, drop(while:), replaceEmpty, replaceError).
  case ignored
  /// Values are handled as if subscribed; a completion before the subscription is dropped
  /// (tryMap, tryScan, output: what Combine does, per a suite checked against it).
  case valuesProcessed
  /// Values and a completion are handled as if subscribed: the completion ends the subscription
  /// (encode, decode, collect(n)).
  case processed

  /// Whether values arriving before the subscription are delivered.
  @inlinable var admitsEarlyValues: Bool { self == .valuesProcessed || self == .processed }
  /// A contract violation: trap naming the operator (tryFilter, tryCompactMap, prefix(while:),
  /// removeDuplicates and their try forms), including a downstream request.
  case trapped
}

/// What a ``StepSubscription`` tells its step when a mirror is made.
@usableFromInline
struct StepReflection {
  /// The downstream (`nil` once released).
  @usableFromInline let downstream: Any
  /// The subscription's phase, as text.
  @usableFromInline let status: String
  /// The upstream subscription (`nil` before it arrives and after the end).
  @usableFromInline let upstream: Any
  /// Whether the subscription has ended.
  @usableFromInline let finished: Bool
}

/// How a ``StepSubscription`` turns its downstream's demand into requests to its upstream.
@usableFromInline
enum UpstreamDemand: Sendable, Equatable {
  /// Each downstream request is passed on as is (filter, map-like operators).
  case forward
  /// Each downstream request is multiplied (`collect(n)`: one array per `n` values).
  case scaled(by: Int)
  /// `.unlimited` as soon as the upstream subscribes; downstream demand is kept for the
  /// final value (reducing operators).
  case unlimited

  /// What to ask upstream for when the downstream asks for `demand`.
  @inlinable func scale(_ demand: Subscribers.Demand) -> Subscribers.Demand {
    switch self {
    case .forward: demand
    case .scaled(let factor): demand * factor
    case .unlimited: .none
    }
  }
}

/// What a step does with one upstream value.
@usableFromInline
enum StepAction<Output, Failure: Error> {
  /// Deliver the value; the downstream's returned demand goes upstream.
  case emit(Output)
  /// Deliver nothing; ask upstream for this much more (`.max(1)` when a filter rejects a value
  /// under forwarded demand; `.none` for reducing steps, which asked for `.unlimited`).
  case drop(requesting: Subscribers.Demand)
  /// Deliver the value, then cancel the upstream and finish (the last value of `output(in:)`).
  case emitAndFinish(Output)
  /// Cancel the upstream and finish, after delivering `final` (if any) once the downstream has
  /// demand for it (`first()`, `contains`, `prefix(while:)`).
  case finish(final: Output?)
  /// Cancel the upstream and fail (a `try` closure threw).
  case fail(Failure)
}

/// What a step does when its upstream completes.
@usableFromInline
enum StepCompletion<Output, Failure: Error> {
  /// Deliver `final` (if any) once the downstream has demand for it, then `completion`.
  case complete(final: Output?, Subscribers.Completion<Failure>)
}

extension Subscribers.Completion {
  /// Whether this is `.finished`.
  @inlinable var isFinished: Bool {
    if case .finished = self { return true }
    return false
  }

  /// The completion with its failure converted: `.finished` stays `.finished`.
  @inlinable
  func mapFailure<NewFailure: Error>(
    _ transform: (Failure) -> NewFailure
  ) -> Subscribers.Completion<NewFailure> {
    switch self {
    case .finished: .finished
    case .failure(let error): .failure(transform(error))
    }
  }
}

/// Runs a `throws` closure of a try-operator and turns its error into the operator's failure.
@inlinable
func attempt<Value>(_ body: () throws -> Value) -> Result<Value, any Error> {
  do { return .success(try body()) } catch { return .failure(error) }
}
