import Dispatch
import Foundation
import SluiceCore
import SluiceTestSupport
import Testing

/// A subject with many subscribers: attaching and cancelling them in any order keeps the rest
/// receiving in attachment order (cancelling is constant-time per subscriber, so an app with
/// thousands of subscriptions to one subject does not go quadratic when it clears them).
@Suite("Subjects with many subscribers", .onThreadsOfTheirOwn)
struct ManySubscribersTests {
  final class Log: @unchecked Sendable {
    // Safety: written by the serial sends of one test thread at a time (and `lock` for the
    // concurrent test).
    let lock = NSLock()
    var entries: [Int] = []
    func append(_ id: Int) { lock.withLock { entries.append(id) } }
    func take() -> [Int] {
      lock.withLock {
        defer { entries = [] }
        return entries
      }
    }
  }

  @Test("cancelling in random order keeps the others in attachment order", arguments: [3, 40, 500])
  func randomCancellationsKeepOrder(subscribers: Int) {
    let subject = PassthroughSubject<Int, Never>()
    let log = Log()
    var cancellables: [Int: AnyCancellable] = [:]
    for id in 0..<subscribers {
      cancellables[id] = subject.sink { _ in log.append(id) }
    }
    var generator = SystemRandomNumberGenerator()
    var live = Array(0..<subscribers)
    var lateOnes = 0
    while !live.isEmpty {
      subject.send(0)
      #expect(log.take() == live, "every live subscriber once, in attachment order")
      // Cancel a few at random places (the first, the last, the middle all happen).
      for _ in 0..<max(1, live.count / 7) where !live.isEmpty {
        let id = live.remove(at: Int.random(in: 0..<live.count, using: &generator))
        cancellables.removeValue(forKey: id)?.cancel()
      }
      // Now and then a late subscriber, which goes after everyone already there.
      if lateOnes < 10, live.count % 5 == 1 {
        lateOnes += 1
        let id = subscribers + lateOnes
        cancellables[id] = subject.sink { _ in log.append(id) }
        live.append(id)
      }
    }
    subject.send(0)
    #expect(log.take().isEmpty)
  }

  @Test("a completion reaches every remaining subscriber once, in attachment order")
  func completionAfterManyCancellations() {
    let subject = PassthroughSubject<Int, Never>()
    let log = Log()
    var cancellables: [AnyCancellable] = []
    for id in 0..<100 {
      cancellables.append(
        subject.sink(receiveCompletion: { _ in log.append(id) }, receiveValue: { _ in }))
    }
    for id in stride(from: 0, to: 100, by: 3) { cancellables[id].cancel() }
    subject.send(completion: .finished)
    #expect(log.take() == (0..<100).filter { $0 % 3 != 0 })
  }

  @Test("subscribers attaching and cancelling on several threads while values are sent")
  func concurrentAttachAndCancel() {
    let subject = PassthroughSubject<Int, Never>()
    let stayed = Log()
    let keep = (0..<50).map { id in subject.sink { _ in stayed.append(id) } }
    DispatchQueue.concurrentPerform(iterations: 4) { worker in
      if worker == 0 {
        for value in 0..<2_000 { subject.send(value) }
      } else {
        for _ in 0..<500 { subject.sink { _ in }.cancel() }
      }
    }
    let received = stayed.take()
    #expect(received.count == 50 * 2_000)
    // Per value, the 50 long-lived subscribers in attachment order.
    #expect(received.prefix(50) == ArraySlice(0..<50))
    withExtendedLifetime(keep) {}
  }
}
