extension Optional where Wrapped == any Subscription {
  /// Cancels the subscription, if there is one, moving it out of the optional.
  ///
  /// `upstream?.cancel()` on a `let` first copies the optional, and Swift copies an optional
  /// existential through `Optional`'s generic value witnesses (over a hundred instructions, on
  /// every cancel path of every subscription). Consuming the optional moves the existential out
  /// instead; the subscription is released when this returns.
  @inlinable
  consuming func cancelIfPresent() {
    if case .some(let subscription) = consume self { subscription.cancel() }
  }
}
