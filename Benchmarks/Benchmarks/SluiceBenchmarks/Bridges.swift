import AsyncAlgorithms
import OpenCombine
import Sluice
import Synchronization

func bridgeBenchmarks() {
  let demandOne = "publisher.values, demand 1, synchronous upstream (per element)"
  measureAsync(demandOne, "Sluice") {
    var count = 0
    for await _ in (0..<elements).publisher.values { count += 1 }
    check(count, elements, demandOne)
  }
  measureAsync(demandOne, "OpenCombine") {
    var count = 0
    for await _ in OpenCombine.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<elements).values
    {
      count += 1
    }
    check(count, elements, demandOne)
  }
  measureAsync(demandOne, "continuation ping-pong (one hand-off between two tasks)") {
    await pingPong(elements)
  }

  let handOff = "producer task → consumer task (per element)"
  measureAsync(handOff, "Sluice") {
    check(await producerThroughValues(.prefetch(64)), elements, handOff)
  }
  for policy in [AsyncBufferingPolicy.demandOne, .unbounded] {
    measureAsync(handOff, "Sluice \(policy)") {
      check(await producerThroughValues(policy), elements, handOff)
    }
  }
  // The dropping policies request `.unlimited`, so a producer faster than the consumer loses
  // values by design: their rows report the delivered share instead of checking it.
  for policy in [AsyncBufferingPolicy.bufferingNewest(64), .bufferingOldest(64)] {
    measureDelivery(handOff, "Sluice \(policy)") { await producerThroughValues(policy) }
  }
  measureAsync(handOff, "AsyncStream") {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    let producer = Task {
      for value in 0..<elements { continuation.yield(value) }
      continuation.finish()
    }
    var count = 0
    for await _ in stream { count += 1 }
    await producer.value
    check(count, elements, handOff)
  }
  measureAsync(handOff, "AsyncThrowingStream") { await throwingStreamHandOff(handOff) }
  measureAsync(handOff, "AsyncChannel (backpressured)") {
    let channel = AsyncChannel<Int>()
    let producer = Task {
      for value in 0..<elements { await channel.send(value) }
      channel.finish()
    }
    var count = 0
    for await _ in channel { count += 1 }
    await producer.value
    check(count, elements, handOff)
  }

  let subject = "subject fed from another task → values, lossless (per element)"
  for (name, policy) in [
    ("Sluice", AsyncBufferingPolicy.unbounded),
    ("Sluice bufferingOldest(∞)", .bufferingOldest(.max)),
  ] {
    measureAsync(subject, name) {
      let source = Sluice.PassthroughSubject<Int, Never>()
      var iterator = source.values(bufferingPolicy: policy).makeAsyncIterator()
      let producer = Task {
        for value in 0..<elements { source.send(value) }
        source.send(completion: .finished)
      }
      var count = 0
      while await iterator.next() != nil { count += 1 }
      await producer.value
      check(count, elements, subject)
    }
  }
  measureAsync(subject, "AsyncThrowingStream") { await throwingStreamHandOff(subject) }
  // Combine's `values` requests one value at a time, so a subject drops whatever it sends while
  // the consumer is not waiting: this row shows how much is lost.
  measureDelivery(subject, "OpenCombine") {
    let source = ThreadSafe(OpenCombine.PassthroughSubject<Int, Never>())
    var iterator = source.value.values.makeAsyncIterator()
    let producer = Task {
      for value in 0..<elements { source.value.send(value) }
      source.value.send(completion: .finished)
    }
    var count = 0
    while await iterator.next() != nil { count += 1 }
    await producer.value
    return count
  }

  let pull = "AsyncSequence.publisher → subscriber (per element)"
  for (name, initial, perValue) in [
    ("Sluice", Sluice.Subscribers.Demand.unlimited, Sluice.Subscribers.Demand.none),
    ("Sluice .max(1) per value", .max(1), .max(1)),
  ] {
    measureAsync(pull, name) {
      let (stream, continuation) = AsyncStream<Int>.makeStream()
      for value in 0..<elements { continuation.yield(value) }
      continuation.finish()
      let tally = Tally()
      await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        stream.publisher.subscribe(
          Sluice.AnySubscriber<Int, Never>(
            receiveSubscription: { $0.request(initial) },
            receiveValue: { value in
              consume(tally, value)
              return perValue
            },
            receiveCompletion: { _ in done.resume() }))
      }
      check(tally.count, elements, pull)
    }
  }
  measureAsync(pull, "for await over the same sequence") {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    for value in 0..<elements { continuation.yield(value) }
    continuation.finish()
    var count = 0
    for await _ in stream { count += 1 }
    check(count, elements, pull)
  }
  // The bridge pulls in a task of its own; so does this anchor (a pre-filled stream read on
  // the thread that filled it is cheaper: its buffer is still in that core's cache).
  measureAsync(pull, "for await in a task of its own") {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    for value in 0..<elements { continuation.yield(value) }
    continuation.finish()
    let count = await Task {
      var count = 0
      for await _ in stream { count += 1 }
      return count
    }.value
    check(count, elements, pull)
  }

  // The same over a sequence that allocates nothing per element (async-algorithms' `.async` of
  // a range): what the bridge itself costs per element, allocations included.
  let pullSync = "AsyncSequence.publisher over (0..<n).async → subscriber (per element)"
  measureAsync(pullSync, "Sluice") {
    let tally = Tally()
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      (0..<elements).async.publisher.subscribe(
        Sluice.AnySubscriber<Int, Never>(
          receiveSubscription: { $0.request(.unlimited) },
          receiveValue: { value in
            consume(tally, value)
            return .none
          },
          receiveCompletion: { _ in done.resume() }))
    }
    check(tally.count, elements, pullSync)
  }
  measureAsync(pullSync, "for await over the same sequence") {
    let tally = Tally()
    for await value in (0..<elements).async { consume(tally, value) }
    check(tally.count, elements, pullSync)
  }
}

/// An `AsyncProducer` of `elements` values consumed through `values(bufferingPolicy:)`; returns
/// how many arrived.
func producerThroughValues(_ policy: AsyncBufferingPolicy) async -> Int {
  let producer = AsyncProducer<Int, Never> { sender in
    for value in 0..<elements { await sender.send(value) }
  }
  var count = 0
  for await _ in producer.values(bufferingPolicy: policy) { count += 1 }
  return count
}

/// A producer task yielding `elements` values into an `AsyncThrowingStream`, consumed here.
func throwingStreamHandOff(_ scenario: String) async {
  let (stream, continuation) = AsyncThrowingStream<Int, any Error>.makeStream()
  let producer = Task {
    for value in 0..<elements { continuation.yield(value) }
    continuation.finish()
  }
  var count = 0
  do { for try await _ in stream { count += 1 } } catch {}
  await producer.value
  check(count, elements, scenario)
}

/// `count` round trips of one value between two tasks through bare continuations: the floor
/// for any demand-1 bridge.
func pingPong(_ count: Int) async {
  let ping = Slot()
  let pong = Slot()
  let echo = Task {
    for _ in 0..<count { pong.put(await ping.take()) }
  }
  for value in 0..<count {
    ping.put(value)
    _ = await pong.take()
  }
  await echo.value
}

/// A one-value mailbox: `put` resumes a waiting `take` or leaves the value for the next one.
final class Slot: Sendable {
  private struct State {
    var waiter: UnsafeContinuation<Int, Never>?
    var value: Int?
  }

  private let state = Mutex(State())

  func put(_ value: Int) {
    let waiter = state.withLock { state -> UnsafeContinuation<Int, Never>? in
      guard let waiter = state.waiter else {
        state.value = value
        return nil
      }
      state.waiter = nil
      return waiter
    }
    waiter?.resume(returning: value)
  }

  func take() async -> Int {
    await withUnsafeContinuation { continuation in
      let value = state.withLock { state -> Int? in
        if let value = state.value {
          state.value = nil
          return value
        }
        state.waiter = continuation
        return nil
      }
      if let value { continuation.resume(returning: value) }
    }
  }
}

/// An OpenCombine object that is thread-safe but not declared `Sendable`.
struct ThreadSafe<Value>: @unchecked Sendable {
  // Safety: only used for OpenCombine subjects, which lock their own state on every call.
  let value: Value
  init(_ value: Value) { self.value = value }
}
