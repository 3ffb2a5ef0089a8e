import Logging
import NIOCore
import NIOEmbedded
import Sluice
import Testing

@testable import SluiceNIO

/// The writer on an embedded channel, driven by a scripted source on the test's thread: what
/// reaches the channel when a value cannot be sent and the source misbehaves after the cancel.
@Suite("PipelineWriter, a value that cannot be sent, a source that goes on")
struct PipelineWriterTests {
  /// An integer whose encoding throws at 5.
  struct Bomb: WireCodable {
    struct Boom: Error {}
    let value: Int
    func encode(into buffer: inout ByteBuffer) throws {
      if value == 5 { throw Boom() }
      buffer.writeInteger(Int64(value))
    }
    init(_ value: Int) { self.value = value }
    init(wirePayload payload: ByteBuffer) throws { throw WireDecodingError("not read here") }
  }

  /// Delivers 0, 1, 2, … synchronously on request, up to `count`, and ignores `cancel()`
  /// (it goes on within the call); with `completesOnCancel`, completes from inside `cancel()`.
  final class Script: Subscription, @unchecked Sendable {
    // Safety: used on the test's thread only.
    var writer: PipelineWriter<Bomb, Never>?
    var next = 0
    let count: Int
    let completesOnCancel: Bool
    var cancels = 0
    /// Runs after value 8, inside the call (the event loop's tick meanwhile).
    var afterEight: (() -> Void)?

    init(count: Int, completesOnCancel: Bool) {
      self.count = count
      self.completesOnCancel = completesOnCancel
    }

    func request(_ demand: Subscribers.Demand) {
      var left = demand
      while left > 0, next < count, let writer {
        let value = next
        next += 1
        left -= 1
        left += writer.receive(Bomb(value))
        if value == 8 { afterEight?() }
      }
    }

    func cancel() {
      cancels += 1
      if completesOnCancel { writer?.receive(completion: .finished) }
    }
  }

  @Test(arguments: [false, true])
  func nothingFollowsTheFailureFrame(completesOnCancel: Bool) throws {
    let channel = EmbeddedChannel()
    var configuration = PipelineServerConfiguration()
    configuration.prefetch = 16
    let writer = PipelineWriter<Bomb, Never>(
      channel: channel, configuration: configuration, logger: Logger(label: "test"))
    let script = Script(count: 12, completesOnCancel: completesOnCancel)
    script.writer = writer
    script.afterEight = { channel.embeddedEventLoop.advanceTime(by: .milliseconds(2)) }
    // The first call delivers 0…4, fails at 5 (cancel: ignored, or a completion from inside
    // it, which must not wait for the batch its own thread holds), then 6…11 in the same call,
    // the tick firing after 8 (it must not write 6…8 after the failure).
    writer.receive(subscription: script)
    channel.embeddedEventLoop.run()
    channel.embeddedEventLoop.advanceTime(by: .milliseconds(10))  // the ticks, the flushes
    let written = try writtenFrameTags(channel)
    #expect(written == Array(repeating: .value, count: 5) + [.failed])
    #expect(script.cancels == 1)
    #expect(script.next == 12, "the source went on after the cancel")
  }
}
