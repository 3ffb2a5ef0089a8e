/// An array of optional object references with copy-on-write value semantics, like
/// `ContiguousArray<Element?>`, whose storage a reader can reach by its address and read
/// without retaining it or its elements (``forEach(inStorageAt:_:)``).
///
/// `ContiguousArray` offers no such access: reading it from shared memory (a class's stored
/// property) retains its buffer for as long as the reader's closure runs, and loading an
/// element to call it retains the element. ``SharedSubscriberList`` needs neither: it
/// guarantees by its own protocol that the storage it reads stays alive and unchanged.
@usableFromInline
struct SlotArray<Element: AnyObject> {
  /// The slots; `nil` while the array has never held one (no allocation).
  @usableFromInline var storage: SlotStorage<Element>?

  @inlinable init() {}

  @inlinable var count: Int {
    // Through the pointer: `ManagedBuffer.header` is a class property, checked for exclusive
    // access at run time.
    storage?.withUnsafeMutablePointerToHeader { $0.pointee.count } ?? 0
  }

  @inlinable var isEmpty: Bool { count == 0 }

  @inlinable subscript(slot: Int) -> Element? {
    precondition(slot >= 0 && slot < count, "SlotArray index out of range")
    return storage.unsafelyUnwrapped.withUnsafeMutablePointerToElements { $0[slot] }
  }

  /// The storage's address (what ``forEach(inStorageAt:_:)`` reads), 0 while empty and never
  /// allocated. Unchanged while the array is not mutated.
  @inlinable var storageAddress: UInt {
    guard let storage else { return 0 }
    return UInt(bitPattern: Unmanaged.passUnretained(storage).toOpaque())
  }

  /// Makes the storage this array's own, with room for `minimumCapacity` slots.
  @inlinable mutating func makeUnique(minimumCapacity: Int) {
    let unique = isKnownUniquelyReferenced(&storage)
    let capacity = storage?.withUnsafeMutablePointerToHeader { $0.pointee.capacity } ?? 0
    if unique, capacity >= minimumCapacity { return }
    let fresh = SlotStorage<Element>.make(
      capacity: minimumCapacity > capacity ? Swift.max(minimumCapacity, 2 * capacity, 4) : capacity)
    if let old = storage.take() {
      fresh.withUnsafeMutablePointers { header, elements in
        old.withUnsafeMutablePointers { oldHeader, oldElements in
          header.pointee.count = oldHeader.pointee.count
          if unique {
            // Moved, not copied: the old storage's deinit must not release them.
            elements.moveInitialize(from: oldElements, count: oldHeader.pointee.count)
            oldHeader.pointee.count = 0
          } else {
            elements.initialize(from: oldElements, count: oldHeader.pointee.count)
          }
        }
      }
    }
    storage = fresh
  }

  @inlinable mutating func append(_ element: Element?) {
    makeUnique(minimumCapacity: count + 1)
    storage.unsafelyUnwrapped.withUnsafeMutablePointers { header, elements in
      (elements + header.pointee.count).initialize(to: element)
      header.pointee.count += 1
    }
  }

  @inlinable @discardableResult mutating func removeLast() -> Element? {
    precondition(!isEmpty, "removeLast() on an empty SlotArray")
    makeUnique(minimumCapacity: 0)
    return storage.unsafelyUnwrapped.withUnsafeMutablePointers { header, elements in
      header.pointee.count -= 1
      return (elements + header.pointee.count).move()
    }
  }

  /// Empties `slot` and returns what it held.
  @inlinable mutating func take(at slot: Int) -> Element? {
    precondition(slot >= 0 && slot < count, "SlotArray index out of range")
    makeUnique(minimumCapacity: 0)
    return storage.unsafelyUnwrapped.withUnsafeMutablePointerToElements { $0[slot].take() }
  }

  @inlinable func firstIndex(where matches: (Element?) -> Bool) -> Int? {
    for slot in 0..<count where matches(self[slot]) { return slot }
    return nil
  }

  /// Calls `body` with each non-empty slot of the storage at `address` (from
  /// ``storageAddress``), in order, without retaining the storage or the elements. The caller
  /// guarantees that the storage stays alive and unchanged meanwhile (it holds a copy of an
  /// array using it, or a protocol like ``SharedSubscriberList``'s ensures it).
  @inlinable @inline(__always)
  static func forEach(inStorageAt address: UInt, _ body: (Element) -> Void) {
    guard address != 0 else { return }
    Unmanaged<SlotStorage<Element>>.fromOpaque(
      UnsafeRawPointer(bitPattern: address).unsafelyUnwrapped
    )._withUnsafeGuaranteedRef { storage in
      storage.withUnsafeMutablePointers { header, elements in
        // The slots' references as bits (`Element?` of an object type is one word, `nil` all
        // zeros): loading them as references would retain each one around `body`, which may
        // call anything.
        let slots = UnsafeRawPointer(elements)
        for slot in 0..<header.pointee.count {
          let bits = slots.load(fromByteOffset: slot &* MemoryLayout<UInt>.stride, as: UInt.self)
          guard bits != 0 else { continue }  // an empty slot
          Unmanaged<Element>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped)
            ._withUnsafeGuaranteedRef(body)
        }
      }
    }
  }

  /// Calls `body` with each non-empty slot in order, without retaining them.
  @inlinable func forEach(_ body: (Element) -> Void) {
    withExtendedLifetime(storage) { Self.forEach(inStorageAt: storageAddress, body) }
  }
}

/// ``SlotStorage``'s header. Not nested in the generic class, so that the storage's
/// (unspecialized) `deinit` finds its metadata without a lookup.
@usableFromInline
struct SlotStorageHeader {
  @usableFromInline var count: Int
  @usableFromInline var capacity: Int

  @inlinable init(count: Int, capacity: Int) {
    self.count = count
    self.capacity = capacity
  }
}

/// ``SlotArray``'s storage: a header and the slots, in one allocation.
@usableFromInline
final class SlotStorage<Element: AnyObject>: ManagedBuffer<SlotStorageHeader, Element?> {
  @inlinable static func make(capacity: Int) -> SlotStorage {
    let buffer = create(minimumCapacity: capacity) { _ in
      SlotStorageHeader(count: 0, capacity: 0)
    }
    let storage = unsafeDowncast(buffer, to: SlotStorage.self)
    let capacity = storage.capacity
    storage.withUnsafeMutablePointerToHeader { $0.pointee.capacity = capacity }
    return storage
  }

  deinit {
    _ = withUnsafeMutablePointers { header, elements in
      elements.deinitialize(count: header.pointee.count)
    }
  }
}
