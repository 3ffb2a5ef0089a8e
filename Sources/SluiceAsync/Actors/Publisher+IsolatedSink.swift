extension Publisher {
  /// Attaches a subscriber whose closures run isolated to `actor`, one value at a time, in the
  /// order the publisher sent them, so a pipeline can update actor state without an `await` per
  /// value at the call site.
  ///
  /// ![Marble diagram of sink-isolatedTo, drawn from a run](sink-isolatedTo)
  ///
  /// The subscription is made before this returns (so a subject's values sent right after are
  /// kept); a task isolated to `actor` then hands over the values, suspending between them, so
  /// the actor stays free for other work while the pipeline is idle.
  ///
  /// **Demand**: by `bufferingPolicy`; by default `.prefetch(64)` (backpressure: a slow actor
  /// slows the upstream), or `.unbounded` for hot publishers (`HotPublisher`: subjects,
  /// `@Published`, operator chains over them), which cannot be slowed and would
  /// otherwise drop values. **Ordering**: the publisher's. **Cancellation**: cancelling (or
  /// deinitialising) the returned value cancels the subscription and the task; no closure runs
  /// afterwards.
  ///
  /// ```swift
  /// actor Scoreboard { var total = 0 }
  /// let board = Scoreboard()
  /// let cancellable = scores.sink(isolatedTo: board) { board, score in board.total += score }
  /// ```
  // Disfavoured so that `isolatedTo: MainActor.shared` picks the `@MainActor` overload below
  // (actor isolation is checked after overload resolution, which would otherwise pick this one
  // and then reject a closure that touches main-actor state).
  @_disfavoredOverload
  public func sink<A: Actor>(
    isolatedTo actor: A,
    bufferingPolicy: AsyncBufferingPolicy? = nil,
    receiveCompletion: @escaping @Sendable (isolated A, Subscribers.Completion<Failure>) -> Void =
      { _, _ in },
    receiveValue: @escaping @Sendable (isolated A, Output) -> Void
  ) -> AnyCancellable {
    let policy = bufferingPolicy ?? self.bufferingPolicy(otherwise: .prefetch(64))
    let owner = values(bufferingPolicy: policy).subscribe()
    let task = Task {
      await deliverIsolated(
        from: owner, to: actor, receiveValue: receiveValue, receiveCompletion: receiveCompletion)
    }
    return AnyCancellable {
      task.cancel()
      owner.bridge.cancel()
    }
  }
}

/// The isolated sink's task: hands each value to `receiveValue` on `actor`; a free function so
/// the task does not capture the publisher's type.
private func deliverIsolated<A: Actor, Output, Failure: Error>(
  from owner: IteratorOwner<Output, Failure>,
  to actor: isolated A,
  receiveValue: @Sendable (isolated A, Output) -> Void,
  receiveCompletion: @Sendable (isolated A, Subscribers.Completion<Failure>) -> Void
) async {
  do throws(Failure) {
    while let value = try await owner.bridge.next(isolation: actor) {
      receiveValue(actor, value)
    }
    if !Task.isCancelled { receiveCompletion(actor, .finished) }
  } catch {
    receiveCompletion(actor, .failure(error))
  }
}

extension Publisher {
  /// ``sink(isolatedTo:bufferingPolicy:receiveCompletion:receiveValue:)`` for the main actor,
  /// with `@MainActor` closures: they can read and write main-actor state (a view model's
  /// properties) directly, which a closure taking `isolated A` cannot, since the type checker
  /// does not treat a generic isolated parameter as the main actor.
  ///
  /// ![Marble diagram of sink-isolatedTo, drawn from a run](sink-isolatedTo)
  ///
  /// ```swift
  /// @MainActor final class SearchModel {
  ///   var results: [String] = []
  ///   var cancellable: AnyCancellable?
  ///   func start(_ search: some Publisher<[String], Never>) {
  ///     cancellable = search.sink(isolatedTo: MainActor.shared) { _, found in
  ///       self.results = found
  ///     }
  ///   }
  /// }
  /// ```
  ///
  /// **Demand**, **ordering** and **cancellation** as the generic form's.
  public func sink(
    isolatedTo actor: MainActor,
    bufferingPolicy: AsyncBufferingPolicy? = nil,
    receiveCompletion: @escaping @MainActor (MainActor, Subscribers.Completion<Failure>) -> Void =
      { _, _ in },
    receiveValue: @escaping @MainActor (MainActor, Output) -> Void
  ) -> AnyCancellable {
    let policy = bufferingPolicy ?? self.bufferingPolicy(otherwise: .prefetch(64))
    let owner = values(bufferingPolicy: policy).subscribe()
    let task = Task { @MainActor in
      await deliverOnMainActor(
        from: owner, receiveValue: receiveValue, receiveCompletion: receiveCompletion)
    }
    return AnyCancellable {
      task.cancel()
      owner.bridge.cancel()
    }
  }
}

/// The main-actor sink's task: hands each value to `receiveValue` on the main actor.
@MainActor
private func deliverOnMainActor<Output, Failure: Error>(
  from owner: IteratorOwner<Output, Failure>,
  receiveValue: @MainActor (MainActor, Output) -> Void,
  receiveCompletion: @MainActor (MainActor, Subscribers.Completion<Failure>) -> Void
) async {
  do throws(Failure) {
    while let value = try await owner.bridge.next(isolation: MainActor.shared) {
      receiveValue(MainActor.shared, value)
    }
    if !Task.isCancelled { receiveCompletion(MainActor.shared, .finished) }
  } catch {
    receiveCompletion(MainActor.shared, .failure(error))
  }
}
