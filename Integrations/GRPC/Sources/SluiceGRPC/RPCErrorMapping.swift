import GRPCCore

/// How a pipeline's failure becomes the `RPCError` whose status the peer receives.
///
/// The ``default`` mapping:
///
/// | the pipeline's failure | becomes |
/// |---|---|
/// | an `RPCError` | itself: code, message and metadata reach the peer |
/// | an `RPCErrorConvertible` | `RPCError(convertible)`: its code, message and metadata |
/// | `CancellationError` | `.cancelled` |
/// | anything else | `.unknown`, message "The pipeline failed.", the error kept as `cause` |
///
/// The last row keeps the error's description off the wire (it may carry internal details, and
/// grpc-swift's own executor does the same for a handler's unknown errors): make your error
/// `RPCErrorConvertible`, or pass a mapping of your own, to send a code and message that mean
/// something to the client.
///
/// ```swift
/// let mapping = RPCErrorMapping { error in
///   if let error = error as? LookupError { return RPCError(code: .notFound, message: "\(error)") }
///   return RPCErrorMapping.default.rpcError(for: error)
/// }
/// ```
public struct RPCErrorMapping: Sendable {
  /// The mapping.
  public let map: @Sendable (any Error) -> RPCError

  /// A mapping that turns a failure into the `RPCError` `map` returns.
  public init(_ map: @escaping @Sendable (any Error) -> RPCError) {
    self.map = map
  }

  /// The `RPCError` for `error`.
  public func rpcError(for error: any Error) -> RPCError {
    map(error)
  }

  /// `RPCError`s as they are, `RPCErrorConvertible`s converted, `CancellationError` as
  /// `.cancelled`, anything else as `.unknown` without its description (see the table above).
  public static let `default` = RPCErrorMapping { error in
    switch error {
    case let error as RPCError: error
    case let error as any RPCErrorConvertible: RPCError(error)
    case is CancellationError: RPCError(code: .cancelled, message: "The RPC was cancelled.")
    default: RPCError(code: .unknown, message: "The pipeline failed.", cause: error)
    }
  }
}
