import Foundation
import SluiceAsync
import SluiceTestSupport
import Synchronization
import Testing

/// Adversarial checks of 9282f73 (issue 37) through the async bridges: `values` requests one at
/// a time, so each `next()` is a request that the subject's turn may have to serve. On threads
/// of their own: two senders that never pause and a consumer on a cooperative pool of two
/// threads, under the thread sanitizer with the whole suite running, starved the consumer past
/// the senders' deadline (888 s, while every iteration did finish).
@Suite("Request in the subject's turn, attacked: values", .onThreadsOfTheirOwn)
struct RequestTurnAttackAsyncTests {
  @Test("CurrentValueSubject.values while two threads send: the current value first, in order")
  func valuesWhileOthersSend() async {
    for _ in 0..<20 {
      let subject = CurrentValueSubject<Int, Never>(0)
      let busy = subject.sink { _ in }
      let stop = Atomic<Bool>(false)
      let senders = Task.detached {
        await allReturn(threads: 2, deadline: .seconds(600)) { index in
          var i = 1
          while !stop.load(ordering: .relaxed) {
            subject.send(SenderCoded.value(sender: index, index: i))
            i += 1
          }
        }
      }
      var received: [Int] = []
      for await value in subject.values {
        received.append(value)
        if received.count == 500 { break }
      }
      stop.store(true, ordering: .relaxed)
      #expect(await senders.value)
      #expect(SenderCoded.inOrderPerSender(received) && received.count == 500)
      withExtendedLifetime(busy) {}
    }
  }

  @Test("@Published values read from a task, nobody sending: the current value at once")
  func publishedValuesNobodySending() async {
    final class Model: @unchecked Sendable {
      // Safety: written only before the reads.
      @Published var x = 5
    }
    let model = Model()
    for _ in 0..<200 {
      var iterator = model.$x.values.makeAsyncIterator()
      let first = await iterator.next()
      #expect(first == 5)
    }
  }
}
