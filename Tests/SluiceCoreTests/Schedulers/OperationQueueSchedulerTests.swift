import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

/// `OperationQueue` as a scheduler: what the queue itself sees (issue 40). As in Combine, a
/// delayed or repeating action is an operation on the queue from the moment it is scheduled, and
/// an immediate one a `BlockOperation`. (Blocking waits: the tests run on threads of their own.)
@Suite("OperationQueue scheduler", .onThreadsOfTheirOwn)
struct OperationQueueSchedulerTests {
  /// Records the operations added to it.
  final class RecordingQueue: OperationQueue, @unchecked Sendable {
    // Safety: `added` is guarded by `lock`.
    private let lock = NSLock()
    private var added: [Operation] = []
    private var blocks = 0

    var operationsAdded: [Operation] { lock.withLock { added } }
    var blocksAdded: Int { lock.withLock { blocks } }

    override func addOperation(_ operation: Operation) {
      lock.withLock { added.append(operation) }
      super.addOperation(operation)
    }

    override func addOperation(_ block: @escaping @Sendable () -> Void) {
      lock.withLock { blocks += 1 }
      super.addOperation(block)
    }
  }

  @Test func anImmediateActionIsABlockOperation() throws {
    let queue = RecordingQueue()
    let ran = Box<Int>(0)
    queue.schedule { ran.update { $0! += 1 } }
    queue.waitUntilAllOperationsAreFinished()
    #expect(ran.value == 1)
    #expect(queue.blocksAdded == 0)
    let operation = try #require(queue.operationsAdded.first)
    #expect(operation is BlockOperation)
  }

  @Test func aDelayedActionIsAnOperationOnTheQueueAtOnce() throws {
    let queue = RecordingQueue()
    let ran = Box<Int>(0)
    queue.schedule(after: queue.now.advanced(by: .milliseconds(300))) { ran.update { $0! += 1 } }
    #expect(queue.operationsAdded.count == 1)
    #expect(queue.operationCount == 1, "counted before its date")
    let operation = try #require(queue.operationsAdded.first)
    #expect(!(operation is BlockOperation))
    #expect(operation is any Cancellable)
    #expect(!operation.isReady)
    #expect(!operation.isFinished)
    #expect(ran.value == 0)
    queue.waitUntilAllOperationsAreFinished()  // waits for the date
    #expect(ran.value == 1)
    #expect(operation.isFinished)
    operation.main()  // runs its action once only
    #expect(ran.value == 1)
  }

  @Test func cancelAllOperationsCancelsADelayedAction() {
    let queue = OperationQueue()
    let ran = Box<Bool>(false)
    queue.schedule(after: queue.now.advanced(by: .seconds(600))) { ran.set(true) }
    #expect(queue.operationCount == 1)
    queue.cancelAllOperations()
    // Cancelled, it is ready at once and leaves the queue without waiting for its date.
    let left = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      queue.waitUntilAllOperationsAreFinished()
      left.signal()
    }
    #expect(left.wait(timeout: .now() + 600) == .success)
    #expect(queue.operationCount == 0)
    #expect(ran.value == false)
  }

  @Test func aRepeatingActionKeepsOneOperationOnTheQueue() throws {
    let queue = RecordingQueue()
    queue.maxConcurrentOperationCount = 1
    let ticks = DispatchSemaphore(value: 0)
    let count = Box<Int>(0)
    let cancellable = queue.schedule(
      after: queue.now.advanced(by: .milliseconds(20)), interval: .milliseconds(20)
    ) {
      count.update { $0! += 1 }
      ticks.signal()
    }
    #expect(queue.operationsAdded.count == 1, "added at once")
    #expect(queue.operationCount == 1)
    let first = try #require(queue.operationsAdded.first)
    #expect(!first.isReady)
    for _ in 0..<3 { #expect(ticks.wait(timeout: .now() + 600) == .success) }
    #expect(queue.operationsAdded.count >= 3, "each tick adds the next operation")
    cancellable.cancel()
    queue.waitUntilAllOperationsAreFinished()  // returns: nothing is added after the cancel
    let ticked = count.value ?? 0
    #expect(ticked >= 3)
    // One operation per tick, and the one waiting when cancelled (unless the cancel came while
    // a tick ran, before it added its successor).
    #expect(queue.operationsAdded.count == ticked || queue.operationsAdded.count == ticked + 1)
    if queue.operationsAdded.count == ticked + 1 {
      #expect(queue.operationsAdded.last?.isCancelled == true)
    }
    first.main()
    #expect(count.value == ticked)
  }
}
