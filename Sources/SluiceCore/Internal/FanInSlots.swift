/// What one upstream of `zip` or `combineLatest` has sent and the operator has not combined yet.
///
/// `zip` keeps every value in order (``QueueSlot``: a combination takes the oldest of each);
/// `combineLatest` keeps only the newest (``LatestSlot``: a combination reads it and keeps it).
@usableFromInline
protocol FanInSlot {
  associatedtype Value
  init()
  /// Whether a combination can take a value from this slot.
  var hasValue: Bool { get }
  /// Stores `value`; returns the value it replaces, which the caller releases after unlocking
  /// (its `deinit` may call back into the operator's upstreams).
  mutating func put(_ value: Value) -> Value?
  /// The value for the next combination; only when ``hasValue``.
  mutating func take() -> Value
  mutating func removeAll()
  /// What the slot holds, for a mirror.
  var contents: Any { get }
}

/// `zip`'s slot: the values not paired yet, oldest first.
@usableFromInline
struct QueueSlot<Value>: FanInSlot {
  @inlinable
  init() {}

  @usableFromInline
  var values = RingBuffer<Value>()
  @inlinable
  var hasValue: Bool { !values.isEmpty }
  @inlinable
  mutating func put(_ value: Value) -> Value? {
    values.append(value)
    return nil
  }
  @inlinable
  mutating func take() -> Value {
    guard let value = values.popFirst() else {
      Violation.internalInconsistency("zip took a value from an empty slot")
    }
    return value
  }
  @inlinable
  mutating func removeAll() { values.removeAll() }
  @inlinable
  var contents: Any {
    var copy = values
    var all: [Value] = []
    while let value = copy.popFirst() { all.append(value) }
    return all
  }
}

/// `combineLatest`'s slot: the newest value, kept after it is combined.
@usableFromInline
struct LatestSlot<Value>: FanInSlot {
  @inlinable
  init() {}

  @usableFromInline
  var value: Value?
  @inlinable
  var hasValue: Bool { value != nil }
  @inlinable
  mutating func put(_ value: Value) -> Value? {
    defer { self.value = value }
    return self.value.take()
  }
  @inlinable
  mutating func take() -> Value {
    guard let value else {
      Violation.internalInconsistency("combineLatest combined an upstream with no value")
    }
    return value
  }
  @inlinable
  mutating func removeAll() { value = nil }
  @inlinable
  var contents: Any { value as Any }
}

/// The slots of every upstream of a `zip` or `combineLatest`, one stored property per upstream
/// so that values are never boxed.
@usableFromInline
protocol FanInSlots {
  associatedtype Output
  init()
  /// How many upstreams.
  static var arity: Int { get }
  /// Whether every slot has a value (a combination can be taken).
  var isComplete: Bool { get }
  func hasValue(at index: Int) -> Bool
  mutating func take() -> Output
  mutating func removeAll()
  var contents: [Any] { get }
}

@usableFromInline
struct Slots2<S0: FanInSlot, S1: FanInSlot>: FanInSlots {
  @usableFromInline
  typealias Output = (S0.Value, S1.Value)

  @inlinable
  init() {}
  @usableFromInline
  var s0 = S0()
  @usableFromInline
  var s1 = S1()
  @inlinable
  static var arity: Int { 2 }
  @inlinable
  var isComplete: Bool { s0.hasValue && s1.hasValue }
  @inlinable
  func hasValue(at index: Int) -> Bool { index == 0 ? s0.hasValue : s1.hasValue }
  @inlinable
  mutating func take() -> Output { (s0.take(), s1.take()) }
  @inlinable
  mutating func removeAll() {
    s0.removeAll()
    s1.removeAll()
  }
  @inlinable
  var contents: [Any] { [s0.contents, s1.contents] }
}

@usableFromInline
struct Slots3<S0: FanInSlot, S1: FanInSlot, S2: FanInSlot>: FanInSlots {
  @usableFromInline
  typealias Output = (S0.Value, S1.Value, S2.Value)

  @inlinable
  init() {}
  @usableFromInline
  var s0 = S0()
  @usableFromInline
  var s1 = S1()
  @usableFromInline
  var s2 = S2()
  @inlinable
  static var arity: Int { 3 }
  @inlinable
  var isComplete: Bool { s0.hasValue && s1.hasValue && s2.hasValue }
  @inlinable
  func hasValue(at index: Int) -> Bool {
    switch index {
    case 0: s0.hasValue
    case 1: s1.hasValue
    default: s2.hasValue
    }
  }
  @inlinable
  mutating func take() -> Output { (s0.take(), s1.take(), s2.take()) }
  @inlinable
  mutating func removeAll() {
    s0.removeAll()
    s1.removeAll()
    s2.removeAll()
  }
  @inlinable
  var contents: [Any] { [s0.contents, s1.contents, s2.contents] }
}

@usableFromInline
struct Slots4<S0: FanInSlot, S1: FanInSlot, S2: FanInSlot, S3: FanInSlot>: FanInSlots {
  @usableFromInline
  typealias Output = (S0.Value, S1.Value, S2.Value, S3.Value)

  @inlinable
  init() {}
  @usableFromInline
  var s0 = S0()
  @usableFromInline
  var s1 = S1()
  @usableFromInline
  var s2 = S2()
  @usableFromInline
  var s3 = S3()
  @inlinable
  static var arity: Int { 4 }
  @inlinable
  var isComplete: Bool { s0.hasValue && s1.hasValue && s2.hasValue && s3.hasValue }
  @inlinable
  func hasValue(at index: Int) -> Bool {
    switch index {
    case 0: s0.hasValue
    case 1: s1.hasValue
    case 2: s2.hasValue
    default: s3.hasValue
    }
  }
  @inlinable
  mutating func take() -> Output { (s0.take(), s1.take(), s2.take(), s3.take()) }
  @inlinable
  mutating func removeAll() {
    s0.removeAll()
    s1.removeAll()
    s2.removeAll()
    s3.removeAll()
  }
  @inlinable
  var contents: [Any] { [s0.contents, s1.contents, s2.contents, s3.contents] }
}
