import NIOCore
import NIOEmbedded
import Sluice
import Testing

@testable import SluiceNIO

/// The client's subscription state machine, fed events directly.
@Suite("RemoteSubscriptionState")
struct RemoteSubscriptionStateTests {
  func value(_ text: String) -> WireFrame { WireFrame(.value, payload: ByteBuffer(string: text)) }

  /// A machine connected to `channel` with `demand`, its first drain run to idle.
  func streaming(demand: Int, chunk: Int = 256) -> (RemoteSubscriptionState, EmbeddedChannel) {
    var machine = RemoteSubscriptionState(chunk: chunk)
    let channel = EmbeddedChannel()
    guard case .connect = machine.requested(.max(demand)) else {
      Issue.record("the first demand connects")
      return (machine, channel)
    }
    let result1 = machine.connected(channel)
    #expect(result1.drain)
    guard case .read = machine.nextStep() else {
      Issue.record("demand and no frame: read")
      return (machine, channel)
    }
    guard case .idle = machine.nextStep() else {
      Issue.record("one read at a time")
      return (machine, channel)
    }
    return (machine, channel)
  }

  /// The texts of the values a step delivers, or `nil` for another step.
  func delivered(_ step: RemoteSubscriptionState.Step) -> [String]? {
    guard case .deliver(let frames) = step else { return nil }
    return frames.map { String(buffer: $0.payload) }
  }

  @Test func valuesGoOutAsDemandAllowsAndTheRestWaitsWithoutReading() {
    var (machine, _) = streaming(demand: 2)
    let result2 = machine.arrived([value("a"), value("b"), value("c")])
    #expect(result2)
    _ = machine.readCompleted()
    let result3 = machine.nextStep()
    #expect(delivered(result3) == ["a", "b"])
    guard case .idle = machine.nextStep() else {
      Issue.record("no demand: idle, no read while a frame waits")
      return
    }
    guard case .drain = machine.requested(.max(5)) else {
      Issue.record("new demand from another thread: drain on the loop")
      return
    }
    let result4 = machine.nextStep()
    #expect(delivered(result4) == ["c"])
    guard case .read = machine.nextStep() else {
      Issue.record("demand left, no frame: read")
      return
    }
  }

  @Test func aReadThatBringsNoWholeFrameIsFollowedByTheNextRead() {
    var (machine, _) = streaming(demand: 1)
    guard case .idle = machine.nextStep() else {
      Issue.record("a read is outstanding: no second one")
      return
    }
    // The read brought a partial frame, or only a heartbeat: no frame arrives, the read ends.
    let drain = machine.readCompleted()
    #expect(drain)
    guard case .read = machine.nextStep() else {
      Issue.record("demand and no frame: the next read")
      return
    }
  }

  @Test func chunksAreBoundedAndDemandReturnedByTheSubscriberCounts() {
    var (machine, _) = streaming(demand: 1, chunk: 2)
    let result5 = machine.arrived((0..<5).map { value("\($0)") })
    #expect(result5)
    let result6 = machine.nextStep()
    #expect(delivered(result6) == ["0"])
    machine.delivered(.unlimited)
    let result7 = machine.nextStep()
    #expect(delivered(result7) == ["1", "2"])
    let result8 = machine.nextStep()
    #expect(delivered(result8) == ["3", "4"])
  }

  @Test func theCompletionFollowsTheFramesBeforeItAndClosesTheChannel() {
    var (machine, channel) = streaming(demand: 1)
    let result9 = machine.arrived([value("a"), value("b"), WireFrame(.finished)])
    #expect(result9)
    let result10 = machine.nextStep()
    #expect(delivered(result10) == ["a"])
    guard case .idle = machine.nextStep() else {
      Issue.record("the completion waits behind b, which waits for demand")
      return
    }
    _ = machine.requested(.max(1))
    let result11 = machine.nextStep()
    #expect(delivered(result11) == ["b"])
    guard case .complete(.finished, let close) = machine.nextStep() else {
      Issue.record("then the completion")
      return
    }
    #expect(close === channel)
    #expect(machine.isClosed)
    let result12 = machine.arrived([value("late")])
    #expect(!result12)
  }

  @Test func aFaultClosesAtOnceButIsDeliveredAfterTheFramesBeforeIt() {
    var (machine, channel) = streaming(demand: 1)
    let result13 = machine.arrived([value("a"), value("b")])
    #expect(result13)
    let result14 = machine.nextStep()
    #expect(delivered(result14) == ["a"])
    _ = machine.nextStep()  // idle: no demand
    let (close, drain) = machine.failed(.timedOut(.seconds(1)))
    #expect(close === channel)
    #expect(drain)
    let result15 = machine.failed(.connectionDropped)
    #expect(result15.close == nil, "only the first fault counts")
    guard case .idle = machine.nextStep() else {
      Issue.record("b still waits for demand")
      return
    }
    _ = machine.requested(.max(1))
    let result16 = machine.nextStep()
    #expect(delivered(result16) == ["b"])
    guard case .complete(.failure(.timedOut(.seconds(1))), _) = machine.nextStep() else {
      Issue.record("then the fault")
      return
    }
  }

  @Test func failedAndRefusedFramesBecomeTheirFailures() {
    for (frame, error) in [
      (
        WireFrame(.failed, payload: ByteBuffer(string: "boom")),
        RemotePipelineError.serverFailed("boom")
      ),
      (WireFrame(.refused, payload: ByteBuffer(string: "full")), .refused("full")),
    ] {
      var (machine, _) = streaming(demand: 1)
      _ = machine.arrived([frame, value("after")])
      guard case .complete(.failure(error), _) = machine.nextStep() else {
        Issue.record("expected \(error)")
        continue
      }
    }
  }

  @Test func aConnectionFailureIsDeliveredWithoutAChannel() {
    var machine = RemoteSubscriptionState()
    _ = machine.requested(.max(1))
    let result17 = machine.connectFailed("refused")
    #expect(result17)
    guard case .complete(.failure(.connectionFailed("refused")), nil) = machine.nextStep() else {
      Issue.record("the failure, nothing to close")
      return
    }
  }

  @Test func cancellingClosesTheChannelAndEndsEverything() {
    var (machine, channel) = streaming(demand: 3)
    _ = machine.arrived([value("a")])
    let result18 = machine.cancelled()
    #expect(result18 === channel)
    guard case .idle = machine.nextStep() else {
      Issue.record("nothing after cancel")
      return
    }
    guard case .none = machine.requested(.max(1)) else {
      Issue.record("requests after cancel do nothing")
      return
    }
    let result19 = machine.cancelled()
    #expect(result19 == nil, "idempotent")
  }

  @Test func aPayloadFoundUndecodableAfterACancelEndsNothing() {
    // The drain was delivering a chunk when the cancel came; the next payload does not decode.
    var (machine, _) = streaming(demand: 3)
    _ = machine.arrived([value("a"), value("b")])
    guard case .deliver = machine.nextStep() else {
      Issue.record("the chunk first")
      return
    }
    _ = machine.cancelled()
    guard case .idle = machine.undecodable(.malformedFrame("not a value")) else {
      Issue.record("no failure after cancel")
      return
    }
  }

  @Test func aConnectionThatArrivesAfterTheCancelIsClosed() {
    var machine = RemoteSubscriptionState()
    _ = machine.requested(.max(1))
    _ = machine.cancelled()
    let channel = EmbeddedChannel()
    let result20 = machine.connected(channel)
    #expect(result20.close === channel)
  }
}
