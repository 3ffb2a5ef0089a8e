/// A first-in, first-out buffer with amortised O(1) append, removal at the front and removal of
/// the oldest element (its capacity is a power of two, so positions wrap with a mask, not a
/// division): the storage behind the async bridges' buffering policies and the
/// scheduler hand-offs of `receive(on:)` and `subscribe(on:)`.
@usableFromInline
package struct RingBuffer<Element> {
  @usableFromInline var storage: ContiguousArray<Element?> = []
  @usableFromInline var head = 0
  @usableFromInline package var count = 0

  @inlinable package init() {}

  @inlinable package var isEmpty: Bool { count == 0 }

  @inlinable package mutating func append(_ element: Element) {
    if count == storage.count { grow() }
    storage[(head &+ count) & (storage.count &- 1)] = element
    count += 1
  }

  @inlinable package mutating func popFirst() -> Element? {
    guard count > 0 else { return nil }
    let element = storage[head]
    storage[head] = nil
    head = (head &+ 1) & (storage.count &- 1)
    count -= 1
    return element
  }

  /// The oldest element, left in place.
  @inlinable package var first: Element? { count > 0 ? storage[head] : nil }

  /// The newest element, left in place.
  @inlinable package var last: Element? {
    count > 0 ? storage[(head &+ count &- 1) & (storage.count &- 1)] : nil
  }

  /// Removes the elements that match, keeping the others in order; returns the removed ones.
  @inlinable package mutating func remove(where matches: (Element) -> Bool) -> [Element] {
    var kept = RingBuffer()
    var removed: [Element] = []
    while let element = popFirst() {
      if matches(element) { removed.append(element) } else { kept.append(element) }
    }
    self = kept
    return removed
  }

  @inlinable package mutating func removeAll() {
    storage = []
    head = 0
    count = 0
  }

  @inlinable mutating func grow() {
    var grown = ContiguousArray<Element?>(repeating: nil, count: Swift.max(8, storage.count * 2))
    let mask = storage.count &- 1
    for index in 0..<count { grown[index] = storage[(head &+ index) & mask] }
    storage = grown
    head = 0
  }
}
