import Logging
import NIOCore
import NIOEmbedded
import Sluice
import Testing

@testable import SluiceNIO

/// The end of a stream while a synchronous source blocks inside the writer's request call (a
/// blocking read stopped from another thread, as `blocking.prefix(untilOutputFrom: stop)`
/// does): the end frame went out only when the call returned — 6 s later in the adversary's
/// run, or never (then the client timed out: no heartbeat is sent once the stream ends). The
/// tick now writes it as it writes the values the call emitted.
@Suite("PipelineWriter, the end while a request call blocks")
struct BlockedRequestCallTests {
  struct Plain: WireCodable {
    let value: Int
    func encode(into buffer: inout ByteBuffer) throws { buffer.writeInteger(Int64(value)) }
    init(_ value: Int) { self.value = value }
    init(wirePayload payload: ByteBuffer) throws { throw WireDecodingError("not read here") }
  }

  /// On its first request, delivers 0, 1, 2, then runs `whileBlocked` inside the call (where
  /// the source would block).
  final class Blocking: Subscription, @unchecked Sendable {
    // Safety: used on the test's thread only.
    var writer: PipelineWriter<Plain, PipelineFailure>?
    var whileBlocked: (() -> Void)?
    var calls = 0
    func request(_ demand: Subscribers.Demand) {
      calls += 1
      guard calls == 1, let writer else { return }
      for value in 0..<3 { _ = writer.receive(Plain(value)) }
      whileBlocked?()
    }
    func cancel() {}
  }

  @Test(arguments: [false, true])
  func theEndIsWrittenWhileTheCallBlocks(failing: Bool) throws {
    let channel = EmbeddedChannel()
    let writer = PipelineWriter<Plain, PipelineFailure>(
      channel: channel, configuration: PipelineServerConfiguration(),
      logger: Logger(label: "test"))
    let source = Blocking()
    source.writer = writer
    var whileBlocked: [WireFrame.Tag] = []
    source.whileBlocked = {
      channel.embeddedEventLoop.advanceTime(by: .milliseconds(5))  // the tick writes 0, 1, 2
      // The end, from the thread that stops the source.
      writer.receive(completion: failing ? .failure(PipelineFailure("stopped")) : .finished)
      channel.embeddedEventLoop.advanceTime(by: .milliseconds(5))  // still blocked
      whileBlocked = (try? writtenFrameTags(channel)) ?? []
    }
    writer.receive(subscription: source)
    #expect(whileBlocked == [.value, .value, .value, failing ? .failed : .finished])
    channel.embeddedEventLoop.advanceTime(by: .milliseconds(5))
    #expect(try writtenFrameTags(channel).isEmpty, "nothing after the end")
  }
}
