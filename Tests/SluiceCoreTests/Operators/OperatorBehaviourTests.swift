import Foundation
import SluiceCore
import SluiceTestSupport
import SluiceTesting
import Testing

/// Combine's behaviour that the shared rule suite does not pin: demand sent upstream, early
/// termination, errors thrown by closures, resubscription, descriptions.
@Suite("Operator behaviour", .onThreadsOfTheirOwn)
struct OperatorBehaviourTests {
  /// A test publisher, the operator applied to it, and a recorder with `demand`.
  func attach<P: Publisher>(
    _ demand: Subscribers.Demand = .unlimited,
    _ apply: (TestPublisher<Int, TestError>) -> P
  ) -> (TestPublisher<Int, TestError>, RecordingSubscriber<P.Output, P.Failure>) {
    let source = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<P.Output, P.Failure>(initialDemand: demand)
    apply(source).subscribe(recorder)
    return (source, recorder)
  }

  @Test("filter asks upstream for one more for each rejected value")
  func filterDemand() throws {
    let (source, recorder) = attach(.max(2)) { $0.filter { $0 > 10 } }
    for value in [1, 20, 2, 3, 30] { source.send(value) }
    let upstream = try #require(source.subscriptions.first)
    #expect(recorder.values == [20, 30])
    #expect(upstream.requests == [.max(2)])
    #expect(upstream.totalDemand == .max(5))  // 2 requested + 1 per rejected value
  }

  @Test(
    "values racing cancel() through a step operator: the downstream is released once, after both")
  func stepValuesRacingCancel() async {
    for round in 0..<300 {
      weak var weakProbe: Probe<Int, Never>?
      let subscription = Box<any Subscription>()
      let upstream = CapturingPublisher<Int>()
      do {
        let probe = Probe<Int, Never>(
          onSubscription: {
            subscription.set($0); $0.request(.unlimited)
          },
          onValue: { _ in .none })
        weakProbe = probe
        upstream.removeDuplicates().subscribe(probe)
      }
      let shared = Shared((upstream.send, subscription.value!))
      let cancelled = Box<Bool>(false)
      await simultaneously(
        {
          // From before cancel() until after it: some value is in flight when it closes.
          var value = 0
          while cancelled.value != true || value % 64 != 0 {
            _ = shared.value.0(value)
            value += 1
          }
        },
        {
          shared.value.1.cancel()
          cancelled.set(true)
        })
      withExtendedLifetime(shared) {
        #expect(weakProbe == nil, "round \(round): downstream still held after cancel()")
      }
    }
  }

  @Test("first() asks for .unlimited and cancels upstream after the first value")
  func firstCancels() throws {
    let (source, recorder) = attach(.max(1)) { $0.first() }
    let upstream = try #require(source.subscriptions.first)
    #expect(upstream.requests == [.unlimited])
    source.send(5)
    #expect(upstream.isCancelled)
    #expect(recorder.values == [5])
    #expect(recorder.completion == .finished)
  }

  @Test("a reducing result waits for demand")
  func reduceWaitsForDemand() {
    let (source, recorder) = attach(.none) { $0.reduce(0, +) }
    source.send(1)
    source.send(2)
    source.send(completion: .finished)
    #expect(recorder.values.isEmpty)
    recorder.request(.max(1))
    #expect(recorder.values == [3])
    #expect(recorder.completion == .finished)
  }

  @Test("a throwing closure cancels upstream and fails downstream exactly once")
  func tryOperatorsFailOnce() throws {
    struct Boom: Error {}
    let operators: [(TestPublisher<Int, TestError>) -> AnyPublisher<Int, any Error>] = [
      { $0.tryMap { _ in throw Boom() }.eraseToAnyPublisher() },
      { $0.tryFilter { _ in throw Boom() }.eraseToAnyPublisher() },
      { $0.tryCompactMap { _ in throw Boom() }.eraseToAnyPublisher() },
      { $0.tryScan(0) { _, _ in throw Boom() }.eraseToAnyPublisher() },
      { $0.tryReduce(0) { _, _ in throw Boom() }.eraseToAnyPublisher() },
      { $0.tryPrefix { _ in throw Boom() }.eraseToAnyPublisher() },
      { $0.tryDrop { _ in throw Boom() }.eraseToAnyPublisher() },
      { $0.tryFirst { _ in throw Boom() }.eraseToAnyPublisher() },
      { $0.tryLast { _ in throw Boom() }.eraseToAnyPublisher() },
      { $0.tryContains { _ in throw Boom() }.map { $0 ? 1 : 0 }.eraseToAnyPublisher() },
      { $0.tryAllSatisfy { _ in throw Boom() }.map { $0 ? 1 : 0 }.eraseToAnyPublisher() },
      { $0.tryRemoveDuplicates { _, _ in throw Boom() }.eraseToAnyPublisher() },
      { $0.tryMax { _, _ in throw Boom() }.eraseToAnyPublisher() },
    ]
    for (index, apply) in operators.enumerated() {
      let (source, recorder) = attach(.unlimited, apply)
      source.send(1)
      source.send(2)
      source.send(3)
      let upstream = try #require(source.subscriptions.first)
      #expect(upstream.isCancelled, "operator \(index)")
      #expect(recorder.events.filter(\.isCompletion).count == 1, "operator \(index)")
      if case .failure(let error) = recorder.completion {
        #expect(error is Boom, "operator \(index)")
      } else {
        Issue.record("operator \(index) did not fail: \(String(describing: recorder.completion))")
      }
    }
  }

  @Test("retry resubscribes 100,000 times to a synchronous failing publisher without recursion")
  func retryIsIterative() {
    let attempts = Box<Int>(0)
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .unlimited)
    Deferred {
      attempts.update { $0 = ($0 ?? 0) + 1 }
      return Record<Int, TestError>(output: [1], completion: .failure(TestError()))
    }
    .retry(100_000)
    .subscribe(recorder)
    #expect(attempts.value == 100_001)
    #expect(recorder.values.count == 100_001)
    #expect(recorder.completion == .failure(TestError()))
  }

  @Test("retry carries unused demand over to the next attempt")
  func retryCarriesDemand() throws {
    let source = TestPublisher<Int, TestError>()
    let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(3))
    source.retry(1).subscribe(recorder)
    source.send(1)
    source.send(completion: .failure(TestError()))
    #expect(source.subscriptions.count == 2)
    #expect(source.subscriptions.last?.requests == [.max(2)])
    source.send(2)
    source.send(completion: .failure(TestError(code: 2)))
    #expect(recorder.values == [1, 2])
    #expect(recorder.completion == .failure(TestError(code: 2)))
  }

  @Test("catch switches to the handler's publisher with the remaining demand")
  func catchSwitches() throws {
    let source = TestPublisher<Int, TestError>()
    let fallback = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(4))
    source.catch { _ in fallback }.subscribe(recorder)
    source.send(1)
    source.send(completion: .failure(TestError()))
    #expect(fallback.subscriptions.first?.requests == [.max(3)])
    fallback.send(9)
    fallback.send(completion: .finished)
    #expect(recorder.values == [1, 9])
    #expect(recorder.completion == .finished)
  }

  @Test("tryCatch fails with the handler's error")
  func tryCatchFails() {
    struct Boom: Error {}
    let recorder = RecordingSubscriber<Int, any Error>(initialDemand: .unlimited)
    Fail<Int, TestError>(error: TestError()).tryCatch { _ -> Just<Int> in throw Boom() }
      .subscribe(recorder)
    if case .failure(let error) = recorder.completion {
      #expect(error is Boom)
    } else {
      Issue.record("expected a failure")
    }
  }

  @Test("dropFirst adds its count to the first request")
  func dropFirstDemand() throws {
    let (source, recorder) = attach(.max(2)) { $0.dropFirst(3) }
    for value in 1...5 { source.send(value) }
    #expect(try #require(source.subscriptions.first).requests == [.max(5)])
    #expect(recorder.values == [4, 5])
    recorder.cancel()
  }

  @Test("collect(n) asks n values per array and publishes the partial last one")
  func collectByCount() throws {
    let (source, recorder) = attach(.max(2)) { $0.collect(3) }
    #expect(try #require(source.subscriptions.first).requests == [.max(6)])
    for value in 1...4 { source.send(value) }
    source.send(completion: .finished)
    #expect(recorder.values == [[1, 2, 3], [4]])
  }

  @Test("prefix(n) finishes and cancels upstream right after the nth value")
  func prefixFinishes() throws {
    let (source, recorder) = attach { $0.prefix(2) }
    source.send(1)
    source.send(2)
    #expect(try #require(source.subscriptions.first).isCancelled)
    #expect(recorder.values == [1, 2])
    #expect(recorder.completion == .finished)
  }

  @Test("replaceError publishes its value when the downstream has demand left")
  func replaceErrorWaits() {
    let (source, recorder) = attach(.max(1)) { $0.replaceError(with: -1) }
    source.send(1)
    source.send(completion: .failure(TestError()))
    #expect(recorder.values == [1])
    recorder.request(.max(1))
    #expect(recorder.values == [1, -1])
    #expect(recorder.completion == .finished)
  }

  @Test("min and max keep the first of equal values; count counts")
  func mathematics() {
    struct Item: Equatable {
      let key: Int
      let tag: String
    }
    let items = [
      Item(key: 2, tag: "a"), Item(key: 1, tag: "b"), Item(key: 1, tag: "c"),
      Item(key: 2, tag: "d"),
    ]
    var results: [String] = []
    _ = items.publisher.min { $0.key < $1.key }.sink { results.append($0.tag) }
    _ = items.publisher.max { $0.key < $1.key }.sink { results.append($0.tag) }
    _ = items.publisher.count().sink { results.append("\($0)") }
    #expect(results == ["b", "a", "4"])
  }

  @Test("print writes Combine's lines")
  func printFormat() {
    final class Lines: TextOutputStream, @unchecked Sendable {
      var text = ""
      func write(_ string: String) { text += string }
    }
    var stream = Lines()
    let lines = stream
    _ = Just(1).print("p", to: stream).sink { _ in }
    stream = Lines()
    #expect(
      lines.text == """
        p: receive subscription: (Just)
        p: request unlimited
        p: receive value: (1)
        p: receive finished

        """)
  }

  @Test("print prints receive cancel on every cancel, also after the completion, as Combine")
  func printCancelEveryTime() throws {
    final class Lines: TextOutputStream, @unchecked Sendable {
      var text = ""
      func write(_ string: String) { text += string }
    }
    let lines = Lines()
    let kept = Box<any Subscription>()
    Just(1).print("p", to: lines).subscribe(
      Probe<Int, Never>(onSubscription: { subscription in
        kept.set(subscription)
        subscription.request(.unlimited)
      }))
    let subscription = try #require(kept.value)
    subscription.cancel()
    subscription.cancel()
    #expect(lines.text.hasSuffix("p: receive finished\np: receive cancel\np: receive cancel\n"))
  }

  @Test("print from many threads to one stream loses and interleaves no line")
  func printConcurrently() async throws {
    final class Lines: TextOutputStream, @unchecked Sendable {
      // Safety: `print` writes to its stream from one thread at a time.
      var lines: [String] = []
      func write(_ string: String) { lines.append(string) }
    }
    let stream = Lines()
    let source = TestPublisher<Int, Never>()
    let recorder = RecordingSubscriber<Int, Never>(initialDemand: .none)
    source.print("p", to: stream).subscribe(recorder)
    let subscription = Shared(try #require(recorder.subscription))
    await concurrently(400) { _ in subscription.value.request(.max(1)) }  // hooks on many threads
    // Each line arrives as `Swift.print(_:to:)` writes it: "", the text, "\n", never interleaved.
    let writes = stream.lines
    #expect(writes.count % 3 == 0)
    let lines = stride(from: 0, to: writes.count, by: 3).map { index in
      #expect(writes[index] == "" && writes[index + 2] == "\n")
      return writes[index + 1]
    }
    #expect(lines.filter { $0 == "p: request max: (1)" }.count == 400)
    #expect(try #require(source.subscriptions.first).requests.count == 400)
    recorder.cancel()
  }

  @Test("encode and decode round-trip through JSON")
  func coding() throws {
    struct Point: Codable, Equatable {
      let x: Int
      let y: Int
    }
    var decoded: [Point] = []
    _ = [Point(x: 1, y: 2)].publisher.encode(encoder: JSONEncoder())
      .decode(type: Point.self, decoder: JSONDecoder())
      .sink(receiveCompletion: { _ in }, receiveValue: { decoded.append($0) })
    #expect(decoded == [Point(x: 1, y: 2)])
  }

  @Test("subscriptions carry Combine's descriptions")
  func descriptions() throws {
    let cases: [(String, (TestPublisher<Int, TestError>) -> any Publisher)] = [
      ("Map", { $0.map { $0 } }), ("TryMap", { $0.tryMap { $0 } }),
      ("ValueForKey", { $0.map(\.self) }), ("MapError", { $0.mapError { $0 } }),
      ("Scan", { $0.scan(0, +) }), ("TryScan", { $0.tryScan(0, +) }),
      ("Filter", { $0.filter { _ in true } }), ("TryFilter", { $0.tryFilter { _ in true } }),
      ("CompactMap", { $0.compactMap { $0 } }), ("RemoveDuplicates", { $0.removeDuplicates() }),
      ("ReplaceEmpty", { $0.replaceEmpty(with: 0) }),
      ("ReplaceError", { $0.replaceError(with: 0) }), ("Collect", { $0.collect() }),
      ("CollectByCount", { $0.collect(2) }), ("IgnoreOutput", { $0.ignoreOutput() }),
      ("Reduce", { $0.reduce(0, +) }), ("Count", { $0.count() }), ("Comparison", { $0.max() }),
      ("Contains", { $0.contains(1) }), ("AllSatisfy", { $0.allSatisfy { _ in true } }),
      ("First", { $0.first() }), ("Last", { $0.last() }), ("Output", { $0.prefix(1) }),
      ("PrefixWhile", { $0.prefix { _ in true } }), ("Drop", { $0.dropFirst() }),
      ("DropWhile", { $0.drop { _ in true } }), ("Retry", { $0.retry(1) }),
      ("Catch", { $0.catch { _ in Just(0) } }), ("HandleEvents", { $0.handleEvents() }),
      ("Print", { $0.print(to: NullStream()) }), ("AssertNoFailure", { $0.assertNoFailure() }),
    ]
    for (name, apply) in cases {
      let source = TestPublisher<Int, TestError>()
      let recorder = apply(source).subscribeRecording()
      #expect(source.subscriberDescriptions == [name])
      recorder.cancel()
    }
  }
}

extension Publisher {
  /// Subscribes a sink-like recorder of any output (for description checks); cancel it when done.
  func subscribeRecording() -> any Cancellable {
    let recorder = RecordingSubscriber<Output, Failure>(initialDemand: .none)
    subscribe(recorder)
    return recorder
  }
}

/// A publisher that hands its subscriber a do-nothing subscription and keeps a way to send it
/// values directly (ignoring cancellation, like an upstream with a value already in flight), so
/// a test can deliver values from one thread while another cancels.
final class CapturingPublisher<Output>: Publisher, @unchecked Sendable {
  // Safety: `subscriber` is lock-protected (Box).
  typealias Failure = Never
  private let subscriber = Box<(Output) -> Subscribers.Demand>()

  func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Never {
    subscriber.receive(subscription: TestSubscription())
    self.subscriber.set { subscriber.receive($0) }
  }

  /// Sends `value` to the last subscriber, whatever its state.
  var send: (Output) -> Subscribers.Demand {
    let subscriber = self.subscriber.value
    return { value in subscriber?(value) ?? .none }
  }
}
