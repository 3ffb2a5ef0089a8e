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
  /// **Demand**, **Ordering**, **Cancellation**: passed through unchanged; each closure runs
  /// just before its event is passed on.
  public struct Breakpoint<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Upstream.Failure

    public let upstream: Upstream
    public let receiveSubscription: ((any Subscription) -> Bool)?
    public let receiveOutput: ((Upstream.Output) -> Bool)?
    public let receiveCompletion: ((Subscribers.Completion<Failure>) -> Bool)?

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
      let (onSubscription, onOutput, onCompletion) =
        (receiveSubscription, receiveOutput, receiveCompletion)
      upstream.receive(
        subscriber: HookedSubscription(
          "Breakpoint", downstream: subscriber,
          hooks: EventHooks(
            subscription: { if onSubscription?($0) == true { debuggerTrap() } },
            value: { if onOutput?($0) == true { debuggerTrap() } },
            returnedDemand: nil,
            completion: { if onCompletion?($0) == true { debuggerTrap() } },
            cancel: nil, request: nil)))
    }
  }
}

/// Stops in the debugger (`SIGTRAP`).
@usableFromInline
func debuggerTrap() {
  raise(SIGTRAP)
}

extension Publisher {
  /// Raises `SIGTRAP` when one of the closures returns `true`.
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
  @inlinable
  public func breakpointOnError() -> Publishers.Breakpoint<Self> {
    breakpoint(receiveCompletion: { if case .failure = $0 { true } else { false } })
  }
}

extension Publishers {
  /// Traps with the error (and `prefix`) if the upstream fails, as Combine's
  /// `assertNoFailure`; otherwise passes everything through with failure type `Never`.
  ///
  /// **Demand**, **Ordering**, **Cancellation**: the upstream's, unchanged.
  public struct AssertNoFailure<Upstream: Publisher>: Publisher {
    public typealias Output = Upstream.Output
    public typealias Failure = Never

    public let upstream: Upstream
    public let prefix: String
    public let file: StaticString
    public let line: UInt

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
          "AssertNoFailure", downstream: subscriber, value: { $0 },
          failure: { error in
            Violation.unexpectedFailure(error, prefix: prefix, file: file, line: line)
          }))
    }
  }
}

extension Publisher {
  /// Traps if this publisher fails: for publishers that must not.
  @inlinable
  public func assertNoFailure(
    _ prefix: String = "", file: StaticString = #file, line: UInt = #line
  ) -> Publishers.AssertNoFailure<Self> {
    Publishers.AssertNoFailure(upstream: self, prefix: prefix, file: file, line: line)
  }
}
