import SluiceAsync
import SluiceCore
import Testing

/// Awaiting a chain of non-`Sendable` operators from the main actor and from an actor: the
/// awaiting APIs run in the caller's isolation, so the chain never crosses an isolation boundary
/// (in Swift 6 mode this file does not compile otherwise).
@Suite("Awaiting in the caller's isolation")
struct IsolatedAwaitingTests {
  @MainActor final class ViewModel {
    var total = 0
    var doubled: [Int] = []
    var last = 0
    var only = 0

    func load(_ stream: AsyncStream<Int>) async throws {
      // The chain (a non-Sendable value, with closures that capture nothing Sendable-checked)
      // is built and awaited on the main actor.
      doubled = try await stream.publisher.map { $0 * 2 }.filter { $0 > 2 }.collect()
        .firstValue()
      total = try await [1, 2, 3].publisher.map { $0 * self.scale }.reduce(0, +).lastValue()
      last = try await [4, 5].publisher.map { $0 + self.offset() }.lastValue()
      only = try await Just(9).map { $0 * self.scale }.singleValue()
      doubled += try await [7].publisher.filter { _ in
        MainActor.assertIsolated(); return true
      }
      .allValues()
    }

    var scale: Int { 10 }
    func offset() -> Int { 1 }
  }

  actor Ledger {
    var entries: [String] = []
    let prefix = "#"

    func record(_ values: [Int]) async throws {
      let line = try await values.publisher.map { "\($0)" }.collect().map { $0.joined() }
        .firstValue()
      entries.append(prefix + line)
      let count = try await values.publisher.count().singleValue()
      entries.append("\(count)")
    }
  }

  @Test @MainActor func aChainIsAwaitedOnTheMainActor() async throws {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    for value in [1, 2, 3] { continuation.yield(value) }
    continuation.finish()
    let model = ViewModel()
    try await model.load(stream)
    #expect(model.doubled == [4, 6, 7])
    #expect(model.total == 60)
    #expect(model.last == 6)
    #expect(model.only == 90)
  }

  @Test func aChainIsAwaitedInsideAnActor() async throws {
    let ledger = Ledger()
    try await ledger.record([1, 2, 3])
    #expect(await ledger.entries == ["#123", "3"])
  }

  @Test func aTaskOnTheMainActorAwaitsAChain() async throws {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    for value in [1, 2, 3] { continuation.yield(value) }
    continuation.finish()
    let result = try await Task { @MainActor in
      try await stream.publisher.map { $0 * 2 }.filter { $0 > 2 }.collect().firstValue()
    }.value
    #expect(result == [4, 6])
  }
}
