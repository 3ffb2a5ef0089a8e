import Foundation
import SluiceAsync
import SluiceTestSupport
import Synchronization
import Testing

/// Adversarial checks of 93e7678 (issue 37) through the async bridges: with `.demandOne`, each
/// `next()` is a `request(.max(1))`, and on a `CurrentValueSubject` / `@Published` that went
/// without demand it replays the newest owed value — behind a turn waiter when another thread
/// is delivering.
@Suite("Replay behind a turn waiter, attacked: values (adv37c)")
struct ReplayTurnAdversarialAsyncTests {
  /// Eight tasks iterate `values(bufferingPolicy: .demandOne)` of one `CurrentValueSubject`
  /// (every `next()` a replay of the newest owed value) while two threads send and a third
  /// keeps attaching and cancelling sinks: every consumer gets its 300 values, each sender's in
  /// order, none twice; nothing hangs.
  @Test("eight demandOne consumers of a CurrentValueSubject while threads send and attach")
  func demandOneConsumersWhileThreadsSend() async {
    let subject = CurrentValueSubject<Int, Never>(0)
    let busy = subject.sink { _ in }
    let stop = Atomic<Bool>(false)
    let senders = Task.detached {
      await allReturn(threads: 3, deadline: .seconds(600)) { index in
        var i = 1
        while !stop.load(ordering: .relaxed) {
          if index < 2 {
            subject.send(SenderCoded.value(sender: index, index: i))
          } else {
            subject.sink { _ in }.cancel()
          }
          i += 1
        }
      }
    }
    let results = await withTaskGroup(of: (Bool, Int).self) { group in
      for _ in 0..<8 {
        group.addTask {
          var received: [Int] = []
          for await value in subject.values(bufferingPolicy: .demandOne) {
            received.append(value)
            if received.count == 300 { break }
          }
          return (SenderCoded.inOrderPerSender(received.dropFirst()), received.count)
        }
      }
      var all: [(Bool, Int)] = []
      for await result in group { all.append(result) }
      return all
    }
    stop.store(true, ordering: .relaxed)
    #expect(await senders.value, "the senders' calls returned")
    for (ordered, count) in results {
      #expect(ordered, "a sender's values out of order or twice")
      #expect(count == 300)
    }
    withExtendedLifetime(busy) {}
  }

  /// `@Published` on a model set from four threads, read by six tasks through
  /// `$x.values` (`.unbounded`) and `$x.values(bufferingPolicy: .demandOne)` (a replay per
  /// `next()`): each gets its 200 values, each setter's in order, none twice.
  @Test("@Published set from four threads, read by tasks")
  func publishedSetFromFourThreads() async {
    final class Model: @unchecked Sendable {
      // Safety: the property wrapper's subject synchronises its storage.
      @Published var x = 0
    }
    let model = Model()
    // Taken once: `$x` is a `mutating get` (as in Combine), so reading it from several tasks
    // at once is an access race on the model (the thread sanitizer reports it).
    nonisolated(unsafe) let publisher = model.$x  // only read (subscribed to) by the tasks
    let stop = Atomic<Bool>(false)
    let setters = Task.detached {
      await allReturn(threads: 4, deadline: .seconds(600)) { index in
        var i = 1
        while !stop.load(ordering: .relaxed) {
          model.x = SenderCoded.value(sender: index, index: i)
          i += 1
        }
      }
    }
    let results = await withTaskGroup(of: Bool.self) { group in
      for consumer in 0..<6 {
        group.addTask {
          var received: [Int] = []
          let policy: AsyncBufferingPolicy = consumer % 2 == 0 ? .demandOne : .unbounded
          for await value in publisher.values(bufferingPolicy: policy) {
            received.append(value)
            if received.count == 200 { break }
          }
          return SenderCoded.inOrderPerSender(received.dropFirst()) && received.count == 200
        }
      }
      var all: [Bool] = []
      for await result in group { all.append(result) }
      return all
    }
    stop.store(true, ordering: .relaxed)
    #expect(await setters.value)
    #expect(results.allSatisfy { $0 }, "a consumer saw values out of order, twice, or too few")
  }
}
