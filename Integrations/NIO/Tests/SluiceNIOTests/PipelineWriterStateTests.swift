import NIOCore
import Sluice
import Testing

@testable import SluiceNIO

/// The server's write-side state machine, fed events directly.
@Suite("PipelineWriterState")
struct PipelineWriterStateTests {
  /// A subscription that records nothing: the machine only hands it back.
  final class StubSubscription: Subscription {
    func request(_ demand: Subscribers.Demand) {}
    func cancel() {}
  }

  func frames(_ bytes: Int) -> ByteBuffer {
    ByteBuffer(repeating: 1, count: bytes)
  }

  /// A machine subscribed, its first request call returned with nothing produced.
  func streaming(batch: Int = 100) -> (PipelineWriterState, StubSubscription) {
    var machine = PipelineWriterState(batchBytes: batch)
    let subscription = StubSubscription()
    guard case .request = machine.subscribed(subscription) else {
      Issue.record("expected a request")
      return (machine, subscription)
    }
    var none = ByteBuffer()
    _ = machine.requestReturned(&none, yielded: false)
    return (machine, subscription)
  }

  @Test func aSecondSubscriptionIsCancelled() {
    var (machine, _) = streaming()
    guard case .cancel = machine.subscribed(StubSubscription()) else {
      Issue.record("a second subscription must be cancelled")
      return
    }
  }

  @Test func framesFromInsideARequestCallWaitForItToReturnThenOneWriteTakesThemAll() {
    var (machine, subscription) = streaming()
    let result1 = machine.requestStarting()
    #expect(same(result1, subscription))
    var part = frames(10)
    let result2 = machine.received(&part)
    #expect(result2 == (true, false), "no flush inside the call")
    #expect(part.readableBytes == 0, "taken")
    var rest = frames(20)
    let (flush, resume) = machine.requestReturned(&rest, yielded: false)
    #expect(flush && !resume)
    let write = machine.flushDue()
    #expect(write?.frames.readableBytes == 30)
    #expect(write?.halfClose == false && write?.resume == false)
    let result3 = machine.flushDue()
    #expect(result3 == nil, "nothing left")
  }

  @Test func theTickWritesWhatARunningCallEncodedAndFramesHeldSayWhenItIsNeeded() {
    var (machine, _) = streaming()
    #expect(!machine.framesHeld, "nothing waits")
    _ = machine.requestStarting()
    var early = frames(10)
    _ = machine.received(&early)  // handed over inside the call: no flush
    #expect(machine.framesHeld, "pending while a call runs: the tick is needed")
    var encoded = frames(7)  // encoded by the call's thread, not yet handed over
    let write = machine.tick(&encoded)
    #expect(encoded.readableBytes == 0, "taken")
    #expect(write?.frames.readableBytes == 17, "everything waiting, in one write")
    #expect(!machine.framesHeld, "nothing left")
    var more = frames(3)
    _ = machine.received(&more)
    var none = ByteBuffer()
    let behind = machine.tick(&none)
    #expect(behind == nil, "a write is in flight")
    #expect(!machine.framesHeld, "behind a write in flight: its completion decides, no tick")
    let next = machine.writeCompleted()
    #expect(next == nil, "under a batch, while the call runs")
    #expect(machine.framesHeld, "still waiting: tick again")
    _ = machine.requestReturned(&none, yielded: false)
    #expect(!machine.framesHeld, "no call runs: the flush rules take it")
  }

  @Test func theEndWhileACallRunsWaitsForTheTickNotForTheCall() {
    var (machine, _) = streaming()
    _ = machine.requestStarting()
    var end = frames(4)
    let flush = machine.completed(&end)
    #expect(!flush, "no flush while the call runs")
    #expect(machine.framesHeld, "the end frame waits for the tick")
    var none = ByteBuffer()
    let write = machine.tick(&none)
    #expect(write?.frames.readableBytes == 4 && write?.halfClose == true)
    #expect(!machine.framesHeld)
  }

  @Test func aTickAfterTheEndDropsWhatTheCallEncodedAfterIt() {
    var (machine, subscription) = streaming()
    _ = machine.requestStarting()
    var failure = frames(4)
    let (cancel, _) = machine.failed(&failure)
    #expect(same(cancel, subscription))
    var after = frames(5)  // a source that went on inside its call after the cancel
    let write = machine.tick(&after)
    #expect(after.readableBytes == 0, "dropped")
    #expect(write?.frames.readableBytes == 4, "the failure frame only")
    #expect(write?.halfClose == true)
    _ = machine.closed()
    var late = frames(5)
    #expect(machine.tick(&late) == nil)
    #expect(late.readableBytes == 0, "dropped")
  }

  @Test func aFullBatchIsFlushedAtOnceAndTwoBehindABusySocketStall() {
    var (machine, subscription) = streaming(batch: 100)
    _ = machine.requestStarting()
    var batch = frames(100)
    let first = machine.received(&batch)
    #expect(first == (true, true), "a full batch, the socket idle: flush now, go on")
    batch = frames(100)
    let second = machine.received(&batch)
    #expect(second == (false, false), "two batches behind the scheduled flush: stall")
    #expect(machine.stalled)
    var none = ByteBuffer()
    let returned = machine.requestReturned(&none, yielded: false)
    #expect(returned == (false, false))
    // The flush takes both batches and lifts the stall.
    let write = machine.flushDue()
    #expect(write?.frames.readableBytes == 200)
    #expect(write?.resume == true)
    let resumed = machine.requestStarting()
    #expect(same(resumed, subscription))
    // One write in flight: the next frames wait for its completion.
    var more = frames(10)
    _ = machine.received(&more)
    _ = machine.requestReturned(&none, yielded: false)
    let flushed = machine.flushDue()
    #expect(flushed == nil)
    let next = machine.writeCompleted()
    #expect(next?.frames.readableBytes == 10)
  }

  @Test func aWriteCompletingDuringARequestCallLeavesLessThanABatchForTheCall() {
    var (machine, _) = streaming(batch: 100)
    _ = machine.requestStarting()
    var batch = frames(100)
    let first = machine.received(&batch)
    #expect(first == (true, true))
    let write = machine.flushDue()
    #expect(write?.frames.readableBytes == 100)
    // Frames handed over inside the call (its demand ran out), under a batch.
    var part = frames(30)
    let second = machine.received(&part)
    #expect(second == (true, false))
    let completed = machine.writeCompleted()
    #expect(completed == nil, "under a batch while the call runs: it waits for the call")
    #expect(machine.pending.readableBytes == 30)
    // The call fills the batch: flushed at once, the socket being idle.
    var rest = frames(70)
    let full = machine.received(&rest)
    #expect(full == (true, true))
    let next = machine.flushDue()
    #expect(next?.frames.readableBytes == 100)
    // A write completing with a full batch waiting takes it, call or not.
    var more = frames(100)
    _ = machine.received(&more)
    let taken = machine.writeCompleted()
    #expect(taken?.frames.readableBytes == 100)
    // Once the call returns, what waits is flushed.
    var tail = frames(10)
    _ = machine.received(&tail)
    _ = machine.writeCompleted()
    var none = ByteBuffer()
    let returned = machine.requestReturned(&none, yielded: false)
    #expect(returned == (true, false))
    let last = machine.flushDue()
    #expect(last?.frames.readableBytes == 10)
  }

  @Test func aValueOutsideARequestCallIsWrittenAtOnceUnlessAWriteIsInFlight() {
    var (machine, _) = streaming()
    var frame = frames(5)
    let result11 = machine.received(&frame)
    #expect(result11 == (true, true))
    let result12 = machine.flushDue()
    #expect(result12?.frames.readableBytes == 5)
    frame = frames(5)
    let result13 = machine.received(&frame)
    #expect(result13 == (true, false), "a write is in flight")
    let result14 = machine.writeCompleted()
    #expect(result14?.frames.readableBytes == 5)
  }

  @Test func theCompletionGoesOutWithTheFramesBeforeItThenTheConnectionHalfCloses() {
    var (machine, _) = streaming()
    var frame = frames(5)
    _ = machine.received(&frame)
    var last = frames(3)
    let result15 = machine.completed(&last)
    #expect(result15 == false, "a flush is already scheduled")
    let write = machine.flushDue()
    #expect(write?.frames.readableBytes == 8)
    #expect(write?.halfClose == true)
    var late = frames(4)
    let result16 = machine.received(&late)
    #expect(result16 == (false, false), "nothing after the completion")
    let result17 = machine.writeCompleted()
    #expect(result17 == nil)
  }

  @Test func aYieldedCallIsResumedUnlessStalled() {
    var (machine, _) = streaming()
    _ = machine.requestStarting()
    var frame = frames(5)
    let result18 = machine.requestReturned(&frame, yielded: true)
    #expect(result18 == (true, true))
  }

  @Test func closingCancelsTheSubscriptionOnceAndIgnoresWhatFollows() {
    var (machine, subscription) = streaming()
    let result19 = machine.closed()
    #expect(same(result19, subscription))
    let result20 = machine.closed()
    #expect(result20 == nil)
    var frame = frames(5)
    let result21 = machine.received(&frame)
    #expect(result21 == (false, false))
    let result22 = machine.requestStarting()
    #expect(result22 == nil)
    let result23 = machine.heartbeatDue()
    #expect(result23 == false)
    guard case .cancel = machine.subscribed(StubSubscription()) else {
      Issue.record("a subscription after the close must be cancelled")
      return
    }
  }

  @Test func aHeartbeatOnlyWhenNothingWaitsAndNoWriteIsInFlight() {
    var (machine, _) = streaming()
    let result24 = machine.heartbeatDue()
    #expect(result24)
    let result25 = machine.heartbeatDue()
    #expect(!result25, "the heartbeat is the write in flight")
    let result26 = machine.writeCompleted()
    #expect(result26 == nil)
    var frame = frames(5)
    _ = machine.received(&frame)
    let result27 = machine.heartbeatDue()
    #expect(!result27, "frames wait")
  }

  @Test func aValueThatCannotBeSentCancelsAndEndsTheStream() {
    var (machine, subscription) = streaming()
    var failure = frames(7)
    let (cancel, flush) = machine.failed(&failure)
    #expect(same(cancel, subscription))
    #expect(flush)
    let result28 = machine.flushDue()
    #expect(result28?.halfClose == true)
  }
}

/// Whether `subscription` is `object`.
func same(_ subscription: (any Subscription)?, _ object: AnyObject) -> Bool {
  (subscription as AnyObject?) === object
}

extension PipelineWriterState.Write: Equatable {
  static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.frames == rhs.frames && lhs.halfClose == rhs.halfClose && lhs.resume == rhs.resume
  }
}
