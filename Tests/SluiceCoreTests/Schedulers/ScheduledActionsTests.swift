import SluiceCore
import Testing

@Suite("ScheduledActions (the schedulers' queue)")
struct ScheduledActionsTests {
  @Test("time order, FIFO at equal instants, over thousands of shuffled actions")
  func order() {
    var queue = ScheduledActions<Int, Int>()
    var expected: [(Int, Int)] = []
    var generator = SystemRandomNumberGenerator()
    for sequence in 0..<5_000 {
      let date = Int.random(in: 0..<50, using: &generator)
      queue.add(at: date) {}
      expected.append((date, sequence))
    }
    expected.sort { $0.0 < $1.0 || ($0.0 == $1.0 && $0.1 < $1.1) }
    var taken: [(Int, Int)] = []
    while let item = queue.takeNext(dueBy: .max) { taken.append((item.date, item.token)) }
    #expect(taken.map(\.0) == expected.map(\.0))
    #expect(taken.map(\.1) == expected.map(\.1), "FIFO among equal instants")
  }

  @Test func takesOnlyWhatIsDue() {
    var queue = ScheduledActions<Int, Int>()
    queue.add(at: 5) {}
    queue.add(at: 1) {}
    #expect(queue.earliestDate == 1)
    #expect(queue.takeNext(dueBy: 0) == nil)
    #expect(queue.takeNext(dueBy: 3)?.date == 1)
    #expect(queue.takeNext(dueBy: 3) == nil)
    #expect(queue.count == 1)
  }

  @Test func cancellingAWaitingRepeatingAction() {
    var queue = ScheduledActions<Int, Int>()
    let token = queue.add(at: 1, repeatingEvery: 1) {}
    queue.add(at: 2) {}
    #expect(queue.cancel(token: token).count == 1)
    #expect(queue.count == 1)
    #expect(queue.takeNext(dueBy: 10)?.date == 2)
  }

  @Test func cancellingARunningRepeatingActionStopsItsReschedule() {
    var queue = ScheduledActions<Int, Int>()
    let token = queue.add(at: 1, repeatingEvery: 1) {}
    let running = queue.takeNext(dueBy: 1)!
    #expect(queue.cancel(token: token).isEmpty)
    queue.reschedule(running, at: 2)
    #expect(queue.count == 0)
    // A later repeating action with another token is unaffected.
    let other = queue.add(at: 3, repeatingEvery: 1) {}
    let next = queue.takeNext(dueBy: 3)!
    queue.reschedule(next, at: 4)
    #expect(next.token == other && queue.count == 1)
  }
}
