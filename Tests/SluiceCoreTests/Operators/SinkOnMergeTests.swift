import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

/// A `sink` downstream of `merge` or `flatMap` (directly, or behind `eraseToAnyPublisher()`):
/// the merge's turn calls its closure without the sink's delivery gate and ends the closure's
/// life itself (see `MergeCore`). The tests keep the `Subscribers.Sink` itself, so the closure
/// is released only if the merge releases it: exactly once, after its last call, never while it
/// runs, and nothing reaches it after.
@Suite("Operators: a sink's closure when merge or flatMap delivers to it", .onThreadsOfTheirOwn)
struct SinkOnMergeTests {
  typealias Token = SinkOnSubjectTests.Token
  typealias Log = SinkOnSubjectTests.Log
  typealias Weak = SinkOnSubjectTests.Weak
  typealias Sink = Subscribers.Sink<Int, TestError>

  /// The shapes: two subjects merged, or flat-mapped from an outer subject; directly or erased.
  enum Shape: CaseIterable, CustomStringConvertible {
    case merge, mergeErased, flatMap, flatMapErased

    var description: String {
      switch self {
      case .merge: "merge"
      case .mergeErased: "merge, erased"
      case .flatMap: "flatMap"
      case .flatMapErased: "flatMap, erased"
      }
    }

    /// Subscribes `sink` to this shape over `first` and `second`; returns a function that
    /// finishes the whole merge.
    func subscribe(
      _ sink: Sink, first: PassthroughSubject<Int, TestError>,
      second: PassthroughSubject<Int, TestError>
    ) -> () -> Void {
      switch self {
      case .merge, .mergeErased:
        let merged = first.merge(with: second)
        if self == .merge {
          merged.subscribe(sink)
        } else {
          merged.eraseToAnyPublisher().subscribe(sink)
        }
        return {
          first.send(completion: .finished)
          second.send(completion: .finished)
        }
      case .flatMap, .flatMapErased:
        let outer = PassthroughSubject<PassthroughSubject<Int, TestError>, TestError>()
        let flat = outer.flatMap { $0 }
        if self == .flatMap {
          flat.subscribe(sink)
        } else {
          flat.eraseToAnyPublisher().subscribe(sink)
        }
        outer.send(first)
        outer.send(second)
        return {
          outer.send(completion: .finished)
          first.send(completion: .finished)
          second.send(completion: .finished)
        }
      }
    }
  }

  /// A sink whose value closure captures a token (kept weakly in `captured`) and logs; its
  /// completion closure logs, or does what `onCompletion` says.
  func makeSink(
    _ log: Log, _ captured: Weak,
    onValue: @escaping @Sendable (Int) -> Void = { _ in },
    onCompletion: (@Sendable (Subscribers.Completion<TestError>) -> Void)? = nil
  ) -> Sink {
    let token = Token()
    captured.token = token
    return Sink(
      receiveCompletion: { completion in
        if let onCompletion {
          onCompletion(completion)
        } else {
          log.append("completion \(completion)")
        }
      },
      receiveValue: { value in
        withExtendedLifetime(token) {}
        log.append("value \(value)")
        onValue(value)
      })
  }

  /// A sink subscribed to `shape` whose closure is inside value 1 on another thread when this
  /// returns, until `goOn` is signalled (`delivered` then signals as that send returns).
  func blockedInFirstValue(
    _ shape: Shape
  ) -> (
    second: PassthroughSubject<Int, TestError>, log: Log, captured: Weak,
    goOn: DispatchSemaphore, delivered: DispatchSemaphore, sink: Sink
  ) {
    let first = PassthroughSubject<Int, TestError>()
    let second = PassthroughSubject<Int, TestError>()
    let log = Log()
    let captured = Weak()
    let entered = DispatchSemaphore(value: 0)
    let goOn = DispatchSemaphore(value: 0)
    let sink = makeSink(log, captured) { value in
      if value == 1 {
        entered.signal()
        goOn.wait()
        log.append("returning")
      }
    }
    _ = shape.subscribe(sink, first: first, second: second)
    let delivered = sendOneFromAnotherThread(first, until: entered)
    return (second, log, captured, goOn, delivered, sink)
  }

  @Test(
    "cancelled while its closure runs on another thread: released when it returns",
    arguments: Shape.allCases)
  func cancelDuringDelivery(shape: Shape) {
    let (second, log, captured, goOn, delivered, sink) = blockedInFirstValue(shape)
    sink.cancel()
    #expect(captured.token != nil, "the closure is running: it must not be released under it")
    second.send(2)  // after cancel() returned: not delivered
    goOn.signal()
    delivered.wait()
    #expect(captured.token == nil, "released once the delivery returned")
    #expect(log.all == ["value 1", "returning"])
    withExtendedLifetime(sink) {}
  }

  @Test("cancelled while idle: released at once", arguments: Shape.allCases)
  func cancelWhileIdle(shape: Shape) {
    let first = PassthroughSubject<Int, TestError>()
    let second = PassthroughSubject<Int, TestError>()
    let log = Log()
    let captured = Weak()
    let sink = makeSink(log, captured)
    _ = shape.subscribe(sink, first: first, second: second)
    first.send(1)
    sink.cancel()
    #expect(captured.token == nil)
    second.send(2)
    #expect(log.all == ["value 1"])
    withExtendedLifetime(sink) {}
  }

  @Test("finished, or failed: released before the completion", arguments: Shape.allCases)
  func completion(shape: Shape) {
    for fails in [false, true] {
      let first = PassthroughSubject<Int, TestError>()
      let second = PassthroughSubject<Int, TestError>()
      let log = Log()
      let captured = Weak()
      // The completion closure reports whether the value closure was released before it ran.
      let sink = makeSink(
        log, captured,
        onCompletion: { _ in
          log.append(captured.token == nil ? "completion, released" : "completion, still held")
        })
      let finish = shape.subscribe(sink, first: first, second: second)
      first.send(1)
      second.send(2)
      if fails { second.send(completion: .failure(TestError())) } else { finish() }
      first.send(3)
      #expect(log.all == ["value 1", "value 2", "completion, released"], "failing: \(fails)")
      withExtendedLifetime(sink) {}
    }
  }

  @Test(
    "failed by one upstream while another thread delivers: released after that delivery",
    arguments: Shape.allCases)
  func failureDuringDelivery(shape: Shape) {
    let (second, log, captured, goOn, delivered, sink) = blockedInFirstValue(shape)
    second.send(completion: .failure(TestError()))  // the deliverer sends it as it returns
    #expect(captured.token != nil, "the closure is running: it must not be released under it")
    goOn.signal()
    delivered.wait()
    #expect(captured.token == nil)
    #expect(log.all == ["value 1", "returning", "completion failure(\(TestError()))"])
    withExtendedLifetime(sink) {}
  }

  @Test(
    "cancelled from inside its own closure: the rest of that call runs, nothing after",
    arguments: Shape.allCases)
  func cancelFromInside(shape: Shape) {
    let first = PassthroughSubject<Int, TestError>()
    let second = PassthroughSubject<Int, TestError>()
    let log = Log()
    let captured = Weak()
    let holder = Holder()
    let sink = makeSink(log, captured) { _ in
      holder.sink?.cancel()
      log.append("still running")
    }
    holder.sink = sink
    _ = shape.subscribe(sink, first: first, second: second)
    first.send(1)
    second.send(2)
    #expect(log.all == ["value 1", "still running"])
    #expect(captured.token == nil)
    holder.sink = nil
  }

  final class Holder: @unchecked Sendable {
    // Safety: written before values flow, read on the delivering thread only.
    var sink: Sink?
  }

  @Test(
    "values from several threads, cancelled from another: released once, nothing after",
    arguments: Shape.allCases)
  func concurrentValuesAndCancel(shape: Shape) async {
    for _ in 0..<20 {
      let first = PassthroughSubject<Int, TestError>()
      let second = PassthroughSubject<Int, TestError>()
      let cancelled = SharedBox(false)
      let afterCancel = SharedBox(0)
      let received = SharedBox(0)
      let captured = Weak()
      let sink = makeSink(Log(), captured) { _ in
        received.withLock { $0 += 1 }
        if cancelled.withLock({ $0 }) { afterCancel.withLock { $0 += 1 } }
      }
      _ = shape.subscribe(sink, first: first, second: second)
      let senders = [Shared(first), Shared(second)].map { subject in
        startThread {
          for value in 0..<2_000 { subject.value.send(value) }
        }
      }
      while received.withLock({ $0 }) < 100 { usleep(100) }
      sink.cancel()
      cancelled.withLock { $0 = true }
      for sender in senders { sender.wait() }
      // A value whose delivery began before cancel() returned may still land, one per thread.
      #expect(afterCancel.withLock { $0 } <= 2)
      #expect(captured.token == nil, "released once the deliveries in flight returned")
      withExtendedLifetime(sink) {}
    }
  }

  /// Runs `body` on a thread of its own; the semaphore is signalled when it returns.
  func startThread(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      body()
      done.signal()
    }
    return done
  }
}
