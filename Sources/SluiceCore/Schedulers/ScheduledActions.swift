/// Actions waiting for an instant: the queue shared by Sluice's schedulers that keep their own
/// timeline (`TestScheduler`, `ClockScheduler`).
///
/// Order: by time, and among actions due at the same instant by scheduling order (FIFO). A
/// binary min-heap on (time, sequence), O(log n) per action, beside a FIFO for actions added in
/// time order (most of them: "as soon as possible" on a running clock), O(1) per action.
/// A repeating action keeps its token when it is rescheduled, so cancelling the token stops it
/// even while it is running. A pure value: the owning scheduler holds it under its lock and runs
/// (and releases) the actions after unlocking.
package struct ScheduledActions<Time: Comparable, Interval> {
  package struct Item {
    /// Order among items at the same instant.
    package let sequence: Int
    /// Identity for cancellation.
    package let token: Int
    package let date: Time
    package let interval: Interval?
    package let action: () -> Void

    @inlinable init(
      sequence: Int, token: Int, date: Time, interval: Interval?, action: @escaping () -> Void
    ) {
      self.sequence = sequence
      self.token = token
      self.date = date
      self.interval = interval
      self.action = action
    }

    @inlinable func precedes(_ other: Item) -> Bool {
      date < other.date || (date == other.date && sequence < other.sequence)
    }
  }

  @usableFromInline var nextSequence = 0
  @usableFromInline var heap: [Item] = []
  /// Actions added in order (each at or after the one before: the common case, such as actions
  /// scheduled for "now" from a running clock), kept out of the heap: O(1) to add and take.
  /// Every item here follows every earlier one; `takeNext` takes the earlier of the two heads.
  @usableFromInline var inOrder = RingBuffer<Item>()
  /// Tokens cancelled while their (repeating) action was running, so not in the heap.
  @usableFromInline var cancelledWhileRunning: Set<Int> = []

  @inlinable package init() {}

  @inlinable package var count: Int { heap.count + inOrder.count }

  /// Takes the next sequence number without adding an action: for an owner that queues some
  /// actions elsewhere but orders them with these (at equal dates, by sequence).
  @inlinable package mutating func takeSequence() -> Int {
    defer { nextSequence += 1 }
    return nextSequence
  }

  /// The earliest instant an action is due at.
  @inlinable package var earliestDate: Time? { earliest?.date }

  /// The item `takeNext` would take, left in place.
  @inlinable var earliest: Item? {
    guard let ordered = inOrder.first else { return heap.first }
    guard let heaped = heap.first, heaped.precedes(ordered) else { return ordered }
    return heaped
  }

  /// Adds an action due at `date` (repeating every `interval`, if given); returns its token.
  @_specialize(exported:true,where Time == Duration, Interval == Duration)
  @inlinable @discardableResult
  package mutating func add(
    at date: Time, repeatingEvery interval: Interval? = nil, _ action: @escaping () -> Void
  ) -> Int {
    add(at: date, interval: interval, token: nil, action)
  }

  @inlinable mutating func add(
    at date: Time, interval: Interval?, token: Int?, _ action: @escaping () -> Void
  ) -> Int {
    let sequence = nextSequence
    nextSequence += 1
    let token = token ?? sequence
    let item = Item(
      sequence: sequence, token: token, date: date, interval: interval, action: action)
    if inOrder.last.map({ $0.date <= date }) ?? true {
      inOrder.append(item)  // follows everything added in order so far
    } else {
      heap.append(item)
      siftUp(from: heap.count - 1)
    }
    return token
  }

  /// Removes and returns the first action due at or before `deadline`.
  @_specialize(exported:true,where Time == Duration, Interval == Duration)
  @inlinable package mutating func takeNext(dueBy deadline: Time) -> Item? {
    if let ordered = inOrder.first, heap.first.map({ !$0.precedes(ordered) }) ?? true {
      return ordered.date <= deadline ? inOrder.popFirst() : nil
    }
    guard let first = heap.first, first.date <= deadline else { return nil }
    heap.swapAt(0, heap.count - 1)
    heap.removeLast()
    siftDown(from: 0)
    return first
  }

  /// Puts a repeating action back at `date`, unless its token was cancelled while it ran.
  @_specialize(exported:true,where Time == Duration, Interval == Duration)
  @inlinable package mutating func reschedule(_ item: Item, at date: Time) {
    if cancelledWhileRunning.remove(item.token) != nil { return }
    _ = add(at: date, interval: item.interval, token: item.token, item.action)
  }

  /// Cancels `token`; returns the removed actions so the caller releases them after unlocking.
  @inlinable package mutating func cancel(token: Int) -> [Item] {
    let removed = heap.filter { $0.token == token } + inOrder.remove { $0.token == token }
    guard !removed.isEmpty else {
      cancelledWhileRunning.insert(token)
      return []
    }
    heap.removeAll { $0.token == token }
    for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    return removed
  }

  @_specialize(exported:true,where Time == Duration, Interval == Duration)
  @inlinable mutating func siftUp(from start: Int) {
    var child = start
    while child > 0 {
      let parent = (child - 1) / 2
      guard heap[child].precedes(heap[parent]) else { return }
      heap.swapAt(child, parent)
      child = parent
    }
  }

  @_specialize(exported:true,where Time == Duration, Interval == Duration)
  @inlinable mutating func siftDown(from start: Int) {
    var parent = start
    while true {
      let left = 2 * parent + 1
      let right = left + 1
      var first = parent
      if left < heap.count, heap[left].precedes(heap[first]) { first = left }
      if right < heap.count, heap[right].precedes(heap[first]) { first = right }
      if first == parent { return }
      heap.swapAt(parent, first)
      parent = first
    }
  }
}
