import Sluice
import SluiceTesting

/// Publishers consumed with `for await`, async work wrapped as publishers, and values awaited.
@Sendable func bridgesTour() async -> [String] {
  var lines: [String] = []

  // A publisher as an async sequence: one request(.max(1)) per next(); no `try` for Never.
  var squares: [Int] = []
  for await value in (1...5).publisher.values { squares.append(value * value) }
  lines.append("for await over (1...5).publisher.values: \(squares)")

  // A subject cannot be slowed down, so its values are kept until the consumer gets to them.
  let events = PassthroughSubject<String, Never>()
  var iterator = events.values.makeAsyncIterator()
  for event in ["tap", "swipe", "tap"] { events.send(event) }  // nobody is waiting yet
  events.send(completion: .finished)
  var received: [String] = []
  while let event = await iterator.next() { received.append(event) }
  lines.append("a subject's values, nothing lost: \(received)")

  // Backpressure: a prefetch of 4 never holds more than 4 values ahead of the consumer.
  let upstream = TestPublisher<Int, Never>()
  var prefetching = upstream.values(bufferingPolicy: .prefetch(4)).makeAsyncIterator()
  let firstRequest = upstream.subscriptions[0].requests
  for value in 1...4 { upstream.send(value) }
  _ = await prefetching.next()
  lines.append("prefetch(4) asked for \(firstRequest), held 4, the consumer took 1")

  // An AsyncStream as a publisher: a task pulls one element per unit of demand.
  let (stream, continuation) = AsyncStream<String>.makeStream()
  for word in ["async", "to", "publisher"] { continuation.yield(word) }
  continuation.finish()
  let words = (try? await stream.publisher.allValues()) ?? []
  lines.append("AsyncStream → publisher → allValues(): \(words)")

  // A producer loop whose send(_:) waits for demand.
  let countdown = AsyncProducer<Int, Never> { sender in
    for value in stride(from: 3, through: 1, by: -1) { await sender.send(value) }
  }
  lines.append("AsyncProducer countdown: \((try? await countdown.allValues()) ?? [])")

  // One iterator awaited from two tasks at once, as Combine allows: each value goes to exactly
  // one of them (the one that has waited longest), and both end when the publisher finishes.
  let shared = SharedIterator((1...6).publisher.values.makeAsyncIterator())
  let halves = await withTaskGroup(of: [Int].self) { group in
    for _ in 0..<2 {
      group.addTask {
        var got: [Int] = []
        while let value = await shared.next() { got.append(value) }
        return got
      }
    }
    return await group.reduce(into: []) { $0.append($1) }
  }
  lines.append("two tasks sharing one iterator got \(halves.joined().sorted()), each value once")

  // Awaiting single results.
  let first = (try? await (10...20).publisher.firstValue()) ?? 0
  let last = (try? await (10...20).publisher.lastValue()) ?? 0
  lines.append("firstValue \(first), lastValue \(last)")
  do {
    _ = try await Empty<Int, Never>().singleValue()
  } catch {
    lines.append("singleValue() of Empty: \(error)")
  }

  // Async steps inside a pipeline: asyncMap awaits an actor per value (order kept, at most
  // maxConcurrent at a time), asyncFilter an async predicate, tryAsyncMap an async throwing one.
  let directory = Directory()
  let names = try? await (1...3).publisher
    .asyncMap(maxConcurrent: 2) { id in await directory.name(of: id) }
    .asyncFilter { name in await directory.isActive(name) }
    .allValues()
  lines.append("asyncMap then asyncFilter through an actor: \(names ?? [])")
  do {
    _ = try await (1...3).publisher
      .tryAsyncMap { id throws(LookupError) in
        guard id < 3 else { throw LookupError(id: id) }
        return id
      }
      .allValues()
  } catch {
    lines.append("tryAsyncMap failed: \(error)")
  }

  // An async sequence as a publisher whose pulling task runs at a priority of your choice.
  let (urgent, urgentSink) = AsyncStream<String>.makeStream()
  urgentSink.yield("alarm")
  urgentSink.finish()
  let alarms = (try? await urgent.publisher(priority: .high).allValues()) ?? []
  lines.append("AsyncStream.publisher(priority: .high): \(alarms)")
  return lines
}

/// The actor `asyncMap` and `asyncFilter` await in the bridges tour.
actor Directory {
  private let names = [1: "ada", 2: "brian", 3: "chris"]
  func name(of id: Int) -> String { names[id] ?? "?" }
  func isActive(_ name: String) -> Bool { name != "brian" }
}

/// The error `tryAsyncMap` fails with in the bridges tour.
struct LookupError: Error, CustomStringConvertible {
  let id: Int
  var description: String { "no entry for \(id)" }
}

/// Actors and pipelines: a scheduler that runs actions on an actor, in order, and a sink whose
/// closure runs isolated to an actor.
@Sendable func actorsTour() async -> [String] {
  actor Scoreboard {
    var scores: [Int] = []
    func record(_ score: Int) { scores.append(score) }
  }
  var lines: [String] = []

  let board = Scoreboard()
  let done = AsyncStream<Void>.makeStream()
  let cancellable = [3, 1, 4, 1, 5].publisher.sink(
    isolatedTo: board,
    receiveCompletion: { _, _ in done.continuation.finish() },
    receiveValue: { board, score in board.scores.append(score) })  // no await per value
  for await _ in done.stream {}
  lines.append("sink(isolatedTo:) delivered \(await board.scores) to the actor, in order")
  cancellable.cancel()

  let other = Scoreboard()
  let scheduler = ActorScheduler(other)
  let finished = AsyncStream<Void>.makeStream()
  for score in 1...5 {
    scheduler.schedule { other.assumeIsolated { $0.scores.append(score * 10) } }
  }
  scheduler.schedule { finished.continuation.finish() }
  for await _ in finished.stream {}
  lines.append("ActorScheduler ran actions on the actor in order: \(await other.scores)")

  // A task kept, and cancelled, with a pipeline's other cancellables.
  var cancellables = Set<AnyCancellable>()
  let task = Task { () -> String in
    let (forever, _) = AsyncStream<Never>.makeStream()
    for await _ in forever {}
    return Task.isCancelled ? "cancelled with the other cancellables" : "still running"
  }
  task.store(in: &cancellables)
  cancellables.removeAll()
  lines.append("a stored Task was \(await task.value)")
  return lines
}

/// One async iterator handed to several tasks. A publisher's `values` iterator is a handle on
/// one shared bridge, so each task can call `next()` on its own copy.
struct SharedIterator<Base: AsyncIteratorProtocol>: @unchecked Sendable
where Base.Failure == Never {
  // Safety: only for iterators whose copies share one state that may be awaited from several
  // tasks at once, as a publisher's `values` iterator's do.
  let base: Base
  init(_ base: Base) { self.base = base }
  func next() async -> Base.Element? {
    var copy = base
    return await copy.next(isolation: nil)
  }
}
