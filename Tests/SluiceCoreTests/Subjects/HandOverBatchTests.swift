import Foundation
import SluiceTestSupport
import Synchronization
import Testing

@testable import SluiceCore

/// The holder of a subject's turn takes the granted values queued for it in one lock round (a
/// batch, ``SharedSubscriberList/Next/runValues(_:from:)``) instead of one lock round each —
/// only while nothing else is queued (a waiter, a completion, a release, a replay, a drain): those
/// it takes one at a time, deciding on each under the lock. Played step by step on one thread,
/// as ``HandOverInterleavingTests`` does.
extension HandOverInterleavingTests {
  /// Takes the next work under the subject's lock, as the holder's `runHandedOver` does.
  func next(_ core: SubjectCore<Int, Never>, by holder: DeliveryContext) -> List.Next {
    core.state.withLock { core.subscribers.nextHandedOver(&$0.subscribers, holder) }
  }

  /// The values of a batch, from its first index on.
  func values(of batch: [List.HandedOver?], from head: Int) -> [Int] {
    batch[head...].map { item -> Int in
      guard case .value(let value, _)? = item else { return -1 }
      return value
    }
  }

  @Test("granted values queued for the holder are taken in one lock round, oldest first")
  func grantedValuesAreTakenAsABatch() {
    let senders = Senders()
    let (subject, received, sink) = subjectWithSink()
    let core = subject.core
    guard let address = senderATakesTheListAndDelivers0(core, senders) else { return }
    for value in 1...5 { #expect(handOff(value, on: core, by: senders.b) == .busy) }
    #expect(core.subscribers.leave(held: address, thread: senders.a.identity) == .kept)
    guard case .runValues(let batch, let head) = next(core, by: senders.a) else {
      Issue.record("five granted values were not taken as one batch")
      return
    }
    #expect(values(of: batch, from: head) == [1, 2, 3, 4, 5])
    // The queue is empty now (its buffer went with the batch), but the turn is still A's, with
    // `pending` set: a hand-off meanwhile is queued for A, and nobody can take the turn.
    #expect(core.state.withLock { $0.subscribers.isIdle })
    #expect(isPending(core))
    #expect(core.subscribers.claim(by: senders.c.identity) == .busy)
    #expect(handOff(6, on: core, by: senders.c) == .busy)
    // (The batch is dropped here; `runHandedOver` delivers it.)
    #expect(leave(core, as: senders.a, held: address))
    senders.a.exit()
    #expect(received.all == [0, 6])
    #expect(core.subscribers.reader.load(ordering: .relaxed) == 0)
    withExtendedLifetime(sink) {}
  }

  @Test("a single queued value, a waiter or a completion among the values: taken one at a time")
  func otherWorkStopsTheBatch() {
    let senders = Senders()
    let (subject, received, sink) = subjectWithSink()
    let core = subject.core
    guard let address = senderATakesTheListAndDelivers0(core, senders) else { return }
    #expect(handOff(1, on: core, by: senders.b) == .busy)
    #expect(core.subscribers.leave(held: address, thread: senders.a.identity) == .kept)
    guard case .run(.value(1, _)) = next(core, by: senders.a) else {
      Issue.record("one value was not taken alone")
      return
    }
    // Past the grants a sender queues a waiter: from then on the holder decides on each item.
    for value in 2...TurnWaiter.grantsPerTurn {
      #expect(handOff(value, on: core, by: senders.b) == .busy)
    }
    guard case .wait(let waiter) = handOff(100, on: core, by: senders.c) else {
      Issue.record("C did not wait past the grants")
      return
    }
    #expect(core.state.withLock { $0.subscribers.otherWork } == 1)
    guard case .run(.value(2, _)) = next(core, by: senders.a) else {
      Issue.record("values ahead of a waiter were taken as a batch")
      return
    }
    // The rest runs as `leave` runs it: the values, then the waiter's value for it.
    #expect(leave(core, as: senders.a, held: address))
    senders.a.exit()
    #expect(waiter.wait() == false, "dismissed: delivered for C")
    #expect(received.all == [0] + Array(3...TurnWaiter.grantsPerTurn) + [100])
    #expect(core.state.withLock { $0.subscribers.otherWork } == 0)
    withExtendedLifetime(sink) {}
  }

  @Test("a completion queued behind values is delivered after all of them, never in a batch")
  func completionBehindValues() {
    let senders = Senders()
    let subject = PassthroughSubject<Int, Never>()
    let recorder = CompletionRecorder()
    let sink = subject.sink(
      receiveCompletion: { _ in recorder.append(-1) }, receiveValue: { recorder.append($0) })
    let core = subject.core
    guard let address = senderATakesTheListAndDelivers0(core, senders) else { return }
    for value in 1...3 { #expect(handOff(value, on: core, by: senders.b) == .busy) }
    // This test thread is not A: its completion is handed to A's turn, behind the values.
    subject.send(completion: .finished)
    #expect(core.state.withLock { $0.subscribers.otherWork } == 1)
    #expect(leave(core, as: senders.a, held: address))
    senders.a.exit()
    #expect(recorder.all == [0, 1, 2, 3, -1])
    withExtendedLifetime(sink) {}
  }

  @Test("values handed over while a batch is delivered follow it; the buffer comes back")
  func handOffsDuringABatchFollowIt() {
    let senders = Senders()
    let subject = PassthroughSubject<Int, Never>()
    let recorder = CompletionRecorder()
    let core = subject.core
    // On value 2 (in the batch), C hands 10 and 11 over: queued for A while A delivers.
    let sink = subject.sink { value in
      recorder.append(value)
      if value == 2 {
        for more in 10...11 {
          let claim = core.state.withLock { state in
            core.subscribers.claimOrHandOff(by: senders.c, &state.subscribers) {
              .value(more, $0)
            }
          }
          if claim != .busy { Issue.record("C's hand-off during a batch was not queued: \(claim)") }
        }
      }
    }
    guard let address = senderATakesTheListAndDelivers0(core, senders) else { return }
    for value in 1...4 { #expect(handOff(value, on: core, by: senders.b) == .busy) }
    #expect(leave(core, as: senders.a, held: address))
    senders.a.exit()
    #expect(recorder.all == [0, 1, 2, 3, 4, 10, 11])
    // Two batches ([1, 2, 3, 4], then [10, 11]), the buffers swapping roles: both came back
    // with their capacity, so later batches need no allocation.
    let capacities = core.state.withLock {
      [$0.subscribers.handedOver.capacity, $0.subscribers.spareBuffer.capacity]
    }
    #expect(capacities.min()! >= 2 && capacities.max()! >= 4)
    withExtendedLifetime(sink) {}
  }

  @Test("a subscriber cancelled in the middle of a batch receives none of the rest of it")
  func cancelInsideABatch() {
    let senders = Senders()
    let subject = PassthroughSubject<Int, Never>()
    let first = CompletionRecorder()
    let second = CompletionRecorder()
    let core = subject.core
    let cancellable = CancellableSlot()
    cancellable.value = subject.sink { value in
      first.append(value)
      if value == 2 { cancellable.value?.cancel() }
    }
    let other = subject.sink { second.append($0) }
    guard let address = senderATakesTheListAndDelivers0(core, senders) else { return }
    for value in 1...4 { #expect(handOff(value, on: core, by: senders.b) == .busy) }
    #expect(leave(core, as: senders.a, held: address))
    senders.a.exit()
    #expect(first.all == [0, 1, 2])
    #expect(second.all == [0, 1, 2, 3, 4])
    withExtendedLifetime(other) {}
  }
}

/// What a subscriber received, in order (-1 for the completion).
final class CompletionRecorder: @unchecked Sendable {
  // Safety: every access takes `lock`.
  private let lock = NSLock()
  private var values: [Int] = []
  func append(_ value: Int) { lock.withLock { values.append(value) } }
  var all: [Int] { lock.withLock { values } }
}

/// A sink's cancellable, reachable from inside its own closure.
final class CancellableSlot: @unchecked Sendable {
  // Safety: set once before any value is sent, then only read, on the test's one thread.
  var value: AnyCancellable?
}
