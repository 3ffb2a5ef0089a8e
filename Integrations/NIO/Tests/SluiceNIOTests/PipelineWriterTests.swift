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

  /// Counts what is asked of it and delivers that many values at once, synchronously, inside
  /// the request (as a sequence does).
  final class CountingSource: Subscription, @unchecked Sendable {
    // Safety: used on the test's thread only.
    var writer: PipelineWriter<Int, Never>?
    var requested = 0
    var next = 0

    func request(_ demand: Subscribers.Demand) {
      let count = demand.max ?? 1_000
      requested += count
      for _ in 0..<count {
        guard let writer else { return }
        _ = writer.receive(next)
        next += 1
      }
    }

    func cancel() { writer = nil }
  }

  /// A request call that runs while the connection is stalled — one scheduled by an earlier
  /// write, running late on the pool — asks nothing: the write that lifts the stall schedules
  /// the call that asks. (It topped the demand up to `prefetch`, so a stalled connection held
  /// up to a `prefetch` more values than its bound.) The flush never runs here, so the socket
  /// stays busy and the writer stalled.
  @Test func aLateRequestCallAsksNothingWhileStalled() {
    let channel = EmbeddedChannel()
    var configuration = PipelineServerConfiguration()
    configuration.prefetch = 4
    configuration.batchBytes = 1  // each value a batch: the second one stalls
    let writer = PipelineWriter<Int, Never>(
      channel: channel, configuration: configuration, logger: Logger(label: "test"))
    let source = CountingSource()
    source.writer = writer
    writer.receive(subscription: source)
    #expect(source.requested == 4 && source.next == 4, "the first call: prefetch values")
    writer.requestMore()  // what a late task runs
    writer.requestMore()
    #expect(source.requested == 4, "asked \(source.requested - 4) more behind the stall")
    #expect(source.next == 4)
    source.writer = nil
  }
}
