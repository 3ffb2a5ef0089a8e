import Foundation
import Sluice
import SluiceNIO
import Synchronization
import Testing

/// An object whose release is observable: what a `sink`'s closures capture in an app (a view
/// model, a connection).
final class Captured: Sendable {
  let released: Flag
  let values: Counter

  init(_ released: Flag, values: Counter) {
    self.released = released
    self.values = values
  }

  deinit { released.set() }
}

/// A flag set once, from any thread.
final class Flag: Sendable {
  let value = Atomic<Bool>(false)
  func set() { value.store(true, ordering: .sequentiallyConsistent) }
  var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}

/// A count kept from any thread.
final class Counter: Sendable {
  let count = Atomic<Int>(0)
  func add() { count.add(1, ordering: .relaxed) }
  var value: Int { count.load(ordering: .relaxed) }
}

/// The cancellable a sink's closure cancels from inside: set once the sink is made.
final class CancellableHolder: @unchecked Sendable {
  // Safety: `cancellable` is read and written only under `lock`.
  private let lock = NSLock()
  private var cancellable: (any Cancellable)?
  func set(_ value: (any Cancellable)?) { lock.withLock { cancellable = value } }
  func cancel() { lock.withLock { cancellable }?.cancel() }
}

/// A sink cancelled from several threads at once.
struct SharedCancellable: @unchecked Sendable {
  // Safety: only `cancel()` is called through it, which is thread-safe and idempotent.
  let cancellable: any Cancellable
}

/// A `sink` on a `RemotePipeline` delivers without its own gate (the subscription owns the
/// release of its closure, see `RemoteSubscription`): the closure must still be released when
/// the subscription ends, while the sink is kept, and nothing may reach it after.
@Suite("RemotePipeline and a sink's closures", .serialized)
struct SinkReleaseTests {
  typealias Sink = Subscribers.Sink<Int, RemotePipelineError>

  /// Subscribes a `Subscribers.Sink` whose closures capture a `Captured`, directly or behind
  /// `eraseToAnyPublisher()`, and returns it: the test keeps it, so its closures are released
  /// only if the subscription's end releases them (an `AnyCancellable` would let go of the
  /// whole sink at `cancel()`).
  func subscribe(
    _ pipeline: RemotePipeline<Int>, erased: Bool, released: Flag,
    onValue: @escaping @Sendable (Int) -> Void = { _ in },
    completed: @escaping @Sendable (Subscribers.Completion<RemotePipelineError>) -> Void = { _ in }
  ) -> (Sink, Counter) {
    let values = Counter()
    let captured = Captured(released, values: values)
    let sink = Sink(
      receiveCompletion: { [captured] in
        _ = captured
        completed($0)
      },
      receiveValue: { [captured] in
        captured.values.add()
        onValue($0)
      })
    if erased {
      pipeline.eraseToAnyPublisher().subscribe(sink)
    } else {
      pipeline.subscribe(sink)
    }
    return (sink, values)
  }

  @Test(arguments: [false, true])
  func theClosuresAreReleasedAfterTheCompletionWhileTheCancellableIsKept(erased: Bool)
    async throws
  {
    let server = try await ServerProcess(["--count", "1000"])
    let released = Flag()
    let finished = Flag()
    var (cancellable, values): (Sink?, Counter) = subscribe(
      RemotePipeline<Int>(port: try #require(server.port)), erased: erased, released: released,
      completed: { _ in finished.set() })
    #expect(await eventually { finished.isSet })
    #expect(values.value == 1000)
    #expect(await eventually { released.isSet })
    #expect(cancellable != nil, "the sink is still held here")
    cancellable = nil
  }

  @Test(arguments: [false, true])
  func theClosuresAreReleasedAtACancelFromAnotherThreadWhileValuesStream(erased: Bool)
    async throws
  {
    let server = try await ServerProcess([])
    for _ in 0..<10 {
      let released = Flag()
      let afterCancel = Atomic<Int>(0)
      let cancelled = Flag()
      var (cancellable, values): (Sink?, Counter) = subscribe(
        RemotePipeline<Int>(port: try #require(server.port)), erased: erased,
        released: released,
        onValue: { _ in
          if cancelled.isSet {
            afterCancel.add(1, ordering: .relaxed)
          }
        })
      #expect(await eventually { values.value > 1000 })
      let sink = SharedCancellable(cancellable: try #require(cancellable))
      DispatchQueue.concurrentPerform(iterations: 4) { _ in sink.cancellable.cancel() }
      cancelled.set()
      #expect(await eventually { released.isSet })
      try await Task.sleep(for: .milliseconds(50))
      // A delivery the event loop had begun when cancel() returned may still land.
      #expect(afterCancel.load(ordering: .relaxed) <= 1, "nothing after cancel() but one in flight")
      #expect(cancellable != nil)
      cancellable = nil
    }
  }

  @Test(arguments: [false, true])
  func theClosuresAreReleasedAtACancelBetweenValues(erased: Bool) async throws {
    // One value every 20 ms: the cancel finds no delivery in flight, and releases at once.
    let server = try await ServerProcess(["--interval-ms", "20"])
    let released = Flag()
    var (cancellable, values): (Sink?, Counter) = subscribe(
      RemotePipeline<Int>(port: try #require(server.port)), erased: erased, released: released)
    #expect(await eventually { values.value >= 2 })
    cancellable?.cancel()
    #expect(await eventually { released.isSet })
    let count = values.value
    try await Task.sleep(for: .milliseconds(100))
    #expect(values.value <= count + 1)
    #expect(cancellable != nil)
    cancellable = nil
  }

  @Test(arguments: [false, true])
  func theClosuresAreReleasedAtACancelFromInsideTheirOwnValue(erased: Bool) async throws {
    let server = try await ServerProcess([])
    let released = Flag()
    let holder = CancellableHolder()
    let afterCancel = Atomic<Int>(0)
    let cancelled = Flag()
    var (cancellable, _): (Sink?, Counter) = subscribe(
      RemotePipeline<Int>(port: try #require(server.port)), erased: erased, released: released,
      onValue: { value in
        if cancelled.isSet {
          afterCancel.add(1, ordering: .relaxed)
        } else if value == 500 {
          cancelled.set()
          holder.cancel()
        }
      })
    holder.set(cancellable)
    #expect(await eventually { released.isSet })
    #expect(afterCancel.load(ordering: .relaxed) == 0, "nothing after a cancel from inside")
    holder.set(nil)
    cancellable = nil
  }
}
