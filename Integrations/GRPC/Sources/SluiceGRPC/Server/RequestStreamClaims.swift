import Synchronization

/// Which request streams a publisher has claimed, by the identity of the object that lets such
/// a stream be iterated once: grpc-swift's `UncheckedAsyncIteratorSequence` (under the
/// deserializing `map` that `StreamingServerRequest.messages` wraps), which stops the process
/// on a second iterator. Each access to `request.publisher` makes a new
/// ``RPCRequestPublisher``; their claims are their own, so without this two publishers of one
/// request, both subscribed, would read the stream twice.
///
/// The object is found by reflection through the stream's wrappers (structs, enums, optionals,
/// existentials, and the fields of wrapper classes), up to 64 levels deep and 1,024 values in
/// all: each interceptor that wraps `request.messages` in `map`, `filter` and the like adds two
/// or three levels. Collections, dictionaries and sets are not looked into (a wrapper's bytes,
/// tags or metadata would spend the budget: 2,000 bytes before the base hid the stream and
/// crashed the server, in the fourth adversary round), nor are classes of the standard
/// library, the concurrency runtime, Dispatch, Foundation or SwiftNIO (synchronised storage,
/// such as an `AsyncThrowingStream`'s, whose state reflection would read without its lock;
/// the once-iterable sequence wraps those, so it is found before them). A wrapper that hides its base in a closure (a type-erasing sequence built
/// from a `makeIterator` closure), or an interceptor that pumps the messages into a stream of
/// its own (an `AsyncThrowingStream`), leaves no such object to find; its publishers keep only
/// their own claims, as before — and such a stream read through two publishers traps in
/// grpc-swift or in its own type (an `AsyncThrowingStream` does on a second concurrent
/// `next()`). Entries hold the object
/// weakly, so a claim ends with its stream: an address reused by a later stream is not taken
/// for the old one.
@usableFromInline
enum RequestStreamClaims {
  struct Entry: @unchecked Sendable {
    // Safety: the object is only compared by identity (under the table's lock), never used.
    weak var stream: AnyObject?
  }

  struct Table {
    var entries: [ObjectIdentifier: Entry] = [:]
    /// The size at which entries whose streams are gone are dropped (amortised: twice the
    /// live entries after each sweep).
    var sweepAt = 64
  }

  static let table = Mutex(Table())

  /// The name of grpc-swift's once-iterable sequence type.
  static let onceIterableTypeName = "UncheckedAsyncIteratorSequence"

  /// `true` if no other publisher claimed the stream that `messages` reads (or it has no
  /// identity to claim it by); then it is this caller's.
  @usableFromInline
  static func take(_ messages: Any) -> Bool {
    guard let stream = onceIterableStream(in: messages, depth: 0) else { return true }
    let identity = ObjectIdentifier(stream)
    let claim = Entry(stream: stream)
    return table.withLock { table in
      if let entry = table.entries[identity], let claimed = entry.stream,
        claimed === claim.stream
      {
        return false
      }
      if table.entries.count >= table.sweepAt {
        table.entries = table.entries.filter { $0.value.stream != nil }
        table.sweepAt = max(64, 2 * table.entries.count)
      }
      table.entries[identity] = claim
      return true
    }
  }

  /// The once-iterable object inside `value`'s wrappers, if any.
  static func onceIterableStream(in value: Any, depth: Int) -> AnyObject? {
    var search = Search()
    return search.find(in: value, depth: depth)
  }

  /// One search: its budget of values looked at, and the objects already looked into (a
  /// wrapper class that refers back to itself is looked into once).
  struct Search {
    var budget = 1_024
    var seen: Set<ObjectIdentifier> = []

    mutating func find(in value: Any, depth: Int) -> AnyObject? {
      guard depth < 64, budget > 0 else { return nil }
      budget -= 1
      let mirror = Mirror(reflecting: value)
      switch mirror.displayStyle {
      case .collection, .dictionary, .set:
        return nil
      case .class:
        let object = value as AnyObject
        if String(describing: type(of: value)).hasPrefix(onceIterableTypeName) { return object }
        guard !isRuntimeStorage(type(of: value)),
          seen.insert(ObjectIdentifier(object)).inserted
        else { return nil }
      default:
        break
      }
      var level: Mirror? = mirror
      while let current = level {
        // A wrapper class's runtime or SwiftNIO superclass (a `ManagedBuffer` subclass, say):
        // its stored state is the synchronised kind, not looked into.
        if current.displayStyle == .class, isRuntimeStorage(current.subjectType) { break }
        for child in current.children {
          if let stream = find(in: child.value, depth: depth + 1) { return stream }
        }
        level = current.superclassMirror
      }
      return nil
    }

    /// Modules whose classes are not looked into (see ``RequestStreamClaims``).
    static let opaqueModules = [
      "Swift.", "_Concurrency.", "Synchronization.", "Dispatch.", "Foundation.",
      "FoundationEssentials.", "NIOCore.", "NIOPosix.", "NIOConcurrencyHelpers.",
      "NIOHTTP2.",
    ]

    func isRuntimeStorage(_ type: Any.Type) -> Bool {
      let name = String(reflecting: type)
      return Self.opaqueModules.contains { name.hasPrefix($0) }
    }
  }
}
