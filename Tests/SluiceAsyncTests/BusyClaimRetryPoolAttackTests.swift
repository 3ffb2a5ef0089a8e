import Dispatch
import Foundation
import SluiceAsync
import SluiceTestSupport
import Synchronization
import Testing

/// The busy-claim retry (``PassthroughSubject/send(_:)``) attacked from the Swift cooperative pool: tasks that
/// send into one subject while other tasks await its `values`. The pool has one thread per core
/// (two here), so a send that yields the processor or sleeps holds one of very few threads; the
/// tests check that structured-concurrency code still finishes, every awaited value arrives
/// once and in each task's order, and report how long it took next to the same shape on a
/// `CurrentValueSubject` (which does not retry) in the same run.
///
/// The sends run on the pool on purpose (that is the shape under attack). The test waits for
/// the whole on a thread of its own, with a deadline, so that a deadlock fails the test instead
/// of stalling the run.
@Suite("Subjects: a busy claim tried again, from the cooperative pool")
struct BusyClaimRetryPoolAttackTests {
  enum Kind: String, Sendable { case passthrough, currentValue }

  /// Runs `consumers` tasks iterating `values` and `senders` tasks each sending `perSender`
  /// values (awaiting `Task.yield()` every `yieldEvery` sends, if not 0), then completes the
  /// subject. Returns the problems found and the wall time, or `nil` if the whole did not end
  /// within `deadline` seconds: a net against a hang only, as long as the other liveness tests'
  /// (600 s). The time includes waiting for the pool, which the rest of a parallel run keeps
  /// busy: under the thread sanitizer, with the whole suite running beside it, the
  /// `PassthroughSubject` half took more than 120 s (the three cases alone: about 1 s).
  static func run(
    _ kind: Kind, senders: Int, consumers: Int, perSender: Int, yieldEvery: Int,
    deadline: Int = 600
  ) async -> (problems: [String], seconds: Double)? {
    let passthrough = PassthroughSubject<Int, Never>()
    let current = CurrentValueSubject<Int, Never>(-1)
    let send: @Sendable (Int) -> Void = { value in
      switch kind {
      case .passthrough: passthrough.send(value)
      case .currentValue: current.send(value)
      }
    }
    let makeValues: @Sendable () -> AsyncPublisher<AnyPublisher<Int, Never>> = {
      kind == .passthrough
        ? passthrough.eraseToAnyPublisher().values : current.eraseToAnyPublisher().values
    }
    let finish: @Sendable () -> Void = {
      passthrough.send(completion: .finished)
      current.send(completion: .finished)
    }
    final class Ready: Sendable { let count = Atomic<Int>(0) }
    let ready = Ready()
    let start = DispatchTime.now().uptimeNanoseconds
    let whole = Task { () -> [String] in
      var consuming: [Task<ProducerOrder, Never>] = []
      for _ in 0..<consumers {
        consuming.append(
          Task { () -> ProducerOrder in
            let order = ProducerOrder(producers: senders, lossless: true)
            var marked = false
            for await value in makeValues() {
              guard value >= 0 else {
                if !marked { ready.count.add(1, ordering: .relaxed) }
                marked = true
                continue
              }
              order.record(value)
            }
            return order
          })
      }
      // Every consumer has subscribed once it has seen a marker: from then on it sees all.
      while ready.count.load(ordering: .relaxed) < consumers {
        send(-1)
        await Task.yield()
      }
      await withTaskGroup(of: Void.self) { group in
        for sender in 0..<senders {
          group.addTask {
            for index in 0..<perSender {
              send(sender * 1_000_000 + index)
              if yieldEvery > 0, index % yieldEvery == yieldEvery - 1 { await Task.yield() }
            }
          }
        }
      }
      finish()
      var problems: [String] = []
      for (number, consumer) in consuming.enumerated() {
        let order = await consumer.value
        if order.received != senders * perSender {
          problems.append("consumer \(number): received \(order.received)")
        }
        problems += order.problems.map { "consumer \(number): \($0)" }
      }
      return problems
    }
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<[String]?>(nil)
    Task {
      let problems = await whole.value
      result.withLock { $0 = problems }
      done.signal()
    }
    let inTime = await onThreadOfItsOwn {
      done.wait(timeout: .now() + .seconds(deadline)) == .success
    }
    guard inTime, let problems = result.withLock({ $0 }) else { return nil }
    return (problems, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
  }

  @Test(
    "tasks send into a subject while other tasks await its values",
    arguments: [(16, 0), (16, 8), (64, 1)])
  func tasksSendWhileOthersAwait(senders: Int, yieldEvery: Int) async {
    let perSender = max(50, stressScaled(16_000) / senders)
    guard
      let passthrough = await Self.run(
        .passthrough, senders: senders, consumers: 2, perSender: perSender,
        yieldEvery: yieldEvery),
      let current = await Self.run(
        .currentValue, senders: senders, consumers: 2, perSender: perSender,
        yieldEvery: yieldEvery)
    else {
      Issue.record("did not finish in 600 s: a deadlock or a starved pool")
      return
    }
    print(
      "BusyClaimRetryPoolAttackTests: \(senders) sending tasks, yield every \(yieldEvery): PassthroughSubject "
        + "\(passthrough.seconds) s, CurrentValueSubject \(current.seconds) s "
        + "(\(senders * perSender) values, 2 consumers)")
    #expect(passthrough.problems.isEmpty, "\(passthrough.problems)")
    #expect(current.problems.isEmpty, "\(current.problems)")
  }
}
