import Sluice
import Testing

@testable import SluiceGRPC

/// The write loop's state machine, event by event (no tasks, no network).
@Suite("WriteBatchState")
struct WriteBatchStateTests {
  typealias State = WriteBatchState<Int, TestFailure>
  struct TestFailure: Error, Equatable {}

  /// A subscription that only counts what it is asked.
  final class CountingSubscription: Subscription, @unchecked Sendable {
    // Safety: used from one test's thread only.
    var requested = 0
    var cancelled = false
    let combineIdentifier = CombineIdentifier()
    func request(_ demand: Subscribers.Demand) { requested += demand.max ?? .max }
    func cancel() { cancelled = true }
  }

  /// Whether `receivedValue` left nothing to do after unlocking (the value was buffered).
  func isBuffered(_ action: State.ValueAction) -> Bool {
    if case .none = action { return true }
    return false
  }

  /// The batch `nextBatch` hands over at once, if any.
  func batch(_ state: inout State) -> [Int]? {
    guard case .take(.values(let values)) = state.nextBatch(nil) else { return nil }
    return values
  }

  @Test func demandIsPrefetchThenWhatEachWriteAccepted() {
    var state = State(prefetch: 4)
    let upstream = CountingSubscription()
    guard case .request(_, let demand) = state.receivedSubscription(upstream) else {
      Issue.record("the subscription is asked for the prefetch")
      return
    }
    #expect(demand == .max(4))
    for value in 0..<3 { #expect(isBuffered(state.receivedValue(value)), "no writer parked") }
    #expect(batch(&state) == [0, 1, 2], "everything that arrived, in order, as one batch")
    #expect(isBuffered(state.receivedValue(3)))
    // 3 being written, 1 buffered, 0 outstanding: accepting the 3 gives back 3.
    let more = state.written(3)
    #expect(more?.1 == .max(3))
    #expect(batch(&state) == [3])
    #expect(state.written(1)?.1 == .max(1), "requested + buffered + being written = prefetch")
    guard case .parked = state.nextBatch(nil) else {
      Issue.record("nothing buffered: the writer parks")
      return
    }
  }

  @Test func noDemandIsGivenBackBeyondThePrefetch() {
    var state = State(prefetch: 2)
    _ = state.receivedSubscription(CountingSubscription())
    _ = state.receivedValue(0)
    #expect(batch(&state) == [0])
    _ = state.receivedValue(1)
    // 2 requested and received: 1 written, 1 buffered, so 1 more.
    #expect(state.written(1)?.1 == .max(1))
    #expect(state.written(0) == nil, "requested 1 + buffered 1 = prefetch")
  }

  @Test func bufferedValuesGoOutBeforeTheCompletion() {
    var state = State(prefetch: 4)
    _ = state.receivedSubscription(CountingSubscription())
    _ = state.receivedValue(0)
    _ = state.receivedValue(1)
    #expect(state.receivedCompletion(.failure(TestFailure())) == nil)
    #expect(batch(&state) == [0, 1])
    #expect(state.written(2) == nil, "a finished publisher is asked for nothing")
    guard case .take(.end(.failure(let failure)?)) = state.nextBatch(nil) else {
      Issue.record("the completion after the values")
      return
    }
    #expect(failure == TestFailure())
    guard case .take(.end(nil)) = state.nextBatch(nil) else {
      Issue.record("terminal afterwards")
      return
    }
  }

  @Test func aValueBeyondTheDemandCancelsThePublisherAndEndsWithOverDemand() {
    var state = State(prefetch: 2)
    let upstream = CountingSubscription()
    _ = state.receivedSubscription(upstream)
    #expect(isBuffered(state.receivedValue(0)))
    #expect(isBuffered(state.receivedValue(1)))
    // A third value: nobody asked for it.
    guard case .violated(let cancelled?, nil) = state.receivedValue(2) else {
      Issue.record("a value beyond the demand is a violation, the upstream to cancel")
      return
    }
    #expect((cancelled as? CountingSubscription) === upstream)
    #expect(isBuffered(state.receivedValue(3)), "ignored afterwards")
    #expect(state.receivedCompletion(.finished) == nil, "ignored afterwards")
    #expect(batch(&state) == [0, 1], "what was asked for is still written")
    #expect(state.written(2) == nil, "nothing more is asked")
    guard case .take(.overDemand) = state.nextBatch(nil) else {
      Issue.record("then the over-demand end")
      return
    }
    guard case .take(.end(nil)) = state.nextBatch(nil) else {
      Issue.record("terminal afterwards")
      return
    }
  }

  @Test func cancelIsTerminalAndIdempotentAndCancelsALateSubscription() {
    var state = State(prefetch: 4)
    let upstream = CountingSubscription()
    _ = state.receivedSubscription(upstream)
    _ = state.receivedValue(0)
    let released = state.cancelled()
    #expect(released.upstream as? CountingSubscription === upstream)
    #expect(released.buffer == [0], "the buffer is released after unlocking")
    let again = state.cancelled()
    #expect(again.upstream == nil && again.buffer.isEmpty, "idempotent")
    #expect(isBuffered(state.receivedValue(1)))
    guard case .take(.end(nil)) = state.nextBatch(nil) else {
      Issue.record("a cancelled loop gets the end")
      return
    }
    guard case .cancel = state.receivedSubscription(CountingSubscription()) else {
      Issue.record("a subscription after cancel is cancelled")
      return
    }
  }

  @Test func aCompletedPublisherIsNotCancelled() {
    var state = State(prefetch: 1)
    _ = state.receivedSubscription(CountingSubscription())
    _ = state.receivedCompletion(.finished)
    #expect(state.cancelled().upstream == nil)
  }
}
