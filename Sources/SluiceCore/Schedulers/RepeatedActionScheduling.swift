/// A scheduler that can prepare, once, an action it will be asked to run as soon as possible many
/// times: `receive(on:)` schedules the same "deliver the next signal" action for every value, and
/// a scheduler that has to wrap each action it is given (`DispatchQueue` converts a closure into
/// a block, three allocations) wraps it once per subscription instead.
///
/// The prepared closure schedules `action` each time it is called, exactly as
/// `schedule(options: nil, action)` would (same queue, same order, same options).
@usableFromInline
package protocol RepeatedActionScheduling {
  /// Returns a closure that schedules `action` once each time it is called.
  func prepareRepeatedAction(_ action: @escaping () -> Void) -> () -> Void
}
