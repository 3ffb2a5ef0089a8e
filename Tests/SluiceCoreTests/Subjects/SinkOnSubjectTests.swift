import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

/// A `sink` attached straight to a subject: the subject's conduit calls its closure without the
/// sink's delivery gate and ends the closure's life itself. Whatever the order of cancel,
/// completion, values and a second subscription, the closure is released exactly once, after
/// its last call, and never while it runs.
@Suite("Subjects: a sink's closure when the subject's conduit delivers to it", .onThreadsOfTheirOwn)
struct SinkOnSubjectTests {
  final class Token: @unchecked Sendable {}

  final class Log: @unchecked Sendable {
    // Safety: every access takes `lock`.
    let lock = NSLock()
    var entries: [String] = []
    func append(_ entry: String) { lock.withLock { entries.append(entry) } }
    var all: [String] { lock.withLock { entries } }
  }

  final class Weak: @unchecked Sendable {
    // Safety: written before the threads start, read after they end.
    weak var token: Token?
  }

  @Test("cancelled while its closure runs on another thread: released when the closure returns")
  func cancelDuringDelivery() {
    let subject = PassthroughSubject<Int, Never>()
    let log = Log()
    let entered = DispatchSemaphore(value: 0)
    let goOn = DispatchSemaphore(value: 0)
    let captured = Weak()
    var cancellable: AnyCancellable?
    do {
      let token = Token()
      captured.token = token
      cancellable = subject.sink { value in
        withExtendedLifetime(token) {}
        log.append("value \(value)")
        if value == 1 {
          entered.signal()
          goOn.wait()
          log.append("returning")
        }
      }
    }
    let delivered = sendOneFromAnotherThread(subject, until: entered)
    cancellable?.cancel()
    cancellable = nil
    #expect(captured.token != nil, "the closure is running: it must not be released under it")
    subject.send(2)  // after cancel() returned: not delivered
    goOn.signal()
    delivered.wait()
    #expect(captured.token == nil, "released once the delivery returned")
    #expect(log.all == ["value 1", "returning"])
  }

  @Test("cancelled while idle, and after completion: released at once")
  func releasedAtOnce() {
    for completes in [false, true] {
      let subject = PassthroughSubject<Int, Never>()
      let captured = Weak()
      let log = Log()
      var cancellable: AnyCancellable?
      do {
        let token = Token()
        captured.token = token
        cancellable = subject.sink(
          receiveCompletion: { _ in log.append("finished") },
          receiveValue: { _ in withExtendedLifetime(token) { log.append("value") } })
      }
      subject.send(1)
      if completes {
        subject.send(completion: .finished)
      } else {
        cancellable?.cancel()
      }
      #expect(captured.token == nil)
      subject.send(2)
      #expect(log.all == (completes ? ["value", "finished"] : ["value"]))
      withExtendedLifetime(cancellable) {}
    }
  }

  @Test("cancelled from inside its own closure: the rest of that call runs, nothing after")
  func cancelFromInside() {
    let subject = PassthroughSubject<Int, Never>()
    let captured = Weak()
    let log = Log()
    var cancellable: AnyCancellable?
    do {
      let token = Token()
      captured.token = token
      cancellable = subject.sink { value in
        log.append("value \(value)")
        cancellable?.cancel()
        withExtendedLifetime(token) { log.append("still running") }
      }
    }
    subject.send(1)
    subject.send(2)
    #expect(log.all == ["value 1", "still running"])
    #expect(captured.token == nil)
    withExtendedLifetime(cancellable) {}
  }

  @Test("a second subscription is refused without touching the first one's closure")
  func secondSubscription() {
    let first = PassthroughSubject<Int, Never>()
    let second = PassthroughSubject<Int, Never>()
    let log = Log()
    let sink = Subscribers.Sink<Int, Never>(
      receiveCompletion: { _ in log.append("finished") }, receiveValue: { log.append("\($0)") })
    first.subscribe(sink)
    second.subscribe(sink)  // cancelled by the sink
    first.send(1)
    second.send(99)
    first.send(2)
    #expect(log.all == ["1", "2"])
    sink.cancel()
    first.send(3)
    #expect(log.all == ["1", "2"])
  }

  @Test("cancelled before it is subscribed: the subject's conduit is cancelled, nothing runs")
  func cancelledBeforeSubscription() {
    let subject = PassthroughSubject<Int, Never>()
    let captured = Weak()
    let log = Log()
    var sink: Subscribers.Sink<Int, Never>?
    do {
      let token = Token()
      captured.token = token
      sink = Subscribers.Sink(
        receiveCompletion: { _ in log.append("finished") },
        receiveValue: { _ in withExtendedLifetime(token) { log.append("value") } })
    }
    sink?.cancel()
    #expect(captured.token == nil)
    if let sink { subject.subscribe(sink) }
    subject.send(1)
    #expect(log.all.isEmpty)
    #expect(!subject.hasSubscribers)
  }

  @Test("cancel, completion and values racing on three threads: the closure is released once")
  func racingEnds() async {
    for round in 0..<300 {
      let subject = PassthroughSubject<Int, Never>()
      let captured = Weak()
      let calls = Log()
      let cancellable: AnyCancellable
      do {
        let token = Token()
        captured.token = token
        cancellable = subject.sink(
          receiveCompletion: { _ in calls.append("finished") },
          receiveValue: { _ in withExtendedLifetime(token) {} })
      }
      let shared = Shared(cancellable)
      await concurrently(3) { worker in
        switch worker {
        case 0: for value in 0..<200 { subject.send(value) }
        case 1: if round % 2 == 0 { subject.send(completion: .finished) }
        default: shared.value.cancel()
        }
      }
      #expect(captured.token == nil, "round \(round)")
      #expect(calls.all.count <= 1)
    }
  }
}
