/// Actions waiting for an instant: the queue shared by Sluice's schedulers that keep their own
/// timeline (`TestScheduler`, `ClockScheduler`).
///
/// Order: by time, and among actions due at the same instant by scheduling order (FIFO). A
/// binary min-heap on (time, sequence): adding and taking the next action are O(log n).
/// A repeating action keeps its token when it is rescheduled, so cancelling the token stops it
/// even while it is running. A pure value: the owning scheduler holds it under its lock and runs
/// (and releases) the actions after unlocking.
package struct ScheduledActions<Time: Comparable, Interval> {
  package struct Item {
    /// Order among items at the same instant.
    let sequence: Int
    /// Identity for cancellation.
    package let token: Int
    package let date: Time
    package let interval: Interval?
    package let action: () -> Void

    func precedes(_ other: Item) -> Bool {
      date < other.date || (date == other.date && sequence < other.sequence)
    }
  }

  private var nextSequence = 0
  private var heap: [Item] = []
  /// Tokens cancelled while their (repeating) action was running, so not in the heap.
  private var cancelledWhileRunning: Set<Int> = []

  package init() {}

  package var count: Int { heap.count }

  /// The earliest instant an action is due at.
  package var earliestDate: Time? { heap.first?.date }

  /// Adds an action due at `date` (repeating every `interval`, if given); returns its token.
  @discardableResult
  package mutating func add(
    at date: Time, repeatingEvery interval: Interval? = nil, _ action: @escaping () -> Void
  ) -> Int {
    add(at: date, interval: interval, token: nil, action)
  }

  private mutating func add(
    at date: Time, interval: Interval?, token: Int?, _ action: @escaping () -> Void
  ) -> Int {
    let sequence = nextSequence
    nextSequence += 1
    let token = token ?? sequence
    heap.append(
      Item(sequence: sequence, token: token, date: date, interval: interval, action: action))
    siftUp(from: heap.count - 1)
    return token
  }

  /// Removes and returns the first action due at or before `deadline`.
  package mutating func takeNext(dueBy deadline: Time) -> Item? {
    guard let first = heap.first, first.date <= deadline else { return nil }
    heap.swapAt(0, heap.count - 1)
    heap.removeLast()
    siftDown(from: 0)
    return first
  }

  /// Puts a repeating action back at `date`, unless its token was cancelled while it ran.
  package mutating func reschedule(_ item: Item, at date: Time) {
    if cancelledWhileRunning.remove(item.token) != nil { return }
    _ = add(at: date, interval: item.interval, token: item.token, item.action)
  }

  /// Cancels `token`; returns the removed actions so the caller releases them after unlocking.
  package mutating func cancel(token: Int) -> [Item] {
    let removed = heap.filter { $0.token == token }
    guard !removed.isEmpty else {
      cancelledWhileRunning.insert(token)
      return []
    }
    heap.removeAll { $0.token == token }
    for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    return removed
  }

  private mutating func siftUp(from start: Int) {
    var child = start
    while child > 0 {
      let parent = (child - 1) / 2
      guard heap[child].precedes(heap[parent]) else { return }
      heap.swapAt(child, parent)
      child = parent
    }
  }

  private mutating func siftDown(from start: Int) {
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
