import Sluice
import Testing

@testable import SluiceGRPC

/// The pull engine's state machine, event by event (no tasks, no network).
@Suite("RPCPullState")
struct RPCPullStateTests {
  typealias State = RPCPullState<String>

  @Test func theFirstRequestStartsTheTaskAndLaterOnesOnlyAddDemand() {
    var state = State(downstream: "subscriber")
    guard case .start = state.requested(.max(2)) else {
      Issue.record("the first request starts the task")
      return
    }
    guard case .none = state.requested(.max(1)) else {
      Issue.record("a later request with nobody parked only adds demand")
      return
    }
    #expect(state.nextPull() == .pull)
    #expect(state.nextPull() == .pull)
    #expect(state.nextPull() == .pull)
    #expect(state.nextPull() == .park, "three requested, three pulled")
  }

  @Test func demandReturnedFromReceiveCounts() {
    var state = State(downstream: "subscriber")
    _ = state.requested(.max(1))
    #expect(state.nextPull() == .pull)
    state.returned(.max(2))
    #expect(state.nextPull() == .pull)
    #expect(state.nextPull() == .pull)
    #expect(state.nextPull() == .park)
  }

  @Test func thePullersCancellationStopsItForGood() {
    var state = State(downstream: "subscriber")
    _ = state.requested(.max(5))
    #expect(state.pullerCancelled() == nil, "nobody parked")
    #expect(state.nextPull() == .stop, "demand left, but the puller's task was cancelled")
    #expect(!state.isTerminal, "the subscriber still gets the call's outcome")
    #expect(state.finishing() == "subscriber")
    #expect(state.isTerminal)
  }

  @Test func cancelIsTerminalAndIdempotent() {
    var state = State(downstream: "subscriber")
    _ = state.requested(.max(1))
    let first = state.cancelled()
    #expect(first.downstream == "subscriber")
    let second = state.cancelled()
    #expect(second.downstream == nil)
    #expect(state.nextPull() == .stop)
    #expect(state.finishing() == nil, "no completion after cancel")
    guard case .none = state.requested(.max(1)) else {
      Issue.record("requests after cancel are ignored")
      return
    }
    #expect(state.willDeliver() == nil, "a value pulled meanwhile is dropped")
  }

  @Test func aTaskStartedAfterCancelIsCancelled() {
    var state = State(downstream: "subscriber")
    _ = state.requested(.max(1))
    _ = state.cancelled()
    let task = Task<Void, Never> {}
    #expect(state.taskStarted(task) != nil)
  }
}
