#if canImport(Glibc)
  internal import Glibc
#elseif canImport(Musl)
  internal import Musl
#elseif canImport(Darwin)
  internal import Darwin
#endif

extension Publishers {
  /// Raises `SIGTRAP` (stopping in the debugger) when a closure says so, as Combine's
  /// `breakpoint`.
  ///
  /// ![Marble diagram: breakpoint(receiveOutput: { $0 == "x" })](breakpoint)
  ///
  /// **Demand**, **Ordering**, **Cancellation**: the upstream's subscription goes straight to the
  /// downstream (none of its own, as in Combine); each closure runs just before its event is
  /// passed on.
  public struct Breakpoint<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The closure that decides whether each subscription stops in the debugger.
    public let receiveSubscription: ((any Subscription) -> Bool)?
    /// The closure that decides whether each value stops in the debugger.
    public let receiveOutput: ((Upstream.Output) -> Bool)?
    /// The closure that decides whether the completion stops in the debugger.
    public let receiveCompletion: ((Subscribers.Completion<Failure>) -> Bool)?

    /// Creates the publisher over `upstream`, with its `receiveSubscription`, `receiveOutput`,
    /// `receiveCompletion`, as the operator method does.
    @inlinable
    public init(
      upstream: Upstream, receiveSubscription: ((any Subscription) -> Bool)? = nil,
      receiveOutput: ((Upstream.Output) -> Bool)? = nil,
      receiveCompletion: ((Subscribers.Completion<Failure>) -> Bool)? = nil
    ) {
      self.upstream = upstream
      self.receiveSubscription = receiveSubscription
      self.receiveOutput = receiveOutput
      self.receiveCompletion = receiveCompletion
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      upstream.receive(
        subscriber: BreakpointForwarding(
          downstream: subscriber, receiveSubscription: receiveSubscription,
          receiveOutput: receiveOutput, receiveCompletion: receiveCompletion))
    }
  }
}

/// The subscriber of `breakpoint`: runs each closure before passing its event on, and stops in
/// the debugger when it returns `true`. No subscription of its own: the downstream receives the
/// upstream's, as in Combine.
@usableFromInline
struct BreakpointForwarding<Downstream: Subscriber>: Subscriber, CustomStringConvertible,
  CustomReflectable, CustomPlaygroundDisplayConvertible
{
  @usableFromInline typealias Input = Downstream.Input
  @usableFromInline typealias Failure = Downstream.Failure

  @usableFromInline let downstream: Downstream
  @usableFromInline let receiveSubscription: ((any Subscription) -> Bool)?
  @usableFromInline let receiveOutput: ((Input) -> Bool)?
  @usableFromInline let receiveCompletion: ((Subscribers.Completion<Failure>) -> Bool)?
  @usableFromInline let combineIdentifier = CombineIdentifier()

  @inlinable init(
    downstream: Downstream, receiveSubscription: ((any Subscription) -> Bool)?,
    receiveOutput: ((Input) -> Bool)?,
    receiveCompletion: ((Subscribers.Completion<Failure>) -> Bool)?
  ) {
    self.downstream = downstream
    self.receiveSubscription = receiveSubscription
    self.receiveOutput = receiveOutput
    self.receiveCompletion = receiveCompletion
  }

  @inlinable func receive(subscription: any Subscription) {
    if receiveSubscription?(subscription) == true { debuggerTrap() }
    downstream.receive(subscription: subscription)
  }

  @inlinable func receive(_ input: Input) -> Subscribers.Demand {
    if receiveOutput?(input) == true { debuggerTrap() }
    return downstream.receive(input)
  }

  @inlinable func receive(completion: Subscribers.Completion<Failure>) {
    if receiveCompletion?(completion) == true { debuggerTrap() }
    downstream.receive(completion: completion)
  }

  @usableFromInline var description: String { "Breakpoint" }
  /// No children, as in Combine.
  @usableFromInline var customMirror: Mirror { Mirror(self, children: EmptyCollection()) }
  @usableFromInline var playgroundDescription: Any { description }
}

/// Stops in the debugger (`SIGTRAP`).
@usableFromInline
func debuggerTrap() {
  raise(SIGTRAP)
}

extension Publisher {
  /// Raises `SIGTRAP` when one of the closures returns `true`.
  ///
  /// ![Marble diagram: breakpoint(receiveOutput: { $0 == "x" })](breakpoint)
  @inlinable
  public func breakpoint(
    receiveSubscription: ((any Subscription) -> Bool)? = nil,
    receiveOutput: ((Output) -> Bool)? = nil,
    receiveCompletion: ((Subscribers.Completion<Failure>) -> Bool)? = nil
  ) -> Publishers.Breakpoint<Self> {
    Publishers.Breakpoint(
      upstream: self, receiveSubscription: receiveSubscription, receiveOutput: receiveOutput,
      receiveCompletion: receiveCompletion)
  }

  /// Raises `SIGTRAP` when this publisher fails.
  ///
  /// ![Marble diagram: breakpointOnError()](breakpointOnError)
  @inlinable
  public func breakpointOnError() -> Publishers.Breakpoint<Self> {
    breakpoint(receiveCompletion: { if case .failure = $0 { true } else { false } })
  }
}

extension Publishers {
  /// Traps with the error (and `prefix`) if the upstream fails, as Combine's
  /// `assertNoFailure`; otherwise passes everything through with failure type `Never`.
  ///
  /// ![Marble diagram: assertNoFailure()](assertNoFailure)
  ///
  /// **Demand**, **Ordering**, **Cancellation**: the upstream's, unchanged.
  public struct AssertNoFailure<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Never

    /// The publisher this publisher receives values from.
    public let upstream: Upstream
    /// The text at the start of the trap's message.
    public let prefix: String
    /// The file the trap reports.
    public let file: StaticString
    /// The line the trap reports.
    public let line: UInt

    /// Creates the publisher over `upstream`, with its `prefix`, `file`, `line`, as the operator
    /// method does.
    @inlinable
    public init(upstream: Upstream, prefix: String, file: StaticString, line: UInt) {
      self.upstream = upstream
      self.prefix = prefix
      self.file = file
      self.line = line
    }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S)
    where Output == S.Input, Failure == S.Failure {
      let (prefix, file, line) = (self.prefix, self.file, self.line)
      upstream.receive(
        subscriber: Forwarding(
          "AssertNoFailure", downstream: subscriber,
          children: [("file", file), ("line", line), ("prefix", prefix)], value: { $0 },
          failure: { error in
            Violation.unexpectedFailure(error, prefix: prefix, file: file, line: line)
          }))
    }
  }
}

extension Publisher {
  /// Traps if this publisher fails: for publishers that must not.
  ///
  /// ![Marble diagram: assertNoFailure()](assertNoFailure)
  @inlinable
  public func assertNoFailure(
    _ prefix: String = "", file: StaticString = #file, line: UInt = #line
  ) -> Publishers.AssertNoFailure<Self> {
    Publishers.AssertNoFailure(upstream: self, prefix: prefix, file: file, line: line)
  }
}
