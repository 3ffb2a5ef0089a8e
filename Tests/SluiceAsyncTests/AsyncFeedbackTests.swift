import Foundation
import SluiceAsync
import SluiceTestSupport
import Synchronization
import Testing

/// Adversarial (issue 37): async bridges in feedback with subjects — tasks consuming `values` of a
/// merge and sending back into its subjects while threads of their own send into them.
@Suite("Liveness, attacked: async bridges in feedback with subjects")
struct AsyncFeedbackTests {
  final class Counter: Sendable {
    let value = Atomic<Int>(0)
  }

  @Test("tasks consuming values (one at a time and prefetch(16)) send back into the sources")
  func valuesFeedback() async {
    let subjects = (0..<4).map { _ in PassthroughSubject<Int, Never>() }
    let current = CurrentValueSubject<Int, Never>(0)
    let merged = subjects[0].merge(with: subjects[1], subjects[2], subjects[3], current)
      .eraseToAnyPublisher()
    let consumed = Counter()
    let stop = Counter()
    let shared = UncheckedSendable((subjects, current, merged))
    // Two consumers: `values` (demand one at a time) and `values(bufferingPolicy: .prefetch(16))`.
    let first = Task {
      for await value in shared.value.2.values {
        consumed.value.add(1, ordering: .relaxed)
        if value > 0, value % 3 == 0 { shared.value.0[value % 4].send(-value) }
        if value > 0, value % 5 == 0 { shared.value.1.send(-value) }
        if stop.value.load(ordering: .relaxed) != 0 { break }
      }
    }
    let second = Task {
      for await value in shared.value.2.values(bufferingPolicy: .prefetch(16)) {
        consumed.value.add(1, ordering: .relaxed)
        if value > 0, value % 4 == 0 { shared.value.0[(value / 4) % 4].send(-value) }
        if value > 0, value % 7 == 0 { shared.value.1.value = -value }
        if stop.value.load(ordering: .relaxed) != 0 { break }
      }
    }
    let returned = await allReturn(threads: 5, deadline: .seconds(120)) { index in
      for i in 1...20_000 {
        if index == 4 {
          shared.value.1.send(i)
        } else {
          shared.value.0[index].send((index + 1) * 1_000_000 + i)
        }
      }
    }
    stop.value.store(1, ordering: .relaxed)
    // Wake the consumers so that they see `stop`.
    for subject in subjects { subject.send(1) }
    current.send(1)
    #expect(returned, "every sender returned (no deadlock)")
    let ended = await allReturn(threads: 1, deadline: .seconds(30)) { _ in
      let done = DispatchSemaphore(value: 0)
      Task { [first, second] in
        _ = await first.value
        _ = await second.value
        done.signal()
      }
      while done.wait(timeout: .now() + .milliseconds(10)) == .timedOut {
        for subject in subjects { subject.send(1) }
        current.send(1)
      }
    }
    #expect(ended, "the consumers ended")
    #expect(consumed.value.load(ordering: .relaxed) > 0)
  }
}
