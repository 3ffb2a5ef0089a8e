import SluiceAsync
import SluiceCore
import Synchronization
import Testing

/// `stream.publisher.values`: the consuming task reads the stream itself, with a subscription's
/// guarantees (order, the end, failure, cancellation, dropping the iterator, shared copies).
@Suite("values of an AsyncStream's publisher, read directly")
struct DirectIterationTests {
  /// Whether `iterator` reads its stream directly (not through a subscription).
  static func isDirect<Upstream>(_ iterator: AsyncPublisher<Upstream>.Iterator) -> Bool {
    String(describing: type(of: iterator.bridgeForTesting)).hasPrefix("DirectIteration")
  }

  /// A child of `object`'s mirror, read now (a `Mirror` is a snapshot).
  static func read(_ child: String, of object: AnyObject) -> Any? {
    Mirror(reflecting: object).descendant(child)
  }

  /// How a stream ended, as its `onTermination` reported.
  final class Terminations: Sendable {
    let log = Mutex<[String]>([])
    var all: [String] { log.withLock { $0 } }
  }

  /// A stream whose `onTermination` reports into `terminations`.
  static func watchedStream(
    _ terminations: Terminations
  ) -> (AsyncStream<Int>, AsyncStream<Int>.Continuation) {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    continuation.onTermination = { termination in
      terminations.log.withLock { $0.append("\(termination)") }
    }
    return (stream, continuation)
  }

  @Test func valuesInOrderThenTheEndTwice() async {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    for value in 0..<100 { continuation.yield(value) }
    continuation.finish()
    var iterator = stream.publisher.values.makeAsyncIterator()
    #expect(Self.isDirect(iterator))
    var received: [Int] = []
    while let value = await iterator.next() { received.append(value) }
    #expect(received == Array(0..<100))
    #expect(await iterator.next() == nil)
  }

  @Test func looksThroughEraseToAnyPublisher() async {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    continuation.yield(1)
    continuation.finish()
    var iterator = stream.publisher.eraseToAnyPublisher().values.makeAsyncIterator()
    #expect(Self.isDirect(iterator))
    #expect(await iterator.next() == 1)
    #expect(await iterator.next() == nil)
  }

  @Test func aThrowingStreamsFailureIsThrownOnceThenTheEnd() async throws {
    struct Failure: Error {}
    let (stream, continuation) = AsyncThrowingStream<Int, any Error>.makeStream()
    continuation.yield(1)
    continuation.finish(throwing: Failure())
    var iterator = stream.publisher.values.makeAsyncIterator()
    #expect(Self.isDirect(iterator))
    #expect(try await iterator.next() == 1)
    await #expect(throws: Failure.self) { try await iterator.next() }
    #expect(try await iterator.next() == nil)
  }

  @Test("other sequences, other policies and operators in between subscribe as before")
  func onlyStreamsWithDemandOneAreReadDirectly() {
    let (stream, _) = AsyncStream<Int>.makeStream()
    #expect(
      !Self.isDirect(stream.publisher.values(bufferingPolicy: .prefetch(4)).makeAsyncIterator()))
    #expect(!Self.isDirect(stream.publisher.map { $0 }.values.makeAsyncIterator()))
    #expect(!Self.isDirect(stream.publisher.values.publisher.values.makeAsyncIterator()))
  }

  @Test("a cancelled consumer's next() ends at once, even with values buffered")
  func aCancelledTaskGetsTheEnd() async {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    for value in 0..<3 { continuation.yield(value) }
    let publisher = stream.publisher
    let consumer = Task {
      var iterator = publisher.values.makeAsyncIterator()
      let first = await iterator.next()
      withUnsafeCurrentTask { $0?.cancel() }
      let afterCancel = await iterator.next()
      return (first, afterCancel)
    }
    let (first, afterCancel) = await consumer.value
    #expect(first == 0)
    #expect(afterCancel == nil)
  }

  @Test("cancelling a consumer waiting on an idle stream ends its next() and the stream")
  func cancellingAWaitingConsumer() async throws {
    let terminations = Terminations()
    let (stream, continuation) = Self.watchedStream(terminations)
    let iterator = SharedCopies(base: stream.publisher.values.makeAsyncIterator())
    let direct = iterator.base.bridgeForTesting
    let consumer = Task { try await iterator.next() }
    #expect(await eventually { Self.read("pulling", of: direct) as? Bool == true })
    consumer.cancel()
    #expect(try await consumer.value == nil)
    #expect(await eventually { terminations.all == ["cancelled"] })
    #expect("\(continuation.yield(1))".hasPrefix("terminated"))
    #expect(try await iterator.next() == nil)
  }

  @Test("dropping the iterator releases it and leaves the stream to a later reader")
  func droppingTheIterator() async {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    continuation.yield(1)
    let publisher = stream.publisher
    weak var dropped: AnyObject?
    do {
      var iterator = publisher.values.makeAsyncIterator()
      dropped = iterator.bridgeForTesting
      #expect(await iterator.next() == 1)
    }
    #expect(dropped == nil)
    continuation.yield(2)
    var later = publisher.values.makeAsyncIterator()
    #expect(await later.next() == 2)
  }

  /// Copies of one iterator awaited from several tasks (through an unchecked box, since the
  /// iterator is not `Sendable`): they take turns, each value reaches exactly one of them.
  struct SharedCopies<Base: AsyncIteratorProtocol>: @unchecked Sendable {
    // Safety: copies of a `values` iterator share one iteration that serialises its callers.
    let base: Base
    func next() async throws -> Base.Element? {
      var copy = base
      return try await copy.next()
    }
  }

  @Test("copies awaited from four tasks: each value once, the end reaches all")
  func copiesTakeTurns() async throws {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    let iterator = SharedCopies(base: stream.publisher.values.makeAsyncIterator())
    let consumers = (0..<4).map { _ in
      Task {
        var received: [Int] = []
        while let value = try await iterator.next() { received.append(value) }
        return received
      }
    }
    for value in 0..<2_000 { continuation.yield(value) }
    continuation.finish()
    var all: [Int] = []
    for consumer in consumers {
      let received = try await consumer.value
      #expect(received == received.sorted(), "one consumer's values keep the stream's order")
      all += received
    }
    #expect(all.sorted() == Array(0..<2_000))
  }

  @Test("a copy cancelled while another reads gets nil alone; the reader and the rest go on")
  func aWaitingCopyCancelled() async throws {
    let terminations = Terminations()
    let (stream, continuation) = Self.watchedStream(terminations)
    let iterator = stream.publisher.values.makeAsyncIterator()
    let shared = SharedCopies(base: iterator)
    let direct = iterator.bridgeForTesting
    let holder = Task { try await shared.next() }
    // The holder reads (the stream is idle); a second caller queues behind it.
    #expect(await eventually { Self.read("pulling", of: direct) as? Bool == true })
    let waiter = Task { try await shared.next() }
    #expect(await eventually { Self.read("queued", of: direct) as? Int == 1 })
    waiter.cancel()
    #expect(try await waiter.value == nil)
    #expect(Self.read("queued", of: direct) as? Int == 0)
    continuation.yield(7)
    #expect(try await holder.value == 7)
    continuation.yield(8)
    #expect(try await shared.next() == 8)
    #expect(terminations.all.isEmpty)
  }

  @Test("a stream made with init(unfolding:) is pulled by the publisher's task, as before")
  func unfoldingStreamsSubscribe() async {
    let unfolding = AsyncStream<Int>(unfolding: { 1 })
    #expect(!Self.isDirect(unfolding.publisher.values.makeAsyncIterator()))
    let throwing = AsyncThrowingStream<Int, any Error>(unfolding: { 1 })
    #expect(!Self.isDirect(throwing.publisher.values.makeAsyncIterator()))
    let (made, _) = AsyncThrowingStream<Int, any Error>.makeStream()
    #expect(Self.isDirect(made.publisher.values.makeAsyncIterator()))
    // Its closure may ignore cancellation: a cancelled consumer still ends at once.
    let gate = AsyncStream<Void>.makeStream()
    let stalled = AsyncStream<Int>(unfolding: {
      for await _ in gate.stream {}
      return 1
    })
    let consumer = Task {
      var iterator = stalled.publisher.values.makeAsyncIterator()
      return await iterator.next()
    }
    try? await Task.sleep(for: .milliseconds(10))
    consumer.cancel()
    #expect(await consumer.value == nil)
    gate.continuation.finish()
  }

  /// Leaving a loop early (`break`), then looping again over the same publisher: what the
  /// subscribed bridge does (`map { $0 }` in between keeps it) and the direct read do alike.
  @Test("break, then a second loop: the stream goes on where the first stopped, unterminated")
  func breakThenLoopAgain() async {
    var outcomes: [String] = []
    for direct in [false, true] {
      let terminations = Terminations()
      let (stream, continuation) = Self.watchedStream(terminations)
      for value in 1...5 { continuation.yield(value) }
      let publisher = stream.publisher
      let first =
        direct ? publisher.eraseToAnyPublisher() : publisher.map { $0 }.eraseToAnyPublisher()
      for await value in first.values {
        #expect(value == 1)
        break
      }
      var second: [Int] = []
      for await value in publisher.values {
        second.append(value)
        if second.count == 2 { break }
      }
      outcomes.append("\(second) \(terminations.all)")
    }
    #expect(outcomes == ["[2, 3] []", "[2, 3] []"])
  }
}
