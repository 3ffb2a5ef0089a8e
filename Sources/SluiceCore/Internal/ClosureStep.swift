/// An ``OperatorStep`` made of closures over a small piece of state: how almost every filtering
/// and reducing operator is written, in a few lines each.
@usableFromInline
struct ClosureStep<Input, UpstreamFailure: Error, State, Output, Failure: Error>: OperatorStep {
  @usableFromInline let name: StaticString
  @usableFromInline let upstreamDemand: UpstreamDemand
  @usableFromInline let countsDeliveries: Bool
  @usableFromInline var earlySignals: EarlySignals = .ignored
  @usableFromInline var trapsUnrequestedValues = false
  @usableFromInline var reflect: (State, StepReflection) -> [Mirror.Child] = { _, _ in [] }
  @usableFromInline var state: State
  @usableFromInline let onValue: (inout State, Input) -> StepAction<Output, Failure>
  @usableFromInline let onCompletion:
    (inout State, Subscribers.Completion<UpstreamFailure>) -> StepCompletion<Output, Failure>

  @inlinable
  init(
    _ name: StaticString, demand: UpstreamDemand = .forward, countsDeliveries: Bool = false,
    state: State,
    onValue: @escaping (inout State, Input) -> StepAction<Output, Failure>,
    onCompletion:
      @escaping (inout State, Subscribers.Completion<UpstreamFailure>) ->
      StepCompletion<Output, Failure>
  ) {
    self.name = name
    upstreamDemand = demand
    self.countsDeliveries = countsDeliveries
    self.state = state
    self.onValue = onValue
    self.onCompletion = onCompletion
  }

  @inlinable mutating func receive(_ input: Input) -> StepAction<Output, Failure> {
    onValue(&state, input)
  }

  @usableFromInline func children(_ reflection: StepReflection) -> [Mirror.Child] {
    reflect(state, reflection)
  }

  /// This step with signals before the subscription handled as `policy` says.
  @inlinable func early(_ policy: EarlySignals) -> ClosureStep {
    var step = self
    step.earlySignals = policy
    return step
  }

  /// This step trapping on a value that arrives with no outstanding demand (it must count
  /// deliveries).
  @inlinable func trappingUnrequestedValues() -> ClosureStep {
    var step = self
    step.trapsUnrequestedValues = true
    return step
  }

  /// This step with a mirror of `children`.
  @inlinable func mirror(
    _ children: @escaping (State, StepReflection) -> [Mirror.Child]
  ) -> ClosureStep {
    var step = self
    step.reflect = children
    return step
  }

  /// This step with a mirror of one child, the downstream.
  @inlinable func mirroringDownstream() -> ClosureStep {
    mirror { _, reflection in [("downstream", reflection.downstream)] }
  }

  @inlinable mutating func receive(
    completion: Subscribers.Completion<UpstreamFailure>
  ) -> StepCompletion<Output, Failure> {
    onCompletion(&state, completion)
  }
}

extension ClosureStep where State == Void {
  /// A stateless filtering step: `transform` returns `nil` to drop a value (asking upstream for
  /// one more), `.success` to emit it, `.failure` to fail (a `try` closure threw). The
  /// completion passes on, its failure converted by `failure`.
  @inlinable
  static func filtering(
    _ name: StaticString, failure: @escaping (UpstreamFailure) -> Failure,
    transform: @escaping (Input) -> Result<Output, Failure>?
  ) -> ClosureStep {
    ClosureStep(
      name, state: (),
      onValue: { _, input in
        switch transform(input) {
        case .success(let output): .emit(output)
        case .failure(let error): .fail(error)
        case nil: .drop(requesting: .max(1))
        }
      },
      onCompletion: { _, completion in .complete(final: nil, completion.mapFailure(failure)) })
  }
}

extension ClosureStep {
  /// A stateful step that passes the upstream completion on, its failure converted.
  @inlinable
  static func passing(
    _ name: StaticString, demand: UpstreamDemand = .forward, state: State,
    failure: @escaping (UpstreamFailure) -> Failure,
    onValue: @escaping (inout State, Input) -> StepAction<Output, Failure>
  ) -> ClosureStep {
    ClosureStep(
      name, demand: demand, state: state, onValue: onValue,
      onCompletion: { _, completion in .complete(final: nil, completion.mapFailure(failure)) })
  }

  /// A reducing step: asks upstream for `.unlimited`, folds each value into `state` with
  /// `next` (which returns `true` to stop early, cancelling the upstream, or fails), and
  /// publishes `result(state)` (if not `nil`) once the upstream finishes or the step stops,
  /// when the downstream has demand for it. An upstream failure passes on, converted.
  @inlinable
  static func reducing(
    _ name: StaticString, initial: State, failure: @escaping (UpstreamFailure) -> Failure,
    next: @escaping (inout State, Input) -> Result<Bool, Failure>,
    result: @escaping (State) -> Output?
  ) -> ClosureStep {
    ClosureStep(
      name, demand: .unlimited, state: initial,
      onValue: { state, input in
        switch next(&state, input) {
        case .success(false): .drop(requesting: .none)
        case .success(true): .finish(final: result(state))
        case .failure(let error): .fail(error)
        }
      },
      onCompletion: { state, completion in
        switch completion {
        case .finished: .complete(final: result(state), .finished)
        case .failure(let error): .complete(final: nil, .failure(failure(error)))
        }
      }
    ).mirror { state, reflection in
      // Combine's reducing family shows these four.
      [
        ("downstream", reflection.downstream), ("result", result(state) as Any),
        ("initial", result(initial) as Any), ("status", reflection.status),
      ]
    }
  }
}

extension Result where Failure == any Error {
  /// `nil` when the success maps to `nil`; errors pass through.
  @inlinable
  func flatMapToOptional<T>(_ transform: (Success) -> T?) -> Result<T, any Error>? {
    switch self {
    case .success(let value): transform(value).map { .success($0) }
    case .failure(let error): .failure(error)
    }
  }
}

/// Returns its argument: the failure conversion of operators that keep the upstream's failure.
@inlinable
func same<T>(_ value: T) -> T { value }

/// Any error as `any Error`: the failure conversion of try-operators.
@inlinable
func anyError<E: Error>(_ error: E) -> any Error { error }
